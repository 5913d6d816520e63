"""Many clients at once over loopback: no address twice, every Ack persisted before it is sent,
and two servers (two appliance nodes) on one Postgres never hand out one address twice."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import DhcpMessage
from ipamd.runtime.dhcp_servers import dhcp_server
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, seed_subnet
from tests.unit.dhcp.packets import mac_bytes, request

CLIENTS = 2000
DEADLINE = 60.0


@pytest.fixture
def dhcp_overrides() -> dict[str, Any]:
    # These clients never retransmit, and the server runs in the test's own process: a pause
    # there (a full garbage collection late in a whole suite's run) left a burst of
    # Discovers unread for more than overload_wait_ms, the server shed them as real clients
    # would have had them shed, and the test waited for their Offers until its deadline.
    # What is tested here is the allocation, so the server waits as long as the test does.
    wait = int(DEADLINE * 1000)
    return {"overload_wait_ms": wait, "stale_wait_ms": wait}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> dict[str, Any]:
        # 2,247 usable addresses: enough for everyone, not so many that clashes are rare.
        return await seed_subnet(conn, pools=[("127.77.8.1", "127.77.16.200")])

    return await db.transaction(seed)


async def _send_all(relay: Relay, messages: list[DhcpMessage], server: tuple[str, int] | None
                    = None) -> None:
    for index, msg in enumerate(messages):
        await relay.sock.sendto(msg.to_bytes(), server or relay.server)
        if index % 50 == 49:
            await trio.sleep(0)  # let the server drain its socket too


async def _replies(relay: Relay, xids: list[int], mtype: int | tuple[int, ...],
                   late: int | None = None) -> dict[int, DhcpMessage]:
    """The first reply of type ``mtype`` (or one of them) per xid; ``late`` is a type that
    may still trail in."""
    wanted = mtype if isinstance(mtype, tuple) else (mtype,)
    got: dict[int, DhcpMessage] = {}
    with trio.fail_after(DEADLINE):
        while len(got) < len(xids):
            for xid in xids:
                while xid not in got and relay.replies.get(xid):
                    reply = relay.replies[xid].pop(0)
                    if reply.message_type == late:
                        continue
                    assert reply.message_type in wanted, reply
                    got[xid] = reply
            if len(got) < len(xids):
                await relay.arrived.wait()
    return got


async def _active(db: Database, addresses: list[str]) -> dict[str, str]:
    async def read(conn) -> Any:
        return await conn.fetch(
            """SELECT host(ip) AS ip, mac::text AS mac FROM leases
               WHERE state = 'active' AND ip = ANY($1::inet[])""", addresses)

    return {r["ip"]: r["mac"] for r in await db.run(read)}


async def test_2000_concurrent_clients(dhcp: Any) -> None:
    relay, db, server = dhcp.relay, dhcp.db, dhcp.server
    macs = [mac_bytes(100_000 + n) for n in range(CLIENTS)]
    discovers = [request(o.DISCOVER, mac, giaddr=RELAY_IP) for mac in macs]
    await _send_all(relay, discovers)
    offers = await _replies(relay, [m.xid for m in discovers], o.OFFER)
    offered = [offers[m.xid].yiaddr for m in discovers]
    assert len(set(offered)) == CLIENTS  # parallel Discovers got different addresses

    requests = [request(o.REQUEST, mac, xid=m.xid, giaddr=RELAY_IP, server_id="127.0.0.1",
                        requested=o.ip_to_str(offers[m.xid].yiaddr))
                for mac, m in zip(macs, discovers, strict=True)]
    checked: set[int] = set()
    pending = {m.xid: m for m in requests}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_send_all, relay, requests)
        with trio.fail_after(DEADLINE):
            while len(checked) < CLIENTS:
                # Every Ack that has arrived must already be a committed active lease.
                arrived = {xid: relay.replies[xid][0] for xid in pending
                           if xid not in checked and relay.replies.get(xid)}
                if not arrived:
                    await relay.arrived.wait()
                    continue
                addresses = {xid: o.ip_to_str(a.yiaddr) for xid, a in arrived.items()}
                committed = await _active(db, list(addresses.values()))
                for xid, ack in arrived.items():
                    assert ack.message_type == o.ACK
                    assert committed.get(addresses[xid]) == ack.chaddr[:6].hex(":"), \
                        f"Ack for {addresses[xid]} sent before its lease was committed"
                    checked.add(xid)

    acked = {relay.replies[m.xid][0].yiaddr for m in requests}
    assert len(acked) == CLIENTS  # no address given twice

    async def totals(conn) -> Any:
        await lease_events.derive_all(conn)  # history rows and events follow the journal
        return await conn.fetchrow(
            """SELECT count(*) AS leases, count(DISTINCT ip) AS addresses,
                      (SELECT count(*) FROM lease_events WHERE event = 'granted') AS granted,
                      (SELECT count(*) FROM events WHERE topic = 'lease.granted') AS topics
               FROM leases WHERE state = 'active'""")

    assert dict(await db.run(totals)) == {"leases": CLIENTS, "addresses": CLIENTS,
                                          "granted": CLIENTS, "topics": CLIENTS}
    counters = server.counters
    assert counters.sent[o.ACK] == CLIENTS and counters.drops["internal_error"] == 0
    # Group commit: concurrent requests shared database round trips.
    assert counters.batches < counters.committed_ops / 3, (counters.batches,
                                                           counters.committed_ops)


@asynccontextmanager
async def _second_node(db: Database, dsn: str, reply_port: int):  # type: ignore[no-untyped-def]
    config = make_config(dsn, dhcp=dhcp_section(reply_port, listen=["127.0.0.2:0"],
                                                server_id="127.0.0.2"))
    server = dhcp_server(AppState(config=config, db=db))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


async def test_two_nodes_on_one_database_never_share_an_address(
    dhcp: Any, dsn: str, relay_sock: Any
) -> None:
    """A relay forwards every client to both nodes, whose caches and Offer holds know nothing
    of each other: the Ack's insert judges, a client refused so gets a NAK and starts over."""
    relay, db = dhcp.relay, dhcp.db
    count = 400
    acked: dict[bytes, int] = {}
    naks = 0
    async with _second_node(db, dsn, relay_sock.getsockname()[1]) as other:
        nodes = [relay.server, other.addresses[0]]
        waiting = [mac_bytes(200_000 + n) for n in range(count)]
        for _ in range(8):  # DORA rounds; a NAKed client starts over in the next one
            if not waiting:
                break
            discovers = [request(o.DISCOVER, mac, giaddr=RELAY_IP) for mac in waiting]
            # In opposite orders, so that the two nodes offer one address to different clients.
            await _send_all(relay, discovers, nodes[0])
            await _send_all(relay, discovers[::-1], nodes[1])
            xids = [m.xid for m in discovers]
            both = [await _replies(relay, xids, o.OFFER), await _replies(relay, xids, o.OFFER)]
            requests = []
            for n, (mac, m) in enumerate(zip(waiting, discovers, strict=True)):
                # Every other client takes the second node's Offer.
                sid = ("127.0.0.1", "127.0.0.2")[n % 2]
                (chosen,) = [offers[m.xid] for offers in both
                             if offers[m.xid].server_id == o.ip_from_str(sid)]
                requests.append(request(o.REQUEST, mac, xid=m.xid, giaddr=RELAY_IP,
                                        server_id=sid, requested=o.ip_to_str(chosen.yiaddr)))
            for target in nodes:
                await _send_all(relay, requests, target)  # the other node drops it: not for it
            answers = await _replies(relay, [m.xid for m in requests], (o.ACK, o.NAK),
                                     late=o.OFFER)
            nakked = []
            for mac, msg in zip(waiting, requests, strict=True):
                answer = answers[msg.xid]
                if answer.message_type == o.ACK:
                    acked[mac] = answer.yiaddr
                else:
                    nakked.append(mac)
            naks += len(nakked)
            waiting = nakked
        assert not waiting, f"{len(waiting)} clients still without a lease"
        assert len(set(acked.values())) == count
        # The two nodes offered one address to two clients; the database let one have it.
        assert naks > 0 and other.counters.conflicts + dhcp.server.counters.conflicts > 0

    async def check(conn) -> Any:
        return await conn.fetchrow(
            """SELECT count(*) FILTER (WHERE state = 'active') AS active,
                      count(DISTINCT (subnet_id, ip)) FILTER (WHERE state = 'active') AS ips,
                      count(DISTINCT client_key) FILTER (WHERE state = 'active') AS clients
               FROM leases""")

    assert dict(await db.run(check)) == {"active": count, "ips": count, "clients": count}


