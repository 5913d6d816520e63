"""docs/api-ipam.md, "Tenants on create", to the letter: every create of the live OpenAPI document accepts an
optional tenant_id — stored, returned, filterable — and left out, the default tenant (a child
keeps its parent's). The one exception is a tenant itself (a tenant is not inside a tenant).
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.ipam.helpers import created, error_of

DEFAULT_TENANT = "00000000-0000-7000-8000-000000000001"
UNKNOWN_TENANT = "018f2c1e-0000-7000-8000-00000000dead"
NOT_IN_A_TENANT = {"/tenants"}


def _creates(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every create (a POST answering 201) → its body schema."""
    found = {}
    for path, item in doc["paths"].items():
        op = item.get("post")
        if op is None or "201" not in op["responses"]:
            continue
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        while "$ref" in schema:
            schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        found[path] = schema
    return found


async def _parents(admin: httpx.AsyncClient, tenant: str) -> dict[str, str]:
    """A subnet and a DNS zone of ``tenant``: the parents of the nested creates."""
    prefix = created(await admin.post("/prefixes", json={"cidr": "10.77.0.0/16",
                                                          "tenant_id": tenant}))
    subnet = created(await admin.post("/subnets", json={
        "prefix_id": prefix["id"], "cidr": "10.77.1.0/24", "gateway": "10.77.1.1"}))
    server = created(await admin.post("/dns-servers", json={"name": "parent",
                                                             "adapter": "embedded"}))
    zone = created(await admin.post("/dns-zones", json={
        "name": "parent.test", "server_id": server["id"], "tenant_id": tenant}))
    return {"subnet_id": subnet["id"], "zone_id": zone["id"], "server_id": server["id"]}


def _bodies(n: int, parents: dict[str, str]) -> dict[str, dict[str, Any]]:
    """A valid body for each create (the n-th of its kind: names and addresses differ)."""
    return {
        "/prefixes": {"cidr": f"10.{80 + n}.0.0/16"},
        "/subnets": None,  # made below: it needs a prefix of the same tenant
        "/subnets/{subnet_id}/pools": {"name": f"p{n}", "start_ip": f"10.77.1.{100 + 10 * n}",
                                       "end_ip": f"10.77.1.{105 + 10 * n}"},
        "/subnets/{subnet_id}/excludes": {"start_ip": f"10.77.1.{10 + n}",
                                          "end_ip": f"10.77.1.{10 + n}"},
        "/subnets/{subnet_id}/reservations": {"ip": f"10.77.1.{30 + n}",
                                              "mac": f"02:00:00:00:00:{30 + n:02x}"},
        "/subnets/{subnet_id}/assignments": {"ip": f"10.77.1.{50 + n}", "hostname": f"h{n}"},
        "/subnets/{subnet_id}/options": {"code": (15, 6, 252)[n], "payload": (
            {"addresses": ["10.77.1.53"]} if n == 1 else {"value": "lan.test"})},
        "/client-classes": {"name": f"c{n}", "match": "vendor_class", "value": f"v{n}"},
        "/shared-networks": {"name": f"g{n}"},
        "/tokens": {"name": f"t{n}", "role": "viewer"},
        "/webhooks": {"name": f"w{n}", "url": "http://localhost:9/hook",
                      "secret_ref": "env:IPAMD_TEST_TENANT_HOOK"},
        "/settings/alert-destinations": {"name": f"a{n}", "kind": "webhook",
                                         "settings": {"url": "http://localhost:9/alert"}},
        "/dns-servers": {"name": f"s{n}", "adapter": "embedded"},
        "/dns-zones": {"name": f"z{n}.test", "server_id": parents["server_id"]},
        "/dns-zones/{zone_id}/records": {"name": f"r{n}", "type": "A", "value": "10.77.1.9"},
    }


