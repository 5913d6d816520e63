"""Shared networks (docs/api-ipam.md, "Shared networks"): the resource, a subnet's
shared_network_id and their rules, tenants, roles and the audit trail."""

from __future__ import annotations

from typing import Any

import httpx

from ipamd.dhcp import plan_loader
from tests.integration.ipam.helpers import created, error_of, subnet

UNKNOWN = "0192f000-0000-7000-8000-00000000dead"


async def _group(client: httpx.AsyncClient, name: str = "vlan-10",
                 **extra: Any) -> dict[str, Any]:
    return created(await client.post("/shared-networks", json={"name": name, **extra}))


async def _join(client: httpx.AsyncClient, subnet_id: str,
                group_id: str | None) -> httpx.Response:
    return await client.patch(f"/subnets/{subnet_id}", json={"shared_network_id": group_id})


async def test_create_join_list_patch_and_delete(operator, viewer, db):
    group = await _group(operator, description="floor 3")
    assert (group["name"], group["description"], group["subnets"]) == ("vlan-10", "floor 3", [])
    wide = await subnet(operator, "10.20.8.0/22", gateway="10.20.8.1", name="overflow")
    assert wide["shared_network_id"] is None
    first = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1",
                         shared_network_id=group["id"])
    assert first["shared_network_id"] == group["id"]
    version = await db.run(plan_loader.version)
    joined = await _join(operator, wide["id"], group["id"])
    assert joined.status_code == 200 and joined.json()["shared_network_id"] == group["id"]
    assert await db.run(plan_loader.version) > version  # the DHCP servers reload the plan

    # The members by network address: the order the server tries after the relay's subnet.
    got = (await viewer.get(f"/shared-networks/{group['id']}")).json()
    assert got["subnets"] == [{"id": first["id"], "cidr": "10.20.1.0/24", "name": ""},
                              {"id": wide["id"], "cidr": "10.20.8.0/22", "name": "overflow"}]
    other = await _group(operator, "vlan-20")
    page = (await viewer.get("/shared-networks", params={"limit": 1})).json()
    assert [g["id"] for g in page["items"]] == [group["id"]] and page["next_cursor"]
    rest = (await viewer.get("/shared-networks", params={"cursor": page["next_cursor"]})).json()
    assert [g["id"] for g in rest["items"]] == [other["id"]] and rest["next_cursor"] is None
    named = (await viewer.get("/shared-networks", params={"name": "vlan-20"})).json()["items"]
    assert [g["id"] for g in named] == [other["id"]]

    renamed = await operator.patch(f"/shared-networks/{group['id']}",
                                   json={"name": "vlan-10-floor-3", "description": ""})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "vlan-10-floor-3" and len(renamed.json()["subnets"]) == 2

    # A group with members is not deleted (409 naming how many), then it is.
    message = error_of(await operator.delete(f"/shared-networks/{group['id']}"), 409, "conflict")
    assert "still has 2 subnets" in message and "shared_network_id to null" in message
    for member in (first, wide):
        left = await _join(operator, member["id"], None)
        assert left.status_code == 200 and left.json()["shared_network_id"] is None
    assert (await operator.delete(f"/shared-networks/{group['id']}")).status_code == 204
    error_of(await viewer.get(f"/shared-networks/{group['id']}"), 404, "not_found")


