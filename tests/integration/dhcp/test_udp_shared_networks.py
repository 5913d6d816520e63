"""A shared network over UDP on loopback, the server talked to as a relay would
(docs/api-ipam.md, "Shared networks"): the plan loaded from the database groups A and B,
A's one address goes first, then B's pool serves with B's mask and router; the lease is B's
and renews through the relay's subnet A."""

from __future__ import annotations

from typing import Any

import pytest

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import DEFAULT_TENANT, RELAY_IP
from tests.unit.dhcp.packets import ip, mac_bytes, request

pytestmark = pytest.mark.usefixtures("dhcp")


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> dict[str, Any]:
        prefix = await conn.fetchval(
            "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, '127.77.0.0/16') RETURNING id",
            DEFAULT_TENANT)
        group = await conn.fetchval(
            "INSERT INTO shared_networks (tenant_id, name) VALUES ($1, 'link') RETURNING id",
            DEFAULT_TENANT)
        ids = {}
        for name, cidr, gateway, start, end in (
                ("a", "127.77.0.0/24", RELAY_IP, "127.77.0.50", "127.77.0.50"),
                ("b", "127.77.8.0/22", "127.77.8.1", "127.77.8.10", "127.77.8.19")):
            ids[name] = await conn.fetchval(
                """INSERT INTO subnets (tenant_id, prefix_id, cidr, gateway, lease_time_seconds,
                                        shared_network_id)
                   VALUES ($1, $2, $3, $4, $5, $6) RETURNING id""",
                DEFAULT_TENANT, prefix, cidr, gateway, 600 if name == "a" else 1200, group)
            await conn.execute(
                """INSERT INTO pools (subnet_id, name, start_ip, end_ip)
                   VALUES ($1, 'dyn', $2, $3)""", ids[name], start, end)
        return ids

    return await db.transaction(seed)


async def _dora(dhcp: Any, n: int) -> Any:
    mac = mac_bytes(n)
    offer = await dhcp.relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP))
    assert offer is not None and offer.message_type == o.OFFER
    ack = await dhcp.relay.exchange(request(
        o.REQUEST, mac, giaddr=RELAY_IP, requested=o.ip_to_str(offer.yiaddr),
        server_id="127.0.0.1"))
    assert ack is not None and ack.message_type == o.ACK and ack.yiaddr == offer.yiaddr
    return ack


async def test_the_relays_subnet_then_the_other_members_pool(
    dhcp: Any, seeded: dict[str, Any]
) -> None:
    first = await _dora(dhcp, 1)
    assert first.yiaddr == ip("127.77.0.50")
    assert first.options[o.SUBNET_MASK] == bytes((255, 255, 255, 0))
    second = await _dora(dhcp, 2)
    assert second.yiaddr == ip("127.77.8.10")
    assert second.options[o.SUBNET_MASK] == bytes((255, 255, 252, 0))
    assert second.options[o.ROUTER] == ip("127.77.8.1").to_bytes(4, "big")
    assert int.from_bytes(second.options[o.LEASE_TIME], "big") == 1200
    rows = await dhcp.db.run(lambda conn: conn.fetch(
        "SELECT host(ip) AS ip, subnet_id FROM leases WHERE state = 'active' ORDER BY ip"))
    assert [(r["ip"], r["subnet_id"]) for r in rows] == [
        ("127.77.0.50", seeded["a"]), ("127.77.8.10", seeded["b"])]
    # Rebinding through the relay's subnet A: B's lease, acknowledged (not a wrong network).
    renew = await dhcp.relay.exchange(request(o.REQUEST, mac_bytes(2), giaddr=RELAY_IP,
                                              ciaddr="127.77.8.10"))
    assert renew is not None and renew.message_type == o.ACK
    assert renew.options[o.ROUTER] == ip("127.77.8.1").to_bytes(4, "big")
    # A third client: B's next address (A is still full).
    assert (await _dora(dhcp, 3)).yiaddr == ip("127.77.8.11")
