"""Size, used and free for subnets, pools and prefixes."""

from __future__ import annotations

import ipaddress
import random
import uuid

from tests.integration.ipam.helpers import created, error_of, insert_lease, prefix, subnet


async def test_subnet_pool_and_prefix_utilisation(operator, viewer, db):
    p = await prefix(operator, "10.20.0.0/16")
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1")
    await subnet(operator, "10.20.2.0/25")
    sid = s["id"]
    pool = created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "10.20.1.100", "end_ip": "10.20.1.199"}))
    created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "10.20.1.190", "end_ip": "10.20.1.209"}))  # 10 in the pool, 10 outside
    created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "10.20.1.150", "mac": "02:00:00:00:01:50"}))  # in the pool
    created(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "10.20.1.205", "hostname": "static-in-exclude"}))
    for n in range(100, 110):
        await db.run(insert_lease, uuid.UUID(sid), f"10.20.1.{n}", "active",
                     f"02:00:00:00:02:{n:02x}")
    # The reserved client holds its lease: one address, counted once.
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.150", "active", "02:00:00:00:01:50")
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.111", "expired", "02:00:00:00:03:01")
    await db.run(insert_lease, uuid.UUID(sid), "10.20.1.112", "declined", "02:00:00:00:03:02")

    u = (await viewer.get(f"/subnets/{sid}/utilisation")).json()
    # used: gateway + 10 leases + reservation(+its lease) + declined + assignment = 14
    assert (u["size"], u["used"], u["reserved"], u["assigned"], u["leased"]) == (
        254, 14, 1, 1, 12)
    assert u["excluded"] == 19 and u["free"] == 254 - 14 - 19
    assert u["pools"] == 1 and u["pool_size"] == 100 and u["percent_used"] == 5.51
    # One utilisation everywhere: the dashboard shows the subnet page's figure (not pool use).
    dash = (await viewer.get("/dashboard")).json()
    shown = [item for item in dash["subnets"] if item["subnet_id"] == sid]
    assert [(x["size"], x["used"], x["percent_used"]) for x in shown] == [(254, 14, 5.51)]
    pool_row = [item for item in dash["pools"] if item["pool_id"] == pool["id"]]
    assert [(x["size"], x["used"]) for x in pool_row] == [(90, 12)]  # pool use: live leases

    pu = (await viewer.get(f"/pools/{pool['id']}/utilisation")).json()
    assert (pu["size"], pu["used"], pu["excluded"], pu["free"]) == (100, 12, 10, 78)

    prefix_usage = (await viewer.get(f"/prefixes/{p['id']}/utilisation")).json()
    assert prefix_usage["size"] == 65536 and prefix_usage["subnets"] == 2
    assert prefix_usage["used"] == 256 + 128 and prefix_usage["free"] == 65536 - 384
    assert prefix_usage["addresses_used"] == 14
    error_of(await viewer.get(f"/pools/{uuid.uuid4()}/utilisation"), 404, "not_found")


async def test_small_subnets_have_no_network_or_broadcast(operator, viewer):
    p31 = await subnet(operator, "10.20.3.0/31")
    p32 = await subnet(operator, "10.20.3.7/32")
    assert (await viewer.get(f"/subnets/{p31['id']}/utilisation")).json()["size"] == 2
    assert (await viewer.get(f"/subnets/{p32['id']}/utilisation")).json()["free"] == 1
    made = created(await operator.post(f"/subnets/{p32['id']}/assignments",
                                       json={"hostname": "loopback"}))
    assert made["ip"] == "10.20.3.7"


async def _random_occupancy(conn, subnet_id: uuid.UUID, base: int, seed: int) -> dict:
    """Random overlapping R, A, L (written directly: the API would refuse some overlaps)."""
    rng = random.Random(seed)
    hosts = list(range(base + 1, base + 255))
    pick = lambda n: set(rng.sample(hosts, n))  # noqa: E731
    r, a, l_live, l_ended = pick(60), pick(40), pick(120), pick(30)
    excludes = [(base + 10, base + 29), (base + 200, base + 200)]
    ip = ipaddress.IPv4Address
    await conn.executemany(
        "INSERT INTO reservations (subnet_id, ip, mac) VALUES ($1, $2, $3::macaddr)",
        [(subnet_id, ip(x), f"02:00:00:00:00:{x & 255:02x}") for x in r])
    await conn.executemany(
        "INSERT INTO assignments (subnet_id, ip, hostname) VALUES ($1, $2, 'h')",
        [(subnet_id, ip(x)) for x in a])
    await conn.executemany(
        """INSERT INTO leases (subnet_id, ip, state, client_key, expires_at)
           VALUES ($1, $2, $3, $4, now())""",
        [(subnet_id, ip(x), rng.choice(["active", "offered", "declined"]), x.to_bytes(4, "big"))
         for x in l_live]
        + [(subnet_id, ip(x), "expired", (x + 2**31).to_bytes(4, "big"))
           for x in l_ended - l_live])
    await conn.executemany(
        "INSERT INTO excludes (subnet_id, start_ip, end_ip) VALUES ($1, $2, $3)",
        [(subnet_id, ip(s), ip(e)) for s, e in excludes])
    return {"used": r | a | l_live, "excludes": excludes, "r": r, "a": a, "l": l_live}