async def test_refusals_name_the_field(operator):
    group = await _group(operator)
    assert error_of(await operator.post("/shared-networks", json={"name": "vlan-10"}),
                    409, "conflict").startswith("name")
    assert error_of(await operator.post("/shared-networks", json={}),
                    422, "validation_error").startswith("name")
    assert error_of(await operator.post("/shared-networks", json={"name": "x", "vlan": 10}),
                    422, "validation_error").startswith("vlan")
    other = await _group(operator, "vlan-20")
    assert error_of(await operator.patch(f"/shared-networks/{other['id']}",
                                         json={"name": "vlan-10"}), 409, "conflict"
                    ).startswith("name")
    for method in ("GET", "PATCH", "DELETE"):
        reply = await operator.request(method, f"/shared-networks/{UNKNOWN}",
                                       json={} if method == "PATCH" else None)
        error_of(reply, 404, "not_found")

    # A subnet joins a group that exists, of its tenant, and only an IPv4 subnet does.
    v4 = await subnet(operator, "10.20.1.0/24")
    message = error_of(await _join(operator, v4["id"], UNKNOWN), 422, "validation_error")
    assert message.startswith("shared_network_id") and "no shared network" in message
    message = error_of(await operator.post("/subnets", json={
        "prefix_id": v4["prefix_id"], "cidr": "10.20.2.0/24", "shared_network_id": "x"}),
        422, "validation_error")
    assert message.startswith("shared_network_id")
    v6 = await subnet(operator, "2001:db8:77:1::/64", parent="2001:db8:77::/48")
    message = error_of(await _join(operator, v6["id"], group["id"]), 422, "validation_error")
    assert message.startswith("shared_network_id") and "IPv4 subnets only" in message
    acme = created(await operator.post("/tenants", json={"name": "acme"}))
    theirs = await _group(operator, "acme-vlan", tenant_id=acme["id"])
    assert theirs["tenant_id"] == acme["id"]
    message = error_of(await _join(operator, v4["id"], theirs["id"]), 422, "validation_error")
    assert message.startswith("shared_network_id") and acme["id"] in message
    # A tenant holding a shared network is not deleted.
    message = error_of(await operator.delete(f"/tenants/{acme['id']}"), 409, "conflict")
    assert "1 shared network" in message


async def test_roles_and_audit(operator, viewer, admin):
    assert error_of(await viewer.post("/shared-networks", json={"name": "v"}),
                    403, "forbidden")
    group = await _group(operator)
    error_of(await viewer.patch(f"/shared-networks/{group['id']}", json={"name": "w"}),
             403, "forbidden")
    error_of(await viewer.delete(f"/shared-networks/{group['id']}"), 403, "forbidden")
    assert (await viewer.get("/shared-networks")).status_code == 200
    assert (await operator.patch(f"/shared-networks/{group['id']}",
                                 json={"description": "d"})).status_code == 200
    assert (await operator.delete(f"/shared-networks/{group['id']}")).status_code == 204
    trail = (await admin.get("/audit", params={"object_id": group["id"]})).json()["items"]
    assert [(a["object_type"], a["action"]) for a in reversed(trail)] == [
        ("shared_network", "create"), ("shared_network", "update"),
        ("shared_network", "delete")]
    update = next(a for a in trail if a["action"] == "update")
    assert (update["before"]["description"], update["after"]["description"]) == ("", "d")


async def test_idempotency_key_replays_the_create(operator):
    key = {"Idempotency-Key": "group-1"}
    first = await operator.post("/shared-networks", json={"name": "g"}, headers=key)
    again = await operator.post("/shared-networks", json={"name": "g"}, headers=key)
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    error_of(await operator.post("/shared-networks", json={"name": "h"}, headers=key),
             409, "conflict")


async def test_effective_options_of_a_member_are_its_own(operator, viewer):
    group = await _group(operator)
    await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1", shared_network_id=group["id"])
    wide = await subnet(operator, "10.20.8.0/22", gateway="10.20.8.1",
                        shared_network_id=group["id"])
    got = (await viewer.get(f"/subnets/{wide['id']}/effective-options",
                            params={"mac": "02:00:00:00:00:01"})).json()
    by_code = {o["code"]: o for o in got["options"]}
    assert by_code[1]["hex"] == "ff:ff:fc:00" and by_code[3]["hex"] == "0a:14:08:01"
    assert {by_code[1]["scope_id"], by_code[3]["scope_id"]} == {wide["id"]}
