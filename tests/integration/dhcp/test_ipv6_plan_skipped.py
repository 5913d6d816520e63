"""IPv6 subnets in the database leave the DHCPv4 server as it was: its plan holds only IPv4
subnets, a DHCPv6 option code is never sent as the DHCPv4 option of that number, and a client
whose MAC an IPv6 reservation names gets a DHCPv4 address as any other (the IPv6
objects are the DHCPv6 server's: docs/dhcpv6.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp import plan as plan_mod
from ipamd.dhcp import plan_loader
from tests.integration.dhcp.harness import RELAY_IP, seed_subnet
from tests.unit.dhcp.packets import ip, request

pytestmark = pytest.mark.usefixtures("dhcp")

MAC = b"\x02\x00\x00\x00\x06\x01"
MAC_TEXT = "02:00:00:00:06:01"


async def _seed_v6(conn: Any) -> Any:
    """An IPv6 subnet with every kind of child, stored as the API stores them."""
    v6 = await seed_subnet(conn, "2001:db8:77::/64", gateway=None,
                           pools=[("2001:db8:77::1000", "2001:db8:77::ffff")])
    sid = v6["subnet_id"]
    await conn.execute("INSERT INTO excludes (subnet_id, start_ip, end_ip) VALUES "
                       "($1, '2001:db8:77::10', '2001:db8:77::1f')", sid)
    await conn.execute(
        "INSERT INTO reservations (subnet_id, ip, mac, duid) VALUES "
        "($1, '2001:db8:77::50', $2::macaddr, '00:03:00:01:02:00:00:00:06:01')", sid, MAC_TEXT)
    await conn.execute("INSERT INTO assignments (subnet_id, ip, hostname) VALUES "
                       "($1, '2001:db8:77::60', 'static6')", sid)
    # DHCPv6 option 23 (DNS servers) would be DHCPv4 option 23 (default IP TTL) if misread.
    await conn.execute(
        "INSERT INTO dhcp_options (subnet_id, code, payload) VALUES ($1, 23, $2::jsonb)",
        sid, json.dumps({"addresses": ["2001:db8:77::53"]}))
    return sid


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> dict[str, Any]:
        v4 = await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.20")], lease_time=600)
        v4["v6_subnet_id"] = await _seed_v6(conn)
        return v4

    return await db.transaction(seed)


async def test_ipv6_rows_do_not_reach_the_dhcpv4_plan(dhcp: Any, seeded: dict[str, Any]) -> None:
    plan = dhcp.server.env.plan
    assert set(plan.subnets) == {seeded["subnet_id"]}
    rows = await dhcp.db.run(plan_loader.load_rows)
    for table in ("subnets", "pools", "excludes", "reservations", "assignments", "options"):
        owners = {row.get("subnet_id", row.get("id")) for row in rows[table]}
        assert seeded["v6_subnet_id"] not in owners, table
    rebuilt = plan_mod.build(rows)
    assert set(rebuilt.subnets) == {seeded["subnet_id"]}


async def test_dhcpv4_serves_beside_an_ipv6_subnet(dhcp: Any) -> None:
    relay = dhcp.relay
    # The IPv6 reservation's MAC is no DHCPv4 reservation: a pool address is offered.
    offer = await relay.exchange(request(o.DISCOVER, MAC, giaddr=RELAY_IP))
    assert offer is not None and offer.message_type == o.OFFER
    assert ip("127.77.1.10") <= offer.yiaddr <= ip("127.77.1.20")
    assert 23 not in offer.options
    ack = await relay.exchange(request(o.REQUEST, MAC, giaddr=RELAY_IP,
                                       requested=o.ip_to_str(offer.yiaddr),
                                       server_id="127.0.0.1"))
    assert ack is not None and ack.message_type == o.ACK and ack.yiaddr == offer.yiaddr
