"""GET /leases?sort=, GET /leases/count, POST /leases/release, GET /audit?sort= and GET
/audit/count (docs/operations.md: tables that sort, count and act in bulk)."""

from __future__ import annotations

import base64

from tests.integration.ipam.helpers import insert_lease, subnet

ROWS = [  # ip, state, mac, hostname
    ("10.20.1.30", "active", "02:00:00:00:00:03", "Charlie"),
    ("10.20.1.4", "active", "02:00:00:00:00:01", "alpha"),
    ("10.20.1.200", "offered", None, None),
    ("10.20.1.17", "released", "02:00:00:00:00:02", "bravo"),
    ("10.20.1.9", "active", "02:00:00:00:00:04", "delta"),
]


async def _all(client, **params) -> list[dict]:
    """Every page, two rows at a time: the cursor must carry the sort."""
    out: list[dict] = []
    cursor = None
    for _ in range(20):
        reply = await client.get("/leases", params={**params, "limit": 2,
                                                    **({"cursor": cursor} if cursor else {})})
        assert reply.status_code == 200, reply.text
        page = reply.json()
        out += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("paging did not end")


async def _seed(operator, db) -> dict:
    s = await subnet(operator)
    for ip, state, mac, host in ROWS:
        await db.run(insert_lease, s["id"], ip, state, mac, None, host)
    return s


async def test_sort_every_key_both_ways_across_pages(operator, viewer, db):
    await _seed(operator, db)
    ips = [r["ip"] for r in await _all(viewer, sort="ip")]
    assert ips == ["10.20.1.4", "10.20.1.9", "10.20.1.17", "10.20.1.30", "10.20.1.200"]
    assert [r["ip"] for r in await _all(viewer, sort="-ip")] == ips[::-1]
    hosts = [r["hostname"] for r in await _all(viewer, sort="hostname")]
    assert hosts == [None, "alpha", "bravo", "Charlie", "delta"]  # case ignored, none first
    macs = [r["mac"] for r in await _all(viewer, sort="-mac")]
    assert macs[0] == "02:00:00:00:00:04" and macs[-1] is None
    states = [r["state"] for r in await _all(viewer, sort="state", state="active")]
    assert states == ["active"] * 3
    expiring = await _all(viewer, sort="expires_at")
    assert [r["expires_at"] for r in expiring] == sorted(r["expires_at"] for r in expiring)
    assert len(await _all(viewer, sort="-expires_at")) == 5

    bad = await viewer.get("/leases", params={"sort": "lease_id; DROP TABLE leases"})
    assert bad.status_code == 400
    forged = base64.urlsafe_b64encode(b'["not an ip", "018f2c1e-0000-7000-8000-00000000dead"]')
    reply = await viewer.get("/leases", params={"sort": "ip", "cursor": forged.decode()})
    assert reply.status_code == 400 and "cursor" in reply.json()["error"]["message"]


async def test_count_follows_the_filters(operator, viewer, db):
    s = await _seed(operator, db)
    assert (await viewer.get("/leases/count")).json() == {"count": 5}
    assert (await viewer.get("/leases/count", params={"state": "active"})).json() == {"count": 3}
    assert (await viewer.get("/leases/count", params={"subnet_id": s["id"],
                                                      "hostname": "CHARLIE"})).json() == {
        "count": 1}
    assert (await viewer.get("/leases/count", params={"cursor": "x"})).status_code == 400


async def test_release_many(operator, viewer, db):
    await _seed(operator, db)
    rows = {r["ip"]: r for r in await _all(viewer)}
    live = [rows[ip]["lease_id"] for ip in ("10.20.1.4", "10.20.1.9", "10.20.1.30")]
    gone = rows["10.20.1.17"]["lease_id"]
    unknown = "018f2c1e-0000-7000-8000-00000000dead"
    assert (await viewer.post("/leases/release", json={"lease_ids": live})).status_code == 403
    assert (await operator.post("/leases/release", json={"lease_ids": []})).status_code == 422
    reply = await operator.post("/leases/release", json={"lease_ids": [*live, gone, unknown]})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert sorted(r["lease_id"] for r in body["released"]) == sorted(live)
    assert all(r["state"] == "released" for r in body["released"])
    reasons = {s["lease_id"]: s["reason"] for s in body["skipped"]}
    assert reasons == {gone: f"lease {gone} is already released",
                       unknown: f"lease {unknown} does not exist"}
    assert (await viewer.get("/leases/count", params={"state": "active"})).json()["count"] == 0
    audit = (await viewer.get("/audit", params={"object_type": "lease",
                                                "action": "release"})).json()["items"]
    assert sorted(a["object_id"] for a in audit) == sorted(live)


async def _audit_all(client, **params) -> list[dict]:
    out: list[dict] = []
    cursor = None
    for _ in range(40):
        reply = await client.get("/audit", params={**params, "limit": 3,
                                                   **({"cursor": cursor} if cursor else {})})
        assert reply.status_code == 200, reply.text
        out += reply.json()["items"]
        cursor = reply.json()["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("paging did not end")


async def test_audit_sort_and_count(admin, operator, viewer):
    await subnet(operator)  # a prefix and a subnet, by the operator
    await admin.post("/tenants", json={"name": "acme"})
    await admin.post("/client-classes", json={"name": "phones", "match": "vendor_class",
                                              "value": "polycom"})
    everything = await _audit_all(viewer)
    total = (await viewer.get("/audit/count")).json()["count"]
    assert total == len(everything) >= 4
    types = [a["object_type"] for a in await _audit_all(viewer, sort="object_type")]
    assert types == sorted(types) and len(types) == total
    assert [a["object_type"] for a in await _audit_all(viewer, sort="-object_type")] == \
        sorted(types, reverse=True)
    times = [a["at"] for a in await _audit_all(viewer, sort="at")]
    assert times == sorted(times) and len(times) == total
    assert (await viewer.get("/audit/count", params={"object_type": "subnet"})).json() == {
        "count": 1}
    assert (await viewer.get("/audit", params={"sort": "before"})).status_code == 400
