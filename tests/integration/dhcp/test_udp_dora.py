"""The server over UDP on loopback, talked to as a relay would (giaddr set)."""

from __future__ import annotations

from typing import Any

import pytest

from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, seed_subnet
from tests.unit.dhcp.packets import ip, mac_bytes, relay_info, request

pytestmark = pytest.mark.usefixtures("dhcp")


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> dict[str, Any]:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.20")], lease_time=600)

    return await db.transaction(seed)


async def _lease(db: Database, address: str) -> dict[str, Any] | None:
    async def read(conn) -> Any:
        return await conn.fetchrow(
            "SELECT * FROM leases WHERE ip = $1::inet AND state IN ('offered', 'active')", address
        )

    row = await db.run(read)
    return None if row is None else dict(row)


async def _events(db: Database) -> list[tuple[str, str]]:
    async def read(conn) -> Any:
        await lease_events.derive_all(conn)  # history rows and events follow the journal
        return await conn.fetch("SELECT event, host(ip) AS ip FROM lease_events ORDER BY id")

    return [(r["event"], r["ip"]) for r in await db.run(read)]


def offer_subnet(dhcp: Any) -> Any:
    (subnet_id,) = dhcp.server.env.plan.subnets
    return subnet_id


async def test_full_dora_renew_release(dhcp: Any) -> None:
    relay, db = dhcp.relay, dhcp.db
    mac = mac_bytes(1)
    info = relay_info(circuit=b"ge-0/0/1", remote=b"sw1")
    offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP,
                                         extra={o.RELAY_AGENT: info}))
    assert offer is not None and offer.message_type == o.OFFER
    offered = o.ip_to_str(offer.yiaddr)
    assert ip("127.77.1.10") <= offer.yiaddr <= ip("127.77.1.20")
    assert offer.options[o.SERVER_ID] == ip("127.0.0.1").to_bytes(4, "big")
    assert offer.options[o.RELAY_AGENT] == info  # RFC 3046: echoed
    assert offer.options[o.SUBNET_MASK] == bytes((255, 255, 0, 0))
    assert offer.options[o.ROUTER] == ip("127.77.0.1").to_bytes(4, "big")
    assert int.from_bytes(offer.options[o.LEASE_TIME], "big") == 600
    assert await _lease(db, offered) is None  # the Offer is held in memory, not written
    assert dhcp.server.cache.holds.client(offer_subnet(dhcp), b"\x01" + mac).ip == offer.yiaddr

    ack = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, requested=offered,
                                       server_id="127.0.0.1", extra={o.RELAY_AGENT: info,
                                                                     o.HOSTNAME: b"laptop"}))
    assert ack is not None and ack.message_type == o.ACK and ack.yiaddr == offer.yiaddr
    lease = await _lease(db, offered)
    assert lease is not None and lease["state"] == "active"
    assert lease["hostname"] == "laptop"
    assert bytes(lease["circuit_id"]) == b"ge-0/0/1" and bytes(lease["remote_id"]) == b"sw1"
    assert str(lease["giaddr"]) == RELAY_IP

    # REBINDING through the relay (ciaddr set, no option 50/54): renewed.
    renew = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, ciaddr=offered))
    assert renew is not None and renew.message_type == o.ACK and renew.yiaddr == offer.yiaddr
    again = await _lease(db, offered)
    assert again is not None and again["lease_id"] == lease["lease_id"]
    assert again["expires_at"] >= lease["expires_at"]

    release = request(o.RELEASE, mac, giaddr=RELAY_IP, ciaddr=offered, server_id="127.0.0.1")
    await relay.send(release)
    assert await relay.silence(release.xid)
    assert await _lease(db, offered) is None
    assert await _events(db) == [("granted", offered), ("renewed", offered),
                                 ("released", offered)]
