"""NetBox-style export (CSV and JSON, NetBox field names) and import (missing prefixes only)."""

from __future__ import annotations

import csv
import io

from tests.integration.ipam.helpers import created, error_of, prefix, subnet


async def test_export_uses_netbox_field_names(operator, viewer):
    t = created(await operator.post("/tenants", json={"name": "acme"}))
    await prefix(operator, "10.20.0.0/16", description="site, A")
    await prefix(operator, "10.30.0.0/16", tenant_id=t["id"])
    await prefix(operator, "2001:db8::/32")
    rows = (await viewer.get("/netbox/prefixes")).json()
    assert [r["prefix"] for r in rows] == ["10.20.0.0/16", "10.30.0.0/16", "2001:db8::/32"]
    assert rows[0] == {"prefix": "10.20.0.0/16", "status": "active", "tenant": "default",
                       "vrf": None, "is_pool": False, "mark_utilized": False,
                       "description": "site, A", "comments": "", "tags": []}
    response = await viewer.get("/netbox/prefixes", params={"format": "csv"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    parsed = list(csv.DictReader(io.StringIO(response.text)))
    assert list(parsed[0]) == ["prefix", "status", "tenant", "vrf", "is_pool", "mark_utilized",
                               "description", "comments", "tags"]
    assert parsed[0]["description"] == "site, A" and parsed[1]["tenant"] == "acme"
    only = (await viewer.get("/netbox/prefixes", params={"tenant_id": t["id"]})).json()
    assert [r["prefix"] for r in only] == ["10.30.0.0/16"]
    error_of(await viewer.get("/netbox/prefixes", params={"format": "xml"}), 400, "bad_request")


async def test_import_creates_only_missing_prefixes(operator, viewer, db):
    created(await operator.post("/tenants", json={"name": "acme"}))
    existing = await prefix(operator, "10.20.0.0/16")
    s = await subnet(operator, "10.20.1.0/24")
    created(await operator.post(f"/subnets/{s['id']}/reservations", json={
        "mac": "02:00:00:00:00:01"}))
    text = (
        "\ufeffPrefix,Status,Tenant,VRF,Description,Site\n"
        "10.20.0.0/16,active,,,already here,\n"
        "10.21.0.0/16,active,,,new one,dc1\n"
        "10.22.0.0/16,reserved,acme,,for acme,\n"
        "10.23.0.0/16,active,nobody,,unknown tenant,\n"
        "10.21.0.0/16,active,,,twice,\n"
    )

    async def counts(conn):
        return await conn.fetchrow(
            """SELECT (SELECT count(*) FROM pools) AS pools,
                      (SELECT count(*) FROM reservations) AS reservations,
                      (SELECT count(*) FROM leases) AS leases""")

    before = dict(await db.run(counts))
    report = (await operator.post("/netbox/prefixes/import", json={"csv": text})).json()
    assert [p["cidr"] for p in report["created"]] == ["10.21.0.0/16", "10.22.0.0/16"]
    assert report["created_count"] == 2 and report["skipped_count"] == 3
    reasons = {(x["prefix"], x["reason"]) for x in report["skipped"]}
    assert reasons == {("10.20.0.0/16", "already exists"),
                       ("10.23.0.0/16", "tenant 'nobody' does not exist"),
                       ("10.21.0.0/16", "repeated in this import")}
    assert next(x for x in report["skipped"] if x["reason"] == "already exists")["id"] == (
        existing["id"])
    assert dict(await db.run(counts)) == before  # pools, reservations, leases untouched
    # Importing the same file again creates nothing.
    again = (await operator.post("/netbox/prefixes/import", json={"csv": text})).json()
    assert again["created_count"] == 0
    # JSON in NetBox's API shape (nested tenant objects) works too.
    report = (await operator.post("/netbox/prefixes/import", json={"prefixes": [
        {"prefix": "10.24.0.0/16", "tenant": {"name": "acme", "slug": "acme"},
         "status": {"value": "active"}, "description": "from the API"},
        {"prefix": "10.20.0.0/16"}]})).json()
    assert report["created"][0]["description"] == "from the API"
    assert report["skipped"][0]["reason"] == "already exists"
    # A bad row refuses the whole import and names the row.
    message = error_of(await operator.post("/netbox/prefixes/import", json={
        "csv": "prefix\n10.25.0.0/16\n10.26.0.1/16\n"}), 422, "validation_error")
    assert message.startswith("csv[1].prefix")
    assert (await viewer.get("/prefixes", params={"cidr": "10.25.0.0/16"})).json()["items"] == []
    error_of(await operator.post("/netbox/prefixes/import", json={"csv": "name\nx\n"}),
             422, "validation_error")
    error_of(await operator.post("/netbox/prefixes/import", json={}), 422, "validation_error")
    error_of(await viewer.post("/netbox/prefixes/import", json={"csv": "prefix\n"}),
             403, "forbidden")
