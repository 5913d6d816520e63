"""A commit that stalls in the database (here: the leases table locked by another session,
as a slow WAL flush would hold it) does not make the server shed new clients' Discovers:
the time it stalled is not counted as overload, for at most half dhcp.stale_wait_ms. Real
PostgreSQL, real UDP on loopback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, seed_subnet
from tests.unit.dhcp.packets import mac_bytes, request

pytestmark = pytest.mark.usefixtures("dhcp")

OVERLOAD_MS = 300
STALE_MS = 2000  # a stall is ridden out for at most 1 s


@pytest.fixture
def dhcp_overrides() -> dict[str, Any]:
    # One commit worker: the second Request queues behind the stalled batch.
    return {"overload_wait_ms": OVERLOAD_MS, "stale_wait_ms": STALE_MS, "commit_window_us": 0,
            "commit_workers": 1}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> dict[str, Any]:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.200")])

    return await db.transaction(seed)


async def _lock_leases(nursery: trio.Nursery, db: Database, seconds: float) -> None:
    """Another session holds the leases table against writes for ``seconds``; returns
    once it does."""

    async def hold(conn: Any) -> None:
        await conn.execute("LOCK TABLE leases IN SHARE MODE")
        await asyncio.sleep(seconds)

    nursery.start_soon(db.transaction, hold)

    async def held(conn: Any) -> bool:
        return bool(await conn.fetchval(
            "SELECT count(*) FROM pg_locks WHERE relation = 'leases'::regclass"
            " AND mode = 'ShareLock' AND granted"))

    with trio.fail_after(10):
        while not await db.run(held):
            await trio.sleep(0.01)


async def _offered_and_requested(relay: Any, n: int) -> int:
    """Client n's Discover is Offered; its Request goes to the committer. Returns the xid."""
    mac = mac_bytes(n)
    offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP), timeout=5)
    assert offer is not None and offer.message_type == o.OFFER
    selecting = request(o.REQUEST, mac, giaddr=RELAY_IP, requested=o.ip_to_str(offer.yiaddr),
                        server_id="127.0.0.1")
    await relay.send(selecting)
    return selecting.xid


async def test_new_clients_are_offered_while_a_commit_stalls_and_shed_past_the_cap(
        dhcp: Any, nursery: trio.Nursery) -> None:
    relay, server = dhcp.relay, dhcp.server
    drops = server.counters.drops

    # A stall of 1.2 s: one client's grant is held in the database, another's queues behind
    # it; a new client 0.6 s later (twice the overload bound) is offered all the same.
    await _lock_leases(nursery, dhcp.db, 1.2)
    waiting = [await _offered_and_requested(relay, n) for n in (1, 2)]
    await trio.sleep(0.6)
    assert server.committer.queued == 1 and server.committer.in_flight == 1
    newcomer = await relay.exchange(request(o.DISCOVER, mac_bytes(3), giaddr=RELAY_IP),
                                    timeout=5)
    assert newcomer is not None and newcomer.message_type == o.OFFER
    assert drops["overload"] == 0
    for xid in waiting:  # answered once the lock is gone
        ack = await relay.reply(xid, timeout=10)
        assert ack is not None and ack.message_type == o.ACK

    # A stall longer than the cap: 1.4 s into it, a new client is turned away.
    await _lock_leases(nursery, dhcp.db, 3.0)
    waiting = [await _offered_and_requested(relay, n) for n in (4, 5)]
    await trio.sleep(1.4)
    assert server.committer.queued == 1
    shed = request(o.DISCOVER, mac_bytes(6), giaddr=RELAY_IP)
    await relay.send(shed)
    assert await relay.silence(shed.xid, 0.3)
    assert drops["overload"] == 1
    # When the lock goes (3 s): the held grant is Acked; the queued one waited past the
    # stale bound and is dropped unwritten (its client retransmits).
    ack = await relay.reply(waiting[0], timeout=10)
    assert ack is not None and ack.message_type == o.ACK
    assert await relay.silence(waiting[1], 1.0)
    assert drops["stale"] == 1