async def test_the_ack_judges_an_address_another_node_granted_after_our_offer(
    dhcp: Any, dsn: str, relay_sock: Any
) -> None:
    """Node 1 offers X to A (held in its memory only); node 2, which cannot see that hold,
    offers and grants X to B; A's Request at node 1 is refused by the database: NAK, and A's
    next Discover gets another address."""
    relay, db, first = dhcp.relay, dhcp.db, dhcp.server
    a, b = mac_bytes(300_001), mac_bytes(300_002)
    async with _second_node(db, dsn, relay_sock.getsockname()[1]) as second:
        one, two = relay.server, second.addresses[0]

        async def ask(msg: DhcpMessage, node: tuple[str, int]) -> DhcpMessage:
            await relay.sock.sendto(msg.to_bytes(), node)
            (reply,) = (await _replies(relay, [msg.xid], (o.OFFER, o.ACK, o.NAK))).values()
            return reply

        offer_a = await ask(request(o.DISCOVER, a, giaddr=RELAY_IP), one)
        taken = o.ip_to_str(offer_a.yiaddr)
        assert await _active(db, [taken]) == {}  # the Offer wrote nothing
        offer_b = await ask(request(o.DISCOVER, b, giaddr=RELAY_IP, requested=taken), two)
        assert offer_b.yiaddr == offer_a.yiaddr
        ack_b = await ask(request(o.REQUEST, b, giaddr=RELAY_IP, server_id="127.0.0.2",
                                  requested=taken), two)
        assert ack_b.message_type == o.ACK
        nak_a = await ask(request(o.REQUEST, a, giaddr=RELAY_IP, server_id="127.0.0.1",
                                  requested=taken), one)
        assert nak_a.message_type == o.NAK and first.counters.conflicts == 1
        again = await ask(request(o.DISCOVER, a, giaddr=RELAY_IP), one)
        assert again.message_type == o.OFFER and again.yiaddr != offer_a.yiaddr
        ack_a = await ask(request(o.REQUEST, a, giaddr=RELAY_IP, server_id="127.0.0.1",
                                  requested=o.ip_to_str(again.yiaddr)), one)
        assert ack_a.message_type == o.ACK and ack_a.yiaddr == again.yiaddr

    assert await _active(db, [taken, o.ip_to_str(again.yiaddr)]) == {
        taken: b.hex(":"), o.ip_to_str(again.yiaddr): a.hex(":")}


async def test_a_request_for_an_address_this_node_never_offered(dhcp: Any) -> None:
    """SELECTING another server's Offer that reached us too late, or an Offer of ours that
    lapsed: granted when free, NAK when the address is someone else's."""
    relay, db = dhcp.relay, dhcp.db

    async def ask(msg: DhcpMessage) -> DhcpMessage:
        await relay.sock.sendto(msg.to_bytes(), relay.server)
        (reply,) = (await _replies(relay, [msg.xid], (o.ACK, o.NAK))).values()
        return reply

    free = await ask(request(o.REQUEST, mac_bytes(7), giaddr=RELAY_IP, server_id="127.0.0.1",
                             requested="127.77.9.9"))
    assert free.message_type == o.ACK and o.ip_to_str(free.yiaddr) == "127.77.9.9"
    assert await _active(db, ["127.77.9.9"]) == {"127.77.9.9": mac_bytes(7).hex(":")}
    taken = await ask(request(o.REQUEST, mac_bytes(8), giaddr=RELAY_IP, server_id="127.0.0.1",
                              requested="127.77.9.9"))
    assert taken.message_type == o.NAK
