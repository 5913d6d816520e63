"""Create, list (shape, paging, filters), get, PATCH (only given fields) and delete per resource."""

from __future__ import annotations

import uuid

from tests.integration.ipam.helpers import created, error_of, insert_lease, prefix, subnet

MISSING = "01a00000-0000-7000-8000-00000000dead"


async def _walk(client, path: str, limit: int, **params) -> list[dict]:
    """Every item of a list, page by page; checks the list shape on the way."""
    items, cursor, pages = [], None, 0
    while pages < 50:
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        page = (await client.get(path, params=query)).json()
        assert set(page) == {"items", "next_cursor"}, page
        assert len(page["items"]) <= limit
        items += page["items"]
        cursor, pages = page["next_cursor"], pages + 1
        if cursor is None:
            return items
    raise AssertionError("paging did not end")


async def test_tenants(operator, viewer):
    default = (await viewer.get("/tenants", params={"name": "default"})).json()["items"]
    assert len(default) == 1 and default[0]["default"] is True
    t = created(await operator.post("/tenants", json={"name": "acme", "description": "x"}))
    assert (await viewer.get(f"/tenants/{t['id']}")).json() == t
    changed = (await operator.patch(f"/tenants/{t['id']}", json={"description": "y"})).json()
    assert changed["name"] == "acme" and changed["description"] == "y"
    error_of(await operator.post("/tenants", json={"name": "acme"}), 409, "conflict")
    assert (await operator.delete(f"/tenants/{t['id']}")).status_code == 204
    error_of(await viewer.get(f"/tenants/{t['id']}"), 404, "not_found")
    error_of(await operator.patch(f"/tenants/{MISSING}", json={"name": "z"}), 404, "not_found")


async def test_prefix_lists_filters_and_paging(operator, viewer):
    made = [await prefix(operator, f"10.{i}.0.0/16") for i in range(40, 45)]
    await prefix(operator, "10.40.128.0/17")
    await prefix(operator, "2001:db8::/32")
    every = await _walk(viewer, "/prefixes", 2)
    assert [p["id"] for p in every] == sorted(p["id"] for p in every)  # creation order
    assert {p["cidr"] for p in made} <= {p["cidr"] for p in every} and len(every) == 7
    contains = (await viewer.get("/prefixes", params={"contains": "10.40.200.1"})).json()
    assert {p["cidr"] for p in contains["items"]} == {"10.40.0.0/16", "10.40.128.0/17"}
    within = (await viewer.get("/prefixes", params={"within": "10.40.0.0/16"})).json()
    assert {p["cidr"] for p in within["items"]} == {"10.40.0.0/16", "10.40.128.0/17"}
    exact = (await viewer.get("/prefixes", params={"cidr": "2001:db8::/32"})).json()["items"]
    assert exact[0]["family"] == 6
    error_of(await viewer.get("/prefixes", params={"contains": "nope"}), 400, "bad_request")
    error_of(await viewer.get("/prefixes", params={"limit": 0}), 400, "bad_request")
    error_of(await viewer.get("/prefixes", params={"cursor": "garbage"}), 400, "bad_request")


async def test_prefix_patch_and_delete(operator):
    p = await prefix(operator, "10.50.0.0/16", description="old")
    s = await subnet(operator, "10.50.7.0/24", parent="10.50.0.0/16")
    kept = (await operator.patch(f"/prefixes/{p['id']}", json={"description": "new"})).json()
    assert kept["cidr"] == "10.50.0.0/16" and kept["description"] == "new"
    assert "10.50.7.0/24" in error_of(await operator.patch(f"/prefixes/{p['id']}", json={
        "cidr": "10.50.0.0/22"}), 409, "conflict")
    grown = (await operator.patch(f"/prefixes/{p['id']}", json={"cidr": "10.51.0.0/15"}))
    assert grown.status_code == 422  # host bits set
    assert (await operator.patch(f"/prefixes/{p['id']}", json={"cidr": "10.50.0.0/20"})).json()[
        "cidr"] == "10.50.0.0/20"
    error_of(await operator.patch(f"/prefixes/{p['id']}", json={"cidr": None}),
             422, "validation_error")
    assert (await operator.delete(f"/subnets/{s['id']}")).status_code == 204
    assert (await operator.delete(f"/prefixes/{p['id']}")).status_code == 204


