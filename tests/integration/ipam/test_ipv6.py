"""IPv6 in the address plan: the rules of docs/api-ipam.md as for IPv4, what differs refused with a
message naming the field, and sizes of a /64 answered by arithmetic (docs/api-ipam.md, "IPv6").
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid

import trio

from tests.integration.history.rows import event
from tests.integration.ipam.helpers import created, error_of, insert_lease, prefix, subnet

P48 = "2001:db8:20::/48"
S64 = "2001:db8:20:1::/64"
TOP = "2001:db8:20:1:ffff:ffff:ffff:ffff"
DUID_A = "00:03:00:01:02:00:00:00:00:0a"
DUID_B = "00:03:00:01:02:00:00:00:00:0b"


async def _subnet6(client, cidr: str = S64, **extra) -> dict:
    return await subnet(client, cidr, parent=P48, **extra)


async def test_ipv6_subnet_fields_and_what_it_refuses(operator):
    p = await prefix(operator, P48)
    assert p["family"] == 6
    body = {"prefix_id": p["id"]}
    s = created(await operator.post("/subnets", json={
        **body, "cidr": S64, "lease_time_seconds": 7200, "ntp_servers": ["2001:db8:20::123"]}))
    assert (s["cidr"], s["gateway"], s["ntp_servers"]) == (S64, None, ["2001:db8:20::123"])
    # Same rules as IPv4: overlap 409, outside the prefix 422, host bits 422.
    assert "overlaps" in error_of(await operator.post("/subnets", json={
        **body, "cidr": "2001:db8:20:1::/80"}), 409, "conflict")
    assert error_of(await operator.post("/subnets", json={**body, "cidr": "2001:db8:99::/64"}),
                    422, "validation_error").startswith("cidr:")
    assert "host bits" in error_of(await operator.post("/subnets", json={
        **body, "cidr": "2001:db8:20:2::1/64"}), 422, "validation_error")
    # What differs: no gateway (RAs), no PXE fields (option 59), NTP servers of its family.
    for field, value, words in (
        ("gateway", "2001:db8:20:2::1", "Router Advertisements"),
        ("next_server", "10.0.0.5", "option 59"),
        ("boot_file", "pxelinux.0", "option 59"),
        ("ntp_servers", ["10.0.0.123"], "IPv4 address"),
    ):
        message = error_of(await operator.post("/subnets", json={
            **body, "cidr": "2001:db8:20:2::/64", field: value}), 422, "validation_error")
        assert message.startswith(field) and words in message, message
    message = error_of(await operator.patch(f"/subnets/{s['id']}", json={
        "gateway": "2001:db8:20:1::1"}), 422, "validation_error")
    assert message.startswith("gateway:")
    # A subnet keeps its family; a family's subnet lives in a prefix of that family.
    message = error_of(await operator.patch(f"/subnets/{s['id']}", json={
        "cidr": "10.20.1.0/24"}), 422, "validation_error")
    assert message.startswith("cidr:") and "family" in message
    v4 = await prefix(operator, "10.20.0.0/16")
    assert "IPv6" in error_of(await operator.post("/subnets", json={
        "prefix_id": v4["id"], "cidr": "2001:db8:20:3::/64"}), 422, "validation_error")
    v4s = await subnet(operator, "10.20.1.0/24")
    assert "IPv6" in error_of(await operator.patch(f"/subnets/{v4s['id']}", json={
        "gateway": "2001:db8::1"}), 422, "validation_error")
    # A smaller IPv6 subnet may grow inside its prefix (children still fit).
    small = await _subnet6(operator, "2001:db8:20:5::/120")
    grown = await operator.patch(f"/subnets/{small['id']}", json={"cidr": "2001:db8:20:5::/64"})
    assert grown.status_code == 200, grown.text


async def test_ipv6_pools_excludes_reservations_assignments(operator):
    s = await _subnet6(operator)
    sid = s["id"]
    v4 = await subnet(operator, "10.20.1.0/24")
    pool = created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "2001:db8:20:1::1000", "end_ip": TOP}))
    # A /64 pool's size is exact, as a decimal string (2^64 - 4096 addresses).
    assert pool["size"] == str(2**64 - 0x1000)
    assert error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "2001:db8:20:1::ffff", "end_ip": "2001:db8:20:1::1:0"}),
        409, "conflict").startswith("start_ip/end_ip")
    # One family per subnet: a v4 pool in a v6 subnet and a v6 pool in a v4 subnet.
    message = error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "10.20.1.10", "end_ip": "10.20.1.20"}), 422, "validation_error")
    assert message.startswith("start_ip:") and "IPv4 address" in message
    message = error_of(await operator.post(f"/subnets/{v4['id']}/pools", json={
        "name": "x", "start_ip": "2001:db8:20:1::10", "end_ip": "2001:db8:20:1::20"}),
        422, "validation_error")
    assert message.startswith("start_ip:") and "IPv6 address" in message
    assert error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "2001:db8:20:1::20", "end_ip": "2001:db8:20:1::10"}),
        422, "validation_error").startswith("end_ip")
    # The first address is the Subnet-Router anycast (RFC 4291), never a host's.
    assert "anycast" in error_of(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "x", "start_ip": "2001:db8:20:1::", "end_ip": "2001:db8:20:1::5"}),
        422, "validation_error")

    ex = created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "2001:db8:20:1::10", "end_ip": "2001:db8:20:1::1f"}))
    assert ex["size"] == "16"
    error_of(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "2001:db8:20:1::1f", "end_ip": "2001:db8:20:1::2f"}), 409, "conflict")

    res = f"/subnets/{sid}/reservations"
    assert error_of(await operator.post(res, json={"ip": "2001:db8:20:1::50"}),
                    422, "validation_error").startswith("mac")
    # A MAC alone cannot identify a DHCPv6 client (RFC 6939 is not sent by common relays).
    message = error_of(await operator.post(res, json={
        "ip": "2001:db8:20:1::50", "mac": "02:00:00:00:00:50"}), 422, "validation_error")
    assert message.startswith("duid:") and "DUID" in message
    assert error_of(await operator.post(res, json={
        "ip": "2001:db8:20:1::50", "duid": DUID_A, "client_id": "01:02:00:00:00:00:50"}),
        422, "validation_error").startswith("client_id")
    r = created(await operator.post(res, json={
        "ip": "2001:db8:20:1:0:0:0:50", "duid": "000300010200000000" + "0A",
        "mac": "02:00:00:00:00:50", "hostname": "v6-host"}))
    assert (r["ip"], r["duid"], r["mac"]) == ("2001:db8:20:1::50", DUID_A, "02:00:00:00:00:50")
    assert error_of(await operator.post(res, json={"ip": "2001:db8:20:1::50", "duid": DUID_B}),
                    409, "conflict").startswith("ip")
    # The DUID is unique per subnet, whatever notation it comes in.
    assert error_of(await operator.post(res, json={
        "ip": "2001:db8:20:1::51", "duid": "00-03-00-01-02-00-00-00-00-0A"}),
        409, "conflict").startswith("duid")
    assert "exclude" in error_of(await operator.post(res, json={
        "ip": "2001:db8:20:1::15", "duid": DUID_B}), 409, "conflict")
    assert "reservation" in error_of(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "2001:db8:20:1::40", "end_ip": "2001:db8:20:1::5f"}), 409, "conflict")
    assert error_of(await operator.post(res, json={"ip": "2001:db8:21::5", "duid": DUID_B}),
                    422, "validation_error").startswith("ip")
    assert "IPv4" in error_of(await operator.post(res, json={"ip": "10.20.1.5",
                                                             "duid": DUID_B}),
                              422, "validation_error")
    listed = (await operator.get(res, params={"ip": "2001:db8:20:1::50"})).json()["items"]
    assert [item["id"] for item in listed] == [r["id"]]
    # The same DUID in another subnet is fine.
    other = await _subnet6(operator, "2001:db8:20:2::/64")
    created(await operator.post(f"/subnets/{other['id']}/reservations", json={
        "ip": "2001:db8:20:2::50", "duid": DUID_A}))

    # Assignments: as for IPv4 (outside pools), the lowest free address when none is given.
    a = created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "static"}))
    assert a["ip"] == "2001:db8:20:1::1"
    assert "pool" in error_of(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "2001:db8:20:1::2000", "hostname": "x"}), 409, "conflict")
    moved = await operator.patch(f"/assignments/{a['id']}", json={"ip": "2001:db8:20:1::60"})
    assert moved.status_code == 200 and moved.json()["ip"] == "2001:db8:20:1::60"
    # Search finds IPv6 objects by address and by CIDR.
    hits = (await operator.get("/search", params={"q": "2001:db8:20:1::50"})).json()["items"]
    assert any(hit["type"] == "reservation" and hit["id"] == r["id"] for hit in hits)
    hits = (await operator.get("/search", params={"q": S64})).json()["items"]
    assert any(hit["type"] == "subnet" and hit["match"] == "exact" for hit in hits)


async def test_ipv6_options_take_dhcpv6_codes(operator):
    s = await _subnet6(operator)
    opt = f"/subnets/{s['id']}/options"
    dns = created(await operator.post(opt, json={
        "code": 23, "payload": {"addresses": ["2001:DB8:20::53", "2001:db8:20::54"]}}))
    assert dns["payload"] == {"addresses": ["2001:db8:20::53", "2001:db8:20::54"]}
    assert created(await operator.post(opt, json={
        "code": 24, "payload": {"domains": ["Lan.Example.com."]}}))["payload"] == {
        "domains": ["lan.example.com"]}
    created(await operator.post(opt, json={"code": 56,
                                           "payload": {"addresses": ["2001:db8:20::123"]}}))
    created(await operator.post(opt, json={"code": 17, "payload": {
        "enterprise": 4491, "suboptions": [{"code": 1, "hex": "0102"}]}}))
    created(await operator.post(opt, json={"code": 59, "payload": {
        "url": "tftp://[2001:db8:20::69]/boot.efi"}}))
    error_of(await operator.post(opt, json={
        "code": 23, "payload": {"addresses": ["2001:db8:20::55"]}}), 409, "conflict")
    # DHCPv4 codes mean other things here (6 is no DHCPv6 option; 43 neither).
    for code in (6, 43, 3):
        message = error_of(await operator.post(opt, json={"code": code,
                                                          "payload": {"hex": "00"}}),
                           422, "validation_error")
        assert message.startswith("code:") and "23 (DNS servers)" in message, message
    for payload, words in (
        ({"code": 23, "payload": {"addresses": ["10.0.0.53"]}}, "IPv6"),
        ({"code": 23, "payload": {"addresses": ["ff02::1:2"]}}, "unicast"),
        ({"code": 24, "payload": {"domains": ["-bad-"]}}, "domains[0]"),
        ({"code": 17, "payload": {"enterprise": -1, "suboptions": []}}, "enterprise"),
        ({"code": 59, "payload": {"url": "gopher://x/y"}}, "scheme"),
        ({"code": 59, "payload": {"url": "tftp:///boot.efi"}}, "host"),
    ):
        other = await operator.post(opt, json=payload)
        # The code already exists for 23: the payload is judged first (422), never a 500.
        message = error_of(other, 422, "validation_error")
        assert message.startswith("payload:") and words in message, message
    assert error_of(await operator.post(opt, json={
        "code": 17, "payload": {"enterprise": 1, "suboptions": [{"code": 1, "hex": "01"}]},
        "vendor_class": "x"}), 422, "validation_error").startswith("vendor_class")


async def test_next_free_and_utilisation_of_a_64(operator, viewer, db):
    p = await prefix(operator, P48)
    s = await _subnet6(operator)
    sid = s["id"]
    free = f"/subnets/{sid}/next-free-ip"
    assert (await viewer.get(free)).json() == {"ip": "2001:db8:20:1::1"}
    created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "2001:db8:20:1::1", "end_ip": "2001:db8:20:1::ff"}))
    created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "2001:db8:20:1::100", "duid": DUID_A}))
    created(await operator.post(f"/subnets/{sid}/assignments", json={
        "ip": "2001:db8:20:1::101", "hostname": "a"}))
    assert (await viewer.get(free)).json() == {"ip": "2001:db8:20:1::102"}
    # A pool to the last but one address: the walk jumps over it, it never steps through it.
    pool = created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "2001:db8:20:1::102",
        "end_ip": "2001:db8:20:1:ffff:ffff:ffff:fffe"}))
    assert (await viewer.get(free)).json() == {"ip": TOP}
    await db.run(insert_lease, uuid.UUID(sid), "2001:db8:20:1::8000", "active", None,
                 "000300010200000000c1")
    await db.run(insert_lease, uuid.UUID(sid), "2001:db8:20:1::8001", "declined", None,
                 "000300010200000000c2")
    await db.run(insert_lease, uuid.UUID(sid), "2001:db8:20:1::8002", "expired", None,
                 "000300010200000000c3")

    u = (await viewer.get(f"/subnets/{sid}/utilisation")).json()
    size = 2**64 - 1  # every address but the Subnet-Router anycast
    assert u == {
        "subnet_id": sid, "cidr": S64, "size": str(size), "used": 4,
        "free": str(size - 4 - 255), "excluded": "255", "reserved": 1, "assigned": 1,
        "leased": 2, "percent_used": 0.0, "pools": 1, "pool_size": str(2**64 - 0x102 - 1),
    }
    pu = (await viewer.get(f"/pools/{pool['id']}/utilisation")).json()
    assert (pu["size"], pu["used"], pu["free"], pu["leased"]) == (
        str(2**64 - 0x102 - 1), 2, str(2**64 - 0x102 - 3), 2)
    prefix_u = (await viewer.get(f"/prefixes/{p['id']}/utilisation")).json()
    assert (prefix_u["size"], prefix_u["used"], prefix_u["free"], prefix_u["subnets"],
            prefix_u["addresses_used"]) == (str(2**80), str(2**64), str(2**80 - 2**64), 1, 4)

    # The last address taken, a create without an ip finds none (409), next-free says null.
    last = created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "b"}))
    assert last["ip"] == TOP
    assert (await viewer.get(free)).json() == {"ip": None}
    assert error_of(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "c"}),
                    409, "conflict").startswith("ip:")

    # The dashboard's pool figures hold IPv6 pools (sizes as decimal strings).
    dash = (await viewer.get("/dashboard")).json()
    shown = [item for item in dash["pools"] if item["pool_id"] == pool["id"]]
    assert shown and shown[0]["size"] == str(2**64 - 0x102 - 1) and shown[0]["used"] == 2
    # Its subnet's utilisation there is the subnet page's, counts as decimal strings.
    u = (await viewer.get(f"/subnets/{sid}/utilisation")).json()
    shown_s = [item for item in dash["subnets"] if item["subnet_id"] == sid]
    assert [(x["size"], x["used"], x["percent_used"]) for x in shown_s] == [
        (u["size"], u["used"], u["percent_used"])] == [(str(size), 5, 0.0)]


async def test_as_of_map_of_a_64_is_paged(operator, viewer, db):
    s = await _subnet6(operator)
    sid = s["id"]
    created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "2001:db8:20:1::1000", "end_ip": "2001:db8:20:1::1:0fff"}))
    created(await operator.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "2001:db8:20:1::1100", "end_ip": "2001:db8:20:1::11ff"}))
    created(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "2001:db8:20:1::50", "duid": DUID_A, "hostname": "kiosk"}))
    leased = [f"2001:db8:20:1::{n:x}" for n in range(0x2000, 0x2000 + 7)]
    upper = "2001:db8:20:1:ffff::1"  # far up: its offset would overflow a bigint
    start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)

    async def grant_all(conn) -> None:
        for index, ip in enumerate([*leased, upper]):
            await event(conn, uuid.UUID(sid), uuid.uuid4(), "granted", ip, start,
                        duid=f"00030001020000000{index:03x}",
                        expires_at=start + dt.timedelta(hours=1))

    await db.run(grant_all)
    seen: list[list] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        reply = await viewer.get(f"/subnets/{sid}/history", params=params)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        pages += 1
        assert len(body["addresses"]["rows"]) <= 3
        seen += body["addresses"]["rows"]
        cursor = body["next_cursor"]
        if cursor is None or pages > 10:
            break
    assert pages == 3
    # In address order: the reservation, the leases, the one far up.
    assert [row[0] for row in seen] == ["2001:db8:20:1::50", *leased, upper]
    assert seen[0] == ["2001:db8:20:1::50", None, "kiosk", "reserved"]
    assert {row[3] for row in seen[1:]} == {"leased"}
    assert body["size"] == str(2**64) and body["cidr"] == S64
    assert body["ranges"] == [
        {"start": "2001:db8:20:1::", "end": "2001:db8:20:1::fff", "state": "free"},
        {"start": "2001:db8:20:1::1000", "end": "2001:db8:20:1::10ff", "state": "pool"},
        {"start": "2001:db8:20:1::1100", "end": "2001:db8:20:1::11ff", "state": "excluded"},
        {"start": "2001:db8:20:1::1200", "end": "2001:db8:20:1::1:fff", "state": "pool"},
        {"start": "2001:db8:20:1::1:1000", "end": TOP, "state": "free"},
    ]
    pool_size = 0x10000 - 0x100
    assert body["counts"] == {
        "free": str(2**64 - 0x10000 - 1 - 1), "pool": str(pool_size - len(leased)),
        "excluded": "256", "assigned": 0, "reserved": 1, "declined": 0, "leased": len(leased) + 1,
    }
    # A forged cursor is a 400, never a 500.
    error_of(await viewer.get(f"/subnets/{sid}/history", params={"cursor": "WyJ4Il0"}),
             400, "bad_request")
    # An IPv4 map is whole: next_cursor is always null there.
    v4 = await subnet(operator, "10.20.1.0/24")
    whole = (await viewer.get(f"/subnets/{v4['id']}/history", params={"limit": 1})).json()
    assert whole["next_cursor"] is None and whole["size"] == 256
    # GET /history by an IPv6 address.
    found = (await viewer.get("/history", params={"ip": upper})).json()["items"]
    assert [item["ip"] for item in found] == [upper]


async def test_thirty_parallel_next_free_creates_on_a_64_get_thirty_addresses(operator, viewer):
    s = await _subnet6(operator)
    created(await operator.post(f"/subnets/{s['id']}/pools", json={
        "name": "dyn", "start_ip": "2001:db8:20:1::10", "end_ip": "2001:db8:20:1::1f"}))

    async def take(index: int, results: list) -> None:
        if index % 2:
            results.append(await operator.post(f"/subnets/{s['id']}/assignments",
                                               json={"hostname": f"host-{index}"}))
        else:
            results.append(await operator.post(f"/subnets/{s['id']}/reservations", json={
                "duid": f"00:03:00:01:02:00:00:00:01:{index:02x}"}))

    results: list = []
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for index in range(30):
                nursery.start_soon(take, index, results)
    assert [r.status_code for r in results] == [201] * 30, [r.text for r in results]
    addresses = sorted(ipaddress.IPv6Address(r.json()["ip"]) for r in results)
    # The lowest 30 hosts outside the pool (::10-::1f): ::1-::f, ::20-::2e.
    base = int(ipaddress.IPv6Address("2001:db8:20:1::"))
    assert [int(a) - base for a in addresses] == [*range(1, 16), *range(0x20, 0x2F)]
    usage = (await viewer.get(f"/subnets/{s['id']}/utilisation")).json()
    assert (usage["used"], usage["reserved"], usage["assigned"]) == (30, 15, 15)
