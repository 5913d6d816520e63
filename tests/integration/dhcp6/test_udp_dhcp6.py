"""The DHCPv6 server over loopback UDP, as a relay talks to it (RFC 8415 §19): each exchange's
answer on the wire and its durable record (leases, lease_journal → lease_events, events)."""

from __future__ import annotations

import random
from ipaddress import IPv6Address, IPv6Network
from typing import Any

import pytest
import trio

from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.options import (
    DnsServers,
    DomainList,
    IaNa,
    IaPd,
    InterfaceId,
    RapidCommit,
    StatusCode,
    UserClass,
    VendorClass,
)
from ipamd.dhcp6.plan import IaType
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import dhcp_section, serve
from tests.integration.dhcp6.conftest import Running6, start_server
from tests.integration.dhcp6.harness import (
    PD_PREFIX,
    POOL,
    Relay6,
    client_duid,
    forward,
    message,
    relay_socket,
    remote_id,
    seed_v6,
)
from tests.support.waiting import until

RESERVED_DUID = client_duid(99)
RESERVED_IP = "2001:db8:77:1::beef"
RESERVED_PREFIX = "2001:db8:4400:ab00::/56"


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_v6(conn, reservations=[(RESERVED_IP, RESERVED_DUID.text)],
                             pd_reservations=[(RESERVED_PREFIX, RESERVED_DUID.text)])

    return await db.transaction(seed)


def _address(reply: Message) -> str:
    ia = reply.first(IaNa)
    assert ia is not None and ia.addresses, reply
    return str(ia.addresses[0].address)


def _status(reply: Message) -> int | None:
    status = reply.first(StatusCode)
    return None if status is None else status.status


async def _leases(db: Database, duid_text: str) -> list[dict[str, Any]]:
    async def read(conn: Any) -> list[dict[str, Any]]:
        rows = await conn.fetch(
            """SELECT lease_id, host(ip) AS ip, state, duid, iaid, ia_type, prefix_length,
                      preferred_lifetime, valid_lifetime, giaddr, remote_id,
                      extract(epoch FROM expires_at - now()) AS left
               FROM leases WHERE duid = $1 ORDER BY lease_id""", duid_text)
        return [dict(r) for r in rows]

    return await db.run(read)


async def _events(db: Database, lease_id: Any) -> list[str]:
    async def read(conn: Any) -> list[str]:
        await lease_events.derive_all(conn)
        rows = await conn.fetch("SELECT event FROM lease_events WHERE lease_id = $1 ORDER BY id",
                                lease_id)
        return [r["event"] for r in rows]

    return await db.run(read)


async def _grant(dhcp6: Running6, n: int, xid: int) -> tuple[str, Message]:
    duid = client_duid(n)
    advertise = await dhcp6.relay.exchange(message(p.SOLICIT, xid, duid))
    assert advertise is not None and advertise.msg_type == p.ADVERTISE
    address = _address(advertise)
    reply = await dhcp6.relay.exchange(message(p.REQUEST, xid + 1, duid,
                                               server=dhcp6.server.server_duid, na=[address]))
    assert reply is not None and reply.msg_type == p.REPLY
    assert _address(reply) == address
    return address, reply