async def test_subnet_patch_only_changes_given_fields(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1", name="lan",
                     lease_time_seconds=3600)
    after = (await operator.patch(f"/subnets/{s['id']}", json={"name": "office"})).json()
    assert after["gateway"] == "10.20.1.1" and after["lease_time_seconds"] == 3600
    assert after["name"] == "office" and after["updated_at"] > s["updated_at"]
    cleared = (await operator.patch(f"/subnets/{s['id']}", json={"gateway": None})).json()
    assert cleared["gateway"] is None and cleared["name"] == "office"
    # The resulting object is validated like a create.
    error_of(await operator.patch(f"/subnets/{s['id']}", json={"gateway": "10.20.2.1"}),
             422, "validation_error")
    error_of(await operator.patch(f"/subnets/{s['id']}", json={"ddns_adapter": "powerdns_http",
                                                              "ddns_zone": "x.example"}),
             422, "validation_error")
    error_of(await operator.patch(f"/subnets/{s['id']}", json={"tenant_id": None}),
             422, "validation_error")
    created(await operator.post(f"/subnets/{s['id']}/assignments", json={
        "ip": "10.20.1.200", "hostname": "printer"}))
    assert "assignment 10.20.1.200" in error_of(await operator.patch(
        f"/subnets/{s['id']}", json={"cidr": "10.20.1.0/25"}), 409, "conflict")
    wider = (await operator.patch(f"/subnets/{s['id']}", json={"cidr": "10.20.0.0/23"})).json()
    assert wider["cidr"] == "10.20.0.0/23"
    listed = (await viewer.get("/subnets", params={"contains": "10.20.0.9"})).json()["items"]
    assert [x["id"] for x in listed] == [s["id"]]
    off = (await viewer.get("/subnets", params={"dhcp_enabled": "false"})).json()["items"]
    assert off == []


async def test_children_crud(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1")
    sid = s["id"]
    pool = created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "10.20.1.100", "end_ip": "10.20.1.149"}))
    moved = (await operator.patch(f"/pools/{pool['id']}", json={"end_ip": "10.20.1.199"})).json()
    assert moved["start_ip"] == "10.20.1.100" and moved["size"] == 100
    error_of(await operator.patch(f"/pools/{pool['id']}", json={"start_ip": "10.20.1.250"}),
             422, "validation_error")
    exclude = created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.10", "end_ip": "10.20.1.19"}))
    assert (await operator.patch(f"/excludes/{exclude['id']}", json={
        "end_ip": "10.20.1.12"})).json()["size"] == 3
    r = created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.120", "mac": "02:00:00:00:01:20", "duid": "00:03:00:01:02:00:00:00:01:20"}))
    assert (await operator.patch(f"/reservations/{r['id']}", json={"mac": None})).json()[
        "mac"] is None
    assert error_of(await operator.patch(f"/reservations/{r['id']}", json={"duid": None}),
                    422, "validation_error").startswith("mac")
    assert (await operator.patch(f"/reservations/{r['id']}", json={
        "hostname": "cam-1"})).json()["duid"] == "00:03:00:01:02:00:00:00:01:20"
    a = created(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "10.20.1.60", "hostname": "nas"}))
    assert "pool" in error_of(await operator.patch(f"/assignments/{a['id']}", json={
        "ip": "10.20.1.150"}), 409, "conflict")
    o = created(await operator.post(f"/subnets/{sid}/options", json={
        "code": 26, "payload": {"value": 1400}}))
    assert (await operator.patch(f"/options/{o['id']}", json={
        "payload": {"value": 9000}})).json()["payload"] == {"value": 9000}
    error_of(await operator.patch(f"/options/{o['id']}", json={"code": 6}),
             422, "validation_error")
    for path, item in (("pools", pool), ("excludes", exclude), ("reservations", r),
                       ("assignments", a), ("options", o)):
        listed = (await viewer.get(f"/subnets/{sid}/{path}")).json()
        assert [x["id"] for x in listed["items"]] == [item["id"]], path
        assert listed["next_cursor"] is None
        error_of(await viewer.get(f"/subnets/{MISSING}/{path}"), 404, "not_found")
        single = path.rstrip("s")
        assert (await viewer.get(f"/{path}/{item['id']}")).json()["id"] == item["id"], single
        error_of(await viewer.delete(f"/{path}/{item['id']}"), 403, "forbidden")
        assert (await operator.delete(f"/{path}/{item['id']}")).status_code == 204
        error_of(await viewer.get(f"/{path}/{item['id']}"), 404, "not_found")
    filtered = (await viewer.get(f"/subnets/{sid}/reservations",
                                 params={"mac": "02-00-00-00-01-20"})).json()
    assert filtered["items"] == []
    assert (await operator.delete(f"/subnets/{sid}")).status_code == 204


async def test_next_free_takes_the_lowest_free_address(operator, viewer, db):
    s = await subnet(operator, "10.20.1.0/28", gateway="10.20.1.1")  # hosts .1-.14
    sid = s["id"]
    created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.2", "end_ip": "10.20.1.3"}))
    created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "10.20.1.5", "end_ip": "10.20.1.8"}))
    created(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "10.20.1.4", "hostname": "fixed"}))
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.9", "active", "02:00:00:00:00:09")
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.10", "expired", "02:00:00:00:00:0a")
    assert (await viewer.get(f"/subnets/{sid}/next-free-ip")).json() == {"ip": "10.20.1.10"}
    a = created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "a"}))
    r = created(await operator.post(f"/subnets/{sid}/reservations", json={
        "mac": "02:00:00:00:00:11"}))
    assert (a["ip"], r["ip"]) == ("10.20.1.10", "10.20.1.11")
    for expected in ("10.20.1.12", "10.20.1.13", "10.20.1.14"):
        made = created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "h"}))
        assert made["ip"] == expected
    assert (await viewer.get(f"/subnets/{sid}/next-free-ip")).json() == {"ip": None}
    assert "no free address" in error_of(await operator.post(
        f"/subnets/{sid}/assignments", json={"hostname": "late"}), 409, "conflict")



