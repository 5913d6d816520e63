"""Many clients at once over loopback: no address twice, every Ack persisted before it is sent,
and two servers (two appliance nodes) on one Postgres never hand out one address twice."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import DhcpMessage
from ipamd.dhcp.server import DhcpServer
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, seed_subnet
from tests.unit.dhcp.packets import mac_bytes, request

CLIENTS = 2000
DEADLINE = 60.0


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


async def _replies(relay: Relay, xids: list[int], mtype: int,
                   late: int | None = None) -> dict[int, DhcpMessage]:
    """The first reply of type ``mtype`` per xid; ``late`` is a type that may still trail in."""
    got: dict[int, DhcpMessage] = {}
    with trio.fail_after(DEADLINE):
        while len(got) < len(xids):
            for xid in xids:
                while xid not in got and relay.replies.get(xid):
                    reply = relay.replies[xid].pop(0)
                    if reply.message_type == late:
                        continue
                    assert reply.message_type == mtype, reply
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
    server = DhcpServer(AppState(config=config, db=db))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


async def test_two_nodes_on_one_database_never_share_an_address(
    dhcp: Any, dsn: str, relay_sock: Any
) -> None:
    """A relay forwards every client to both nodes, whose caches know nothing of each other."""
    relay, db = dhcp.relay, dhcp.db
    count = 400
    async with _second_node(db, dsn, relay_sock.getsockname()[1]) as other:
        nodes = {"127.0.0.1": relay.server, "127.0.0.2": other.addresses[0]}
        macs = [mac_bytes(200_000 + n) for n in range(count)]
        discovers = [request(o.DISCOVER, mac, giaddr=RELAY_IP) for mac in macs]
        for target in nodes.values():
            await _send_all(relay, discovers, target)
        offers = await _replies(relay, [m.xid for m in discovers], o.OFFER)
        requests = []
        for mac, m in zip(macs, discovers, strict=True):
            first = offers[m.xid]  # the client takes the first Offer it got
            sid = o.ip_to_str(int.from_bytes(first.options[o.SERVER_ID], "big"))
            requests.append(request(o.REQUEST, mac, xid=m.xid, giaddr=RELAY_IP, server_id=sid,
                                    requested=o.ip_to_str(first.yiaddr)))
        for msg in requests:
            relay.replies.pop(msg.xid, None)  # the second Offers
        for target in nodes.values():
            await _send_all(relay, requests, target)  # the other node drops it: not for it
        acks = await _replies(relay, [m.xid for m in requests], o.ACK, late=o.OFFER)
        assert len({a.yiaddr for a in acks.values()}) == count
        assert other.counters.drops["not_for_us"] + dhcp.server.counters.drops["not_for_us"] \
            == count
        # The caches picked alike; the unique indexes made one node pick again.
        assert other.counters.conflicts + dhcp.server.counters.conflicts > 0

    async def check(conn) -> Any:
        return await conn.fetchrow(
            """SELECT count(*) FILTER (WHERE state = 'active') AS active,
                      count(DISTINCT (subnet_id, ip)) FILTER (WHERE state = 'active') AS ips,
                      count(DISTINCT client_key) FILTER (WHERE state = 'active') AS clients
               FROM leases""")

    assert dict(await db.run(check)) == {"active": count, "ips": count, "clients": count}