async def test_solicit_advertises_without_writing_then_request_commits(dhcp6: Running6) -> None:
    duid = client_duid(1)
    advertise = await dhcp6.relay.exchange(message(p.SOLICIT, 0x100, duid))
    assert advertise is not None and advertise.msg_type == p.ADVERTISE
    address = _address(advertise)
    assert IPv6Address(POOL[0]) <= IPv6Address(address) <= IPv6Address(POOL[1])
    assert advertise.server_duid == dhcp6.server.server_duid
    assert advertise.client_duid == duid
    dns, domains = advertise.first(DnsServers), advertise.first(DomainList)
    assert dns is not None and [str(a) for a in dns.addresses] == ["2001:db8::53"]
    assert domains is not None and domains.texts == ["example.com."]
    assert await _leases(dhcp6.db, duid.text) == []  # an Advertise writes nothing

    reply = await dhcp6.relay.exchange(message(p.REQUEST, 0x101, duid,
                                               server=dhcp6.server.server_duid, na=[address]))
    assert reply is not None and reply.msg_type == p.REPLY and _address(reply) == address
    ia = reply.first(IaNa)
    assert ia is not None and (ia.t1, ia.t2) == (1250, 2000)  # of preferred 2500 (4000 * 5/8)
    assert (ia.addresses[0].preferred, ia.addresses[0].valid) == (2500, 4000)
    [lease] = await _leases(dhcp6.db, duid.text)
    assert lease["ip"] == address and lease["state"] == "active"
    assert (lease["ia_type"], lease["iaid"], lease["prefix_length"]) == ("na", 1, 128)
    assert (lease["preferred_lifetime"], lease["valid_lifetime"]) == (2500, 4000)
    assert str(lease["giaddr"]) == "2001:db8:77:1::1"
    assert await _events(dhcp6.db, lease["lease_id"]) == ["granted"]
    assert dhcp6.server.counters.leases["granted"] == 1


async def test_renew_keeps_the_binding_and_release_ends_it(dhcp6: Running6) -> None:
    address, _ = await _grant(dhcp6, 2, 0x200)
    duid = client_duid(2)
    server = dhcp6.server.server_duid
    renewed = await dhcp6.relay.exchange(message(p.RENEW, 0x202, duid, server=server,
                                                 na=[address]))
    assert renewed is not None and _address(renewed) == address
    [lease] = await _leases(dhcp6.db, duid.text)
    assert lease["state"] == "active" and lease["ip"] == address

    released = await dhcp6.relay.exchange(message(p.RELEASE, 0x203, duid, server=server,
                                                  na=[address]))
    assert released is not None and _status(released) == p.STATUS_SUCCESS
    [lease] = await _leases(dhcp6.db, duid.text)
    assert lease["state"] == "released"
    assert await _events(dhcp6.db, lease["lease_id"]) == ["granted", "renewed", "released"]

    async def topics(conn: Any) -> list[str]:
        rows = await conn.fetch("SELECT topic FROM events WHERE payload->>'lease_id' = $1 "
                                "ORDER BY id", str(lease["lease_id"]))
        return [r["topic"] for r in rows]

    assert await dhcp6.db.run(topics) == ["lease.granted", "lease.renewed", "lease.released"]

    async def payloads(conn: Any) -> list[dict[str, Any]]:
        rows = await conn.fetch("SELECT payload FROM events WHERE payload->>'lease_id' = $1 "
                                "ORDER BY id", str(lease["lease_id"]))
        return [r["payload"] for r in rows]

    released_body = (await dhcp6.db.run(payloads))[-1]
    assert released_body["ip"] == address and released_body["state"] == "released"
    assert (released_body["duid"], released_body["iaid"], released_body["ia_type"],
            released_body["prefix_length"]) == (duid.text, 1, "na", 128)
    # A Renew after the Release: this server holds no binding for it (it is authoritative).
    again = await dhcp6.relay.exchange(message(p.RENEW, 0x204, duid, server=server,
                                               na=[address]))
    assert again is not None
    ia = again.first(IaNa)
    assert ia is not None and ia.status is not None and ia.status.status == p.STATUS_NO_BINDING


async def test_decline_quarantines_the_address(dhcp6: Running6) -> None:
    address, _ = await _grant(dhcp6, 3, 0x300)
    duid = client_duid(3)
    reply = await dhcp6.relay.exchange(message(p.DECLINE, 0x302, duid,
                                               server=dhcp6.server.server_duid, na=[address]))
    assert reply is not None and _status(reply) == p.STATUS_SUCCESS
    [lease] = await _leases(dhcp6.db, duid.text)
    assert lease["state"] == "declined"
    assert 86_000 < lease["left"] <= 86_400  # decline_probation_seconds
    assert dhcp6.server.cache.holder(IPv6Address(address), 128, 0.0) is not None
    # Nobody is offered it meanwhile: another client hinting at it gets another address.
    other = await dhcp6.relay.exchange(message(p.SOLICIT, 0x303, client_duid(4), na=[address]))
    assert other is not None and _address(other) != address