async def _subnet_body(admin: httpx.AsyncClient, n: int, tenant: str | None) -> dict[str, Any]:
    prefix = created(await admin.post("/prefixes", json={
        "cidr": f"10.{90 + n}.0.0/16", **({"tenant_id": tenant} if tenant else {})}))
    return {"prefix_id": prefix["id"], "cidr": f"10.{90 + n}.1.0/24"}


async def test_every_create_takes_a_tenant_id_and_every_list_filters_by_it(
    appliance, admin
) -> None:
    doc = (await admin.get("/openapi.json")).json()
    creates = _creates(doc)
    # The document itself says so, for creates this test has no body for too.
    missing = [path for path, schema in creates.items()
               if "tenant_id" not in schema.get("properties", {}) and path not in NOT_IN_A_TENANT]
    assert not missing, f"creates without tenant_id: {missing}"

    tenant = created(await admin.post("/tenants", json={"name": "acme"}))["id"]
    parents = await _parents(admin, tenant)
    nested = {"/subnets/{subnet_id}", "/dns-zones/{zone_id}"}
    made: dict[str, dict[str, Any]] = {}
    for path in sorted(set(creates) - NOT_IN_A_TENANT):
        if path not in _bodies(0, parents):
            continue  # a create newer than this test: the schema check above covers it
        url = path.format(**parents)
        child = any(path.startswith(parent) for parent in nested)
        for n, given in enumerate((tenant, None, UNKNOWN_TENANT)):
            body = _bodies(n, parents)[path] or await _subnet_body(
                admin, n, None if given == UNKNOWN_TENANT else given)
            if given is not None:
                body = {**body, "tenant_id": given}
            reply = await admin.post(url, json=body)
            if given == UNKNOWN_TENANT:
                message = error_of(reply, 422, "validation_error")
                assert message.startswith("tenant_id"), (path, message)
                continue
            item = created(reply)
            # Left out: the default tenant, or a child's parent's (its subnet's, its zone's).
            expected = tenant if given or child else DEFAULT_TENANT
            if path == "/subnets" and not given:
                expected = DEFAULT_TENANT  # its prefix was made in the default tenant
            assert item["tenant_id"] == expected, (path, given, item)
            if given:
                made[path] = item

    # A child in another tenant than its parent's is refused.
    other = created(await admin.post("/tenants", json={"name": "other"}))["id"]
    reply = await admin.post(f"/dns-zones/{parents['zone_id']}/records", json={
        "name": "x", "type": "A", "value": "10.77.1.8", "tenant_id": other})
    assert error_of(reply, 422, "validation_error").startswith("tenant_id")

    # Every list with a tenant_id filter keeps to it.
    lists = [path for path, item in doc["paths"].items() if "get" in item and any(
        p["name"] == "tenant_id" and p["in"] == "query"
        for p in item["get"].get("parameters", []))]
    for must in ("/webhooks", "/tokens", "/dns-servers", "/dns-zones",
                 "/settings/alert-destinations", "/prefixes", "/subnets", "/client-classes",
                 "/shared-networks"):
        assert must in lists, must
    for path in lists:
        if "{" in path or path not in made:
            continue
        mine = (await admin.get(path, params={"tenant_id": tenant, "limit": 1000})).json()
        ids = [item["id"] for item in mine["items"]]
        assert made[path]["id"] in ids, path
        assert {item["tenant_id"] for item in mine["items"]} == {tenant}, path
        default = (await admin.get(path, params={"tenant_id": DEFAULT_TENANT,
                                                 "limit": 1000})).json()
        assert made[path]["id"] not in [item["id"] for item in default["items"]], path
        assert all(item["tenant_id"] == DEFAULT_TENANT for item in default["items"]), path
    assert set(made) >= {"/webhooks", "/tokens", "/dns-servers", "/dns-zones",
                         "/settings/alert-destinations", "/dns-zones/{zone_id}/records"}

    # A tenant still holding objects cannot be deleted; the message names them.
    message = error_of(await admin.delete(f"/tenants/{tenant}"), 409, "conflict")
    assert "webhook" in message and "DNS server" in message and "token" in message
