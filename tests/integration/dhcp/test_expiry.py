"""The expiry worker with a running server: leases end, the cache follows; Offer holds lapse
in the server's memory (they have no row)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp import expiry
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, seed_subnet
from tests.unit.dhcp.packets import mac_bytes, request


@pytest.fixture
def dhcp_overrides() -> dict[str, Any]:
    return {"offer_hold_seconds": 1}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> dict[str, Any]:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.11")], lease_time=1)

    return await db.transaction(seed)


async def _states(db: Database) -> list[tuple[str, str]]:
    async def read(conn) -> Any:
        return await conn.fetch("SELECT host(ip) AS ip, state FROM leases ORDER BY ip")

    return [(r["ip"], r["state"]) for r in await db.run(read)]


async def test_expiry_ends_leases_and_lapsed_holds(dhcp: Any) -> None:
    relay, db, server = dhcp.relay, dhcp.db, dhcp.server
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(1), giaddr=RELAY_IP))
    assert offer is not None
    ack = await relay.exchange(request(o.REQUEST, mac_bytes(1), giaddr=RELAY_IP,
                                       server_id="127.0.0.1",
                                       requested=o.ip_to_str(offer.yiaddr)))
    assert ack is not None and ack.message_type == o.ACK
    hold = await relay.exchange(request(o.DISCOVER, mac_bytes(2), giaddr=RELAY_IP))
    assert hold is not None and hold.yiaddr != offer.yiaddr
    # Both addresses of the pool are taken now.
    full = request(o.DISCOVER, mac_bytes(3), giaddr=RELAY_IP)
    await relay.send(full)
    assert await relay.silence(full.xid)
    assert server.counters.drops["no_address"] == 1

    assert await _states(db) == [(o.ip_to_str(offer.yiaddr), "active")]  # no row for a hold
    assert server.cache.counts()["offered"] == 1

    await trio.sleep(1.2)
    assert await expiry.sweep(dhcp.state) == 1
    assert await _states(db) == [(o.ip_to_str(offer.yiaddr), "expired")]
    assert len(server.cache) == 0 and server.counters.leases["expired"] == 1
    assert server.cache.counts()["offered"] == 0  # the hold lapsed in memory

    async def topics(conn) -> Any:
        await lease_events.derive_all(conn)  # history rows and events follow the journal
        return [r["topic"] for r in await conn.fetch(
            "SELECT topic FROM events WHERE topic LIKE 'lease.%' ORDER BY id")]

    assert await db.run(topics) == ["lease.granted", "lease.expired"]
    # The freed pool serves again, and the expired client's renewal is refused.
    again = await relay.exchange(request(o.DISCOVER, mac_bytes(3), giaddr=RELAY_IP))
    assert again is not None and again.message_type == o.OFFER
    nak = await relay.exchange(request(o.REQUEST, mac_bytes(1), giaddr=RELAY_IP,
                                       ciaddr=o.ip_to_str(offer.yiaddr)))
    assert nak is not None and nak.message_type == o.NAK


async def test_worker_runs_on_its_interval(dhcp: Any, nursery: trio.Nursery) -> None:
    relay, db = dhcp.relay, dhcp.db
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(5), giaddr=RELAY_IP))
    assert offer is not None
    ack = await relay.exchange(request(o.REQUEST, mac_bytes(5), giaddr=RELAY_IP,
                                       server_id="127.0.0.1",
                                       requested=o.ip_to_str(offer.yiaddr)))
    assert ack is not None and ack.message_type == o.ACK
    await nursery.start(expiry.run, dhcp.state)  # every 0.2 s (harness config)
    # The worker forgets the lease once its transaction has committed, so this session may
    # see the row expired a moment before the cache is told: wait for both.
    with trio.fail_after(5):
        while "active" in dict(await _states(db)).values() or len(dhcp.server.cache):
            await trio.sleep(0.1)
    assert "expired" in dict(await _states(db)).values() and len(dhcp.server.cache) == 0