async def test_utilisation_matches_brute_force(operator, viewer, db):
    for seed in range(3):
        gateway_offset = (1, 11, 77)[seed]  # free, inside an exclude, maybe also used
        cidr = f"10.3{seed}.0.0/24"
        s = await subnet(operator, cidr, parent=f"10.3{seed}.0.0/16",
                         gateway=f"10.3{seed}.0.{gateway_offset}")
        base = int(ipaddress.IPv4Network(cidr).network_address)
        truth = await db.run(_random_occupancy, uuid.UUID(s["id"]), base, seed)
        used = truth["used"] | {base + gateway_offset}
        excluded = {x for lo, hi in truth["excludes"] for x in range(lo, hi + 1)}
        u = (await viewer.get(f"/subnets/{s['id']}/utilisation")).json()
        assert u["used"] == len(used), seed
        assert u["excluded"] == len(excluded - used), seed
        assert u["free"] == 254 - len(used | excluded), seed
        assert (u["reserved"], u["assigned"], u["leased"]) == (
            len(truth["r"]), len(truth["a"]), len(truth["l"]))


async def test_list_pages_carry_each_items_utilisation(operator, viewer, db):
    """?include=utilisation: every item of a page holds the object its own utilisation route
    gives, read for the whole page in one request (the console's lists)."""
    p4 = await prefix(operator, "10.40.0.0/16")
    p6 = await prefix(operator, "2001:db8:40::/48")
    s1 = await subnet(operator, "10.40.1.0/24", parent="10.40.0.0/16", gateway="10.40.1.1")
    created(await operator.post(f"/subnets/{s1['id']}/pools", json={
        "name": "a", "start_ip": "10.40.1.100", "end_ip": "10.40.1.109"}))
    created(await operator.post(f"/subnets/{s1['id']}/pools", json={
        "name": "b", "start_ip": "10.40.1.120", "end_ip": "10.40.1.124"}))
    await db.run(_random_occupancy, uuid.UUID(s1["id"]),
                 int(ipaddress.IPv4Address("10.40.1.0")), 7)  # with excludes
    await subnet(operator, "10.40.2.0/30", parent="10.40.0.0/16")  # nothing in it
    s6 = await subnet(operator, "2001:db8:40:1::/64", parent="2001:db8:40::/48")
    created(await operator.post(f"/subnets/{s6['id']}/excludes", json={
        "start_ip": "2001:db8:40:1::10", "end_ip": "2001:db8:40:1::1f"}))
    await db.run(insert_lease, uuid.UUID(s6["id"]), "2001:db8:40:1::5", "active",
                 None, "00:03:00:01:02:00:00:00:00:05")

    for kind, owner in (("subnets", {"prefix_id": p4["id"]}), ("subnets", {"prefix_id": p6["id"]}),
                        ("prefixes", {})):
        plain = (await viewer.get(f"/{kind}", params=owner)).json()["items"]
        assert plain and all("utilisation" not in item for item in plain)
        items, cursor = [], None
        for _ in range(10):  # one item a page: the cursor pages as without include
            page = (await viewer.get(f"/{kind}", params={
                **owner, "include": "utilisation", "limit": 1,
                **({"cursor": cursor} if cursor else {})})).json()
            items += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert [x["id"] for x in items] == [x["id"] for x in plain]
        for item in items:
            alone = (await viewer.get(f"/{kind}/{item['id']}/utilisation")).json()
            assert item.pop("utilisation") == alone, (kind, item["cidr"])
        assert items == plain  # the rest of each item is unchanged

    for kind in ("subnets", "prefixes"):  # a bad query: 400 naming the parameter
        message = error_of(await viewer.get(f"/{kind}", params={"include": "usage"}), 400,
                           "bad_request")
        assert message.startswith("include:"), message
