"""GET /search: typed results, best match first, paged; leases found too."""

from __future__ import annotations

import uuid

from tests.integration.ipam.helpers import created, error_of, insert_lease, prefix, subnet


async def _plan(operator, db) -> dict:
    outer = await prefix(operator, "10.20.0.0/16")
    inner = await prefix(operator, "10.20.0.0/20")
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1")
    sid = s["id"]
    r = created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.50", "mac": "02:aa:bb:cc:dd:50", "hostname": "printer-1"}))
    d = created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.51", "duid": "00:03:00:01:02:aa:bb:cc:dd:51", "hostname": "Printer-2"}))
    a = created(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "10.20.1.60", "hostname": "printserver"}))
    live = await db.run(insert_lease, uuid.UUID(sid), "10.20.1.100", "active",
                        "02:aa:bb:cc:dd:50", None, "printer-1")
    old = await db.run(insert_lease, uuid.UUID(sid), "10.20.1.101", "released",
                       "02:aa:bb:cc:dd:50", None, "printer-1")
    duid_lease = await db.run(insert_lease, uuid.UUID(sid), "10.20.1.102", "active", None,
                              "0003000102aabbccdd51", "printer-2")
    return {"outer": outer, "inner": inner, "subnet": s, "mac_res": r, "duid_res": d,
            "assignment": a, "live": str(live), "old": str(old), "duid_lease": str(duid_lease)}


def _hits(response) -> list[tuple[str, str, str]]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"items", "next_cursor"}
    return [(h["type"], str(h["id"]), h["match"]) for h in body["items"]]


async def test_search_every_kind_of_query(operator, viewer, db):
    x = await _plan(operator, db)
    # A CIDR: the exact subnet first, then what contains it, most specific first.
    hits = _hits(await viewer.get("/search", params={"q": "10.20.1.0/24"}))
    assert hits == [("subnet", x["subnet"]["id"], "exact"),
                    ("prefix", x["inner"]["id"], "contains"),
                    ("prefix", x["outer"]["id"], "contains")]
    within = _hits(await viewer.get("/search", params={"q": "10.20.0.0/16"}))
    assert within[0] == ("prefix", x["outer"]["id"], "exact")
    assert {h[1] for h in within[1:]} == {x["inner"]["id"], x["subnet"]["id"]}
    # An address: the reservation at it, then containing subnet and prefixes.
    hits = _hits(await viewer.get("/search", params={"q": "10.20.1.50"}))
    assert hits == [("reservation", x["mac_res"]["id"], "address"),
                    ("subnet", x["subnet"]["id"], "contains"),
                    ("prefix", x["inner"]["id"], "contains"),
                    ("prefix", x["outer"]["id"], "contains")]
    assert _hits(await viewer.get("/search", params={"q": "10.20.1.100"}))[0] == (
        "lease", x["live"], "address")
    # A MAC in any notation: the reservation, then the live lease, then the ended one.
    for q in ("02:AA:BB:CC:DD:50", "02-aa-bb-cc-dd-50", "02aa.bbcc.dd50", "02aabbccdd50"):
        hits = _hits(await viewer.get("/search", params={"q": q}))
        assert hits[:3] == [("reservation", x["mac_res"]["id"], "mac"),
                            ("lease", x["live"], "mac"), ("lease", x["old"], "mac")], q
    # A DUID, in any hex notation; leases hold it as plain hex.
    hits = _hits(await viewer.get("/search", params={"q": "0003000102AABBCCDD51"}))
    assert hits == [("reservation", x["duid_res"]["id"], "duid"),
                    ("lease", x["duid_lease"], "duid")]
    # A host name prefix (case-insensitive): exact names before prefixes, live before ended.
    hits = _hits(await viewer.get("/search", params={"q": "PRINTER-1"}))
    assert hits == [("reservation", x["mac_res"]["id"], "hostname"),
                    ("lease", x["live"], "hostname"), ("lease", x["old"], "hostname")]
    hits = _hits(await viewer.get("/search", params={"q": "print"}))
    assert {h[0] for h in hits} == {"reservation", "assignment", "lease"}
    assert all(h[2] == "hostname_prefix" for h in hits) and len(hits) == 6
    assert _hits(await viewer.get("/search", params={"q": "nothing-here"})) == []
    error_of(await viewer.get("/search", params={"q": "two words"}), 400, "bad_request")
    error_of(await viewer.get("/search"), 400, "bad_request")


async def test_search_pages_with_a_cursor(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24")
    for n in range(7):
        created(await operator.post(f"/subnets/{s['id']}/assignments", json={
            "ip": f"10.20.1.{10 + n}", "hostname": f"web-{n}"}))
    seen, cursor = [], None
    for _ in range(10):
        params = {"q": "web", "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = (await viewer.get("/search", params=params)).json()
        seen += [h["object"]["hostname"] for h in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"web-{n}" for n in range(7)] and len(seen) == 7
    error_of(await viewer.get("/search", params={"q": "web", "cursor": "eyJ4Ijox"}),
             400, "bad_request")