async def test_reserving_a_leased_address(operator, db):
    s = await subnet(operator, "10.20.1.0/24")
    sid = s["id"]
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.100", "active", "02:00:00:00:01:00")
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.101", "active", None,
                 "0003000102000000010a")
    # The client holding the lease may get its address reserved; another client may not.
    assert "live lease" in error_of(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.100", "mac": "02:00:00:00:09:99"}), 409, "conflict")
    created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.100", "mac": "02:00:00:00:01:00"}))
    created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.101", "duid": "00:03:00:01:02:00:00:00:01:0a"}))
    # A static host or the gateway cannot take a leased address.
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.102", "offered", "02:00:00:00:01:02")
    assert "live lease" in error_of(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "10.20.1.102", "hostname": "x"}), 409, "conflict")
    assert "live lease" in error_of(await operator.patch(f"/subnets/{sid}", json={
        "gateway": "10.20.1.102"}), 409, "conflict")
    # A subnet whose leases have all ended can be deleted (ended leases are history).
    vlan = await subnet(operator, "10.20.2.0/24")
    await db.run(insert_lease, uuid.UUID(vlan["id"]), "10.20.2.5", "expired", "02:00:00:00:02:05")
    live = await db.run(insert_lease, uuid.UUID(vlan["id"]), "10.20.2.6", "active",
                        "02:00:00:00:02:06")
    assert "1 live lease" in error_of(await operator.delete(f"/subnets/{vlan['id']}"),
                                      409, "conflict")

    async def end(conn) -> None:
        await conn.execute("UPDATE leases SET state = 'released' WHERE lease_id = $1", live)

    await db.run(end)
    assert (await operator.delete(f"/subnets/{vlan['id']}")).status_code == 204


async def _whole_second(conn, prefix_id: str) -> None:
    await conn.execute("UPDATE prefixes SET created_at = '2026-01-02 03:04:05+00' WHERE id = $1",
                       uuid.UUID(prefix_id))


async def test_prefix_list_items_are_what_get_shows(operator, viewer, db):
    # The list serves renderings it keeps by row version (core/rendered.py): every item must
    # be exactly the GET of that prefix, for both families, an IPv4-mapped IPv6 prefix and a
    # time with no fraction of a second included.
    cidrs = ["10.61.0.0/16", "2001:db8:61::/48", "::ffff:10.62.0.0/112", "192.0.2.128/25"]
    text = 'q"\\ é 😀 \u2028 </script> \u00ff'  # escapes
    made = [created(await operator.post("/prefixes", json={"cidr": c, "description": text}))
            for c in cidrs]
    await db.run(_whole_second, made[0]["id"])
    listed = await _walk(viewer, "/prefixes", 3)
    assert {p["id"] for p in made} <= {item["id"] for item in listed}
    for item in listed:
        assert item == (await viewer.get(f"/prefixes/{item['id']}")).json()
    first = next(item for item in listed if item["id"] == made[0]["id"])
    assert first["created_at"] == "2026-01-02T03:04:05Z"


async def _describe(conn, prefix_id: str, text: str) -> None:
    # Another writer than this API: another node, a restore, an operator's SQL.
    await conn.execute("UPDATE prefixes SET description = $2 WHERE id = $1",
                       uuid.UUID(prefix_id), text)


async def _delete(conn, prefix_id: str) -> None:
    await conn.execute("DELETE FROM prefixes WHERE id = $1", uuid.UUID(prefix_id))


async def test_prefix_list_shows_every_change_whoever_made_it(operator, viewer, db):
    made = [created(await operator.post("/prefixes", json={"cidr": f"10.{70 + n}.0.0/16"}))
            for n in range(3)]
    ids = [p["id"] for p in made]

    async def listed() -> dict[str, dict]:
        items = (await viewer.get("/prefixes", params={"limit": 1000})).json()["items"]
        return {item["id"]: item for item in items if item["id"] in ids}

    assert set(await listed()) == set(ids)  # rendered and kept
    assert set(await listed()) == set(ids)  # the page made from them kept (core/rendered.py)
    assert set(await listed()) == set(ids)  # and served
    assert (await operator.patch(f"/prefixes/{ids[0]}",
                                 json={"description": "by the API"})).status_code == 200
    await db.run(_describe, ids[1], "by hand")
    await db.run(_delete, ids[2])
    now = await listed()
    assert set(now) == {ids[0], ids[1]}
    assert now[ids[0]]["description"] == "by the API"
    assert now[ids[1]]["description"] == "by hand"
    for prefix_id, item in now.items():
        assert item == (await viewer.get(f"/prefixes/{prefix_id}")).json()