async def test_duid_reservation_gets_its_address_and_prefix(dhcp6: Running6) -> None:
    advertise = await dhcp6.relay.exchange(message(p.SOLICIT, 0x400, RESERVED_DUID,
                                                   pd=[], iaid=7))
    assert advertise is not None and _address(advertise) == RESERVED_IP
    pd = advertise.first(IaPd)
    assert pd is not None and str(pd.prefixes[0].network) == RESERVED_PREFIX


async def test_prefix_delegation_commits_a_pd_lease(dhcp6: Running6) -> None:
    duid = client_duid(5)
    reply = await dhcp6.relay.exchange(message(p.SOLICIT, 0x500, duid, na=None, pd=[],
                                               rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY
    pd = reply.first(IaPd)
    assert pd is not None and pd.prefixes
    network = pd.prefixes[0].network
    assert network.prefixlen == 56 and network.subnet_of(IPv6Network(PD_PREFIX))
    [lease] = await _leases(dhcp6.db, duid.text)
    assert (lease["ia_type"], lease["prefix_length"]) == ("pd", 56)
    assert lease["ip"] == str(network.network_address)


async def test_rapid_commit_answers_a_solicit_with_a_committed_reply(dhcp6: Running6) -> None:
    duid = client_duid(6)
    reply = await dhcp6.relay.exchange(message(p.SOLICIT, 0x600, duid, rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY
    assert reply.first(RapidCommit) is not None
    [lease] = await _leases(dhcp6.db, duid.text)
    assert lease["ip"] == _address(reply) and lease["state"] == "active"
    bound = dhcp6.server.cache.of(duid, 1, IaType.NA, 0.0)
    assert [str(b.address) for b in bound] == [lease["ip"]]


async def test_interface_id_echoed_and_relay_options_recorded(dhcp6: Running6) -> None:
    duid = client_duid(7)
    extra = [InterfaceId(b"ge-0/0/1.7"), remote_id(4491, b"cpe-7")]
    await dhcp6.relay.send(message(p.SOLICIT, 0x700, duid, rapid=True), extra=extra)
    got = await dhcp6.relay.reply(0x700)
    assert got is not None
    outer, reply = got
    assert outer.interface_id == b"ge-0/0/1.7" and outer.link_address == IPv6Address(
        "2001:db8:77:1::1")
    assert reply.msg_type == p.REPLY  # Rapid Commit: committed before it was sent
    [lease] = await _leases(dhcp6.db, duid.text)
    assert lease["remote_id"] == (4491).to_bytes(4, "big") + b"cpe-7"


async def test_nested_relays_select_the_innermost_link(dhcp6: Running6) -> None:
    duid = client_duid(8)
    inner = forward(message(p.SOLICIT, 0x800, duid), hops=0)
    outer = forward(inner, link="2001:db8:99::1", peer="2001:db8:99::2", hops=1)
    await dhcp6.relay.send_raw(outer.to_bytes())
    got = await dhcp6.relay.reply(0x800)
    assert got is not None and got[1].msg_type == p.ADVERTISE
    assert got[0].relayed is not None and got[0].hop_count == 1


@pytest.mark.parametrize(("data", "reason"), [
    (b"\x0c\x00\x01", "too_short"),
    (b"\x63\x00\x00\x01", "unknown_message_type"),
    (forward(message(p.SOLICIT, 1, client_duid(9))).to_bytes()[:-3], "option_too_long"),
    (message(p.SOLICIT, 1, client_duid(9)).to_bytes(), "not_relayed"),
    (forward(message(p.SOLICIT, 1, client_duid(9)), hops=9).to_bytes(), "hop_limit"),
    (forward(message(p.SOLICIT, 1, client_duid(9)), link="2001:db8:5::1").to_bytes(),
     "no_link"),
    (forward(Message(p.SOLICIT, 1, [])).to_bytes(), "no_client_id"),
])
async def test_bad_datagrams_are_dropped_and_counted(dhcp6: Running6, data: bytes,
                                                     reason: str) -> None:
    await dhcp6.relay.send_raw(data)
    await dhcp6.relay.send_raw(data)
    # The server still answers: a good Solicit after the bad ones gets its Advertise.
    good = await dhcp6.relay.exchange(message(p.SOLICIT, 0x900, client_duid(10)))
    assert good is not None and good.msg_type == p.ADVERTISE
    assert dhcp6.server.counters.drops[reason] == 2
    assert dhcp6.server.counters.snapshot()["drops"] == {reason: 2}


async def test_server_duid_is_made_once_and_kept(dhcp6: Running6, nursery: Any) -> None:
    first = dhcp6.server.server_duid
    assert first is not None
    server, scope, done = await start_server(nursery, dhcp6.state)
    try:
        assert server.server_duid == first
    finally:
        scope.cancel()
        await done.wait()

    async def rows(conn: Any) -> int:
        return await conn.fetchval("SELECT count(*) FROM dhcp6_server")

    assert await dhcp6.db.run(rows) == 1


async def test_confirm_rebind_and_information_request(dhcp6: Running6) -> None:
    address, _ = await _grant(dhcp6, 11, 0xB00)
    duid = client_duid(11)
    confirm = await dhcp6.relay.exchange(message(p.CONFIRM, 0xB02, duid, na=[address]))
    assert confirm is not None and _status(confirm) == p.STATUS_SUCCESS
    elsewhere = await dhcp6.relay.exchange(message(p.CONFIRM, 0xB03, duid,
                                                   na=["2001:db8:99::5"]))
    assert elsewhere is not None and _status(elsewhere) == p.STATUS_NOT_ON_LINK
    rebind = await dhcp6.relay.exchange(message(p.REBIND, 0xB04, duid, na=[address]))
    assert rebind is not None and _address(rebind) == address
    [lease] = await _leases(dhcp6.db, duid.text)
    assert await _events(dhcp6.db, lease["lease_id"]) == ["granted", "renewed"]
    info = await dhcp6.relay.exchange(message(p.INFORMATION_REQUEST, 0xB05, duid, na=None))
    assert info is not None and info.msg_type == p.REPLY and info.first(DnsServers) is not None


async def test_plan_changes_reach_the_server(dhcp6: Running6) -> None:
    """A subnet added after start is served, and a delegated-prefix reservation made after
    start goes to its DUID (migration 0017's triggers on the delegation pool tables)."""
    duid = client_duid(12)

    async def add(conn: Any) -> None:
        prefix = await conn.fetchval("SELECT id FROM prefixes WHERE cidr = '2001:db8:77::/48'")
        subnet = await conn.fetchval(
            """INSERT INTO subnets (tenant_id, prefix_id, cidr)
               SELECT tenant_id, id, '2001:db8:77:2::/64' FROM prefixes WHERE id = $1
               RETURNING id""", prefix)
        await conn.execute("INSERT INTO pools (subnet_id, name, start_ip, end_ip) "
                           "VALUES ($1, 'two', '2001:db8:77:2::10', '2001:db8:77:2::10')",
                           subnet)
        await conn.execute("INSERT INTO pd_reservations (pd_pool_id, prefix, duid) "
                           "SELECT id, '2001:db8:4400:cd00::/56', $1 FROM pd_pools", duid.text)

    await dhcp6.db.transaction(add)

    async def served() -> bool:
        plan = dhcp6.server.plans.current.plan
        link = plan.link_for(IPv6Address("2001:db8:77:1::1"))
        return (plan.link_for(IPv6Address("2001:db8:77:2::1")) is not None
                and link is not None and link.reservation(duid) is not None)

    await until(served, "the plan reloaded with the new subnet and reservation")
    reply = await dhcp6.relay.exchange(message(p.SOLICIT, 0xC00, duid, na=[], pd=[]),
                                       link="2001:db8:77:2::1")
    assert reply is not None and _address(reply) == "2001:db8:77:2::10"
    # The new link has no delegation pool: the reserved prefix belongs to the first link.
    first = await dhcp6.relay.exchange(message(p.SOLICIT, 0xC01, duid, na=None, pd=[]))
    assert first is not None
    pd = first.first(IaPd)
    assert pd is not None and str(pd.prefixes[0].network) == "2001:db8:4400:cd00::/56"


async def test_mutated_datagrams_never_stop_the_server(dhcp6: Running6) -> None:
    """Random corruptions of a relayed Request (fixed seed): each one dropped and counted,
    or answered; none stops the receive loop or leaves a binding to another DUID."""
    rng = random.Random(49)
    base = bytearray(forward(message(p.REQUEST, 0xD00, client_duid(13),
                                     server=dhcp6.server.server_duid, na=[POOL[0]],
                                     pd=["2001:db8:4400::/56"])).to_bytes())
    sent = 0
    for _ in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            choice = rng.random()
            if choice < 0.6:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif choice < 0.8:
                del data[rng.randrange(len(data)):]
            else:
                data[rng.randrange(len(data)):rng.randrange(len(data))] = rng.randbytes(
                    rng.randint(1, 12))
        await dhcp6.relay.send_raw(bytes(data))
        sent += 1
    good = await dhcp6.relay.exchange(message(p.SOLICIT, 0xD01, client_duid(14)))
    assert good is not None and good.msg_type == p.ADVERTISE
    counters = dhcp6.server.counters
    assert counters.drops["internal_error"] == 0
    handled = sum(counters.drops.values()) + sum(counters.received.values())
    assert handled >= sent  # every datagram was looked at (received or dropped)


async def test_a_new_reservation_supersedes_the_held_binding(dhcp6: Running6) -> None:
    address, _ = await _grant(dhcp6, 15, 0xE00)
    duid = client_duid(15)
    reserved = "2001:db8:77:1::cafe"
    await dhcp6.db.run(lambda conn: conn.execute(
        "INSERT INTO reservations (subnet_id, ip, duid) SELECT id, $1, $2 FROM subnets",
        reserved, duid.text))

    async def reloaded() -> bool:
        link = dhcp6.server.plans.current.plan.link_for(IPv6Address(reserved))
        return link is not None and link.reservation(duid) is not None

    await until(reloaded, "the plan reloaded with the reservation")
    reply = await dhcp6.relay.exchange(message(p.REQUEST, 0xE02, duid,
                                               server=dhcp6.server.server_duid, na=[address]))
    assert reply is not None
    ia = reply.first(IaNa)
    assert ia is not None
    given = {str(a.address): a.valid for a in ia.addresses}
    assert given == {reserved: 4000, address: 0}  # the old one retired (lifetimes 0)
    states = {lease["ip"]: lease["state"] for lease in await _leases(dhcp6.db, duid.text)}
    assert states == {address: "released", reserved: "active"}


async def test_the_dhcpv4_server_starts_beside_v6_bindings(dhcp6: Running6, nursery: Any) -> None:
    """One lease table: the DHCPv4 server's start (and resync) reads only IPv4 leases."""
    await _grant(dhcp6, 16, 0xF00)
    config = make_config(dhcp6.state.config.database.dsn, dhcp=dhcp_section(9))
    served = await serve(nursery, AppState(config=config, db=dhcp6.db))
    try:
        assert len(served.server.cache) == 0
    finally:
        await served.stop()


async def test_delegated_prefix_renews_and_releases(dhcp6: Running6) -> None:
    duid = client_duid(17)
    server = dhcp6.server.server_duid
    granted = await dhcp6.relay.exchange(message(p.SOLICIT, 0x1100, duid, na=None, pd=[],
                                                 rapid=True))
    assert granted is not None
    pd = granted.first(IaPd)
    assert pd is not None
    prefix = str(pd.prefixes[0].network)
    renewed = await dhcp6.relay.exchange(message(p.RENEW, 0x1101, duid, server=server, na=None,
                                                 pd=[prefix]))
    assert renewed is not None
    again = renewed.first(IaPd)
    assert again is not None and str(again.prefixes[0].network) == prefix
    assert again.prefixes[0].valid == 4000
    released = await dhcp6.relay.exchange(message(p.RELEASE, 0x1102, duid, server=server,
                                                  na=None, pd=[prefix]))
    assert released is not None and _status(released) == p.STATUS_SUCCESS
    [lease] = await _leases(dhcp6.db, duid.text)
    assert (lease["ia_type"], lease["state"]) == ("pd", "released")
    assert await _events(dhcp6.db, lease["lease_id"]) == ["granted", "renewed", "released"]


async def test_two_nodes_the_database_judges_an_address_both_would_give(
        dhcp6: Running6, nursery: Any) -> None:
    """Node B's picture lacks node A's binding: its grant of that address is refused by the
    database, it reads the bindings again and grants another (docs: scale-out)."""
    taken, _ = await _grant(dhcp6, 18, 0x1200)
    state_b = AppState(config=dhcp6.state.config, db=dhcp6.db)
    node_b, scope, done = await start_server(nursery, state_b)
    try:
        node_b.cache.drop_at(IPv6Address(taken), 128)  # as if granted after B's last look
        relay_b = Relay6(trio.socket.from_stdlib_socket(relay_socket()), node_b.addresses[0])
        nursery.start_soon(relay_b.run)
        duid = client_duid(19)
        reply = await relay_b.exchange(message(p.SOLICIT, 0x1201, duid, na=[taken],
                                               rapid=True))
        assert reply is not None and reply.msg_type == p.REPLY
        assert _address(reply) != taken  # the hint was A's client's
        assert node_b.counters.conflicts == 1 and node_b.counters.drops == {}
        [lease] = await _leases(dhcp6.db, duid.text)
        assert lease["ip"] == _address(reply) and lease["state"] == "active"
        assert node_b.cache.holder(IPv6Address(taken), 128, 0.0) is not None  # read again
    finally:
        scope.cancel()
        await done.wait()


async def test_two_nodes_the_database_judges_an_ia_the_other_node_bound(
        dhcp6: Running6, nursery: Any) -> None:
    """Node B's picture lacks the binding node A gave this very IA: B's grant of another
    address is refused (one live binding per IA per subnet), B reads the IA's bindings
    again (by its client key: no index has the DUID) and answers with A's binding."""
    taken, _ = await _grant(dhcp6, 20, 0x1300)
    duid = client_duid(20)
    state_b = AppState(config=dhcp6.state.config, db=dhcp6.db)
    node_b, scope, done = await start_server(nursery, state_b)
    try:
        node_b.cache.drop_ia(duid, 1, IaType.NA)  # as if granted after B's last look
        hint = str(IPv6Address(taken) + 7)  # free: B would grant it, the IA is A's
        relay_b = Relay6(trio.socket.from_stdlib_socket(relay_socket()), node_b.addresses[0])
        nursery.start_soon(relay_b.run)
        reply = await relay_b.exchange(message(p.SOLICIT, 0x1301, duid, na=[hint],
                                               rapid=True))
        assert reply is not None and reply.msg_type == p.REPLY
        assert _address(reply) == taken
        assert node_b.counters.conflicts == 1 and node_b.counters.drops == {}
        [lease] = await _leases(dhcp6.db, duid.text)
        assert (lease["ip"], lease["state"]) == (taken, "active")
        assert [str(b.address) for b in node_b.cache.of(duid, 1, IaType.NA, 0.0)] == [taken]
    finally:
        scope.cancel()
        await done.wait()


PHONES = ("2001:db8:77:3::10", "2001:db8:77:3::20")


async def _classed_subnet(dhcp6: Running6) -> None:
    """2001:db8:77:3::/64 with a pool kept for the class 'phones' (vendor class "4491:phone")
    and an open pool; a user class 'lab' keeps nothing but exists."""
    async def add(conn: Any) -> None:
        subnet = await conn.fetchval(
            """INSERT INTO subnets (tenant_id, prefix_id, cidr)
               SELECT tenant_id, id, '2001:db8:77:3::/64' FROM prefixes
               WHERE cidr = '2001:db8:77::/48' RETURNING id""")
        kind = await conn.fetchval(
            """INSERT INTO client_classes (tenant_id, name, match, value)
               SELECT tenant_id, 'phones', 'vendor_class', '4491:phone' FROM subnets
               WHERE id = $1 RETURNING id""", subnet)
        users = await conn.fetchval(
            """INSERT INTO client_classes (tenant_id, name, match, value)
               SELECT tenant_id, 'lab', 'user_class', 'lab-bench' FROM subnets
               WHERE id = $1 RETURNING id""", subnet)
        await conn.execute("INSERT INTO pools (subnet_id, name, start_ip, end_ip, class_id) "
                           "VALUES ($1, 'phones', $2, $3, $4)", subnet, *PHONES, kind)
        await conn.execute("INSERT INTO pools (subnet_id, name, start_ip, end_ip, class_id) "
                           "VALUES ($1, 'lab', '2001:db8:77:3::30', '2001:db8:77:3::3f', $2)",
                           subnet, users)

    await dhcp6.db.transaction(add)

    async def reloaded() -> bool:
        return dhcp6.server.plans.current.plan.link_for(IPv6Address("2001:db8:77:3::1")) \
            is not None

    await until(reloaded, "the plan reloaded with the new subnet")


def _with(base: Message, *extra: Any) -> Message:
    return Message(base.msg_type, base.transaction_id, [*base.options, *extra])


async def test_a_pool_kept_for_a_client_class_goes_only_to_its_clients(
        dhcp6: Running6) -> None:
    """Vendor Class (16) with the class's enterprise number and a data item starting with
    its text gets the kept pool; another enterprise, or no option, does not (NoAddrsAvail:
    the subnet has no open pool); User Class (15) opens the pool of its class."""
    await _classed_subnet(dhcp6)
    link = "2001:db8:77:3::1"
    phone = _with(message(p.SOLICIT, 0x1300, client_duid(20)),
                  VendorClass(4491, (b"other", b"phone-model-7")))
    reply = await dhcp6.relay.exchange(phone, link=link)
    assert reply is not None
    assert IPv6Address(PHONES[0]) <= IPv6Address(_address(reply)) <= IPv6Address(PHONES[1])

    for xid, extra in ((0x1301, (VendorClass(9, (b"phone-model-7",)),)), (0x1302, ())):
        stranger = _with(message(p.SOLICIT, xid, client_duid(21)), *extra)
        reply = await dhcp6.relay.exchange(stranger, link=link)
        assert reply is not None
        ia = reply.first(IaNa)
        assert ia is not None and ia.status is not None, reply
        assert ia.status.status == p.STATUS_NO_ADDRS_AVAIL

    bench = _with(message(p.SOLICIT, 0x1303, client_duid(22)),
                  UserClass((b"x", b"lab-bench")))
    reply = await dhcp6.relay.exchange(bench, link=link)
    assert reply is not None
    assert IPv6Address("2001:db8:77:3::30") <= IPv6Address(_address(reply)) \
        <= IPv6Address("2001:db8:77:3::3f")
    # A prefix of a user class item is not a match (equality, as option 77 in DHCPv4).
    near = _with(message(p.SOLICIT, 0x1304, client_duid(23)), UserClass((b"lab",)))
    reply = await dhcp6.relay.exchange(near, link=link)
    assert reply is not None
    ia = reply.first(IaNa)
    assert ia is not None and ia.status is not None and \
        ia.status.status == p.STATUS_NO_ADDRS_AVAIL
