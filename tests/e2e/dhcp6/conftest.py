"""Fixtures of the DHCPv6 end-to-end tests (test_dhcp6_clients.py: dhclient -6;
test_dhcp6_dhcpcd.py: dhcpcd): a relayed lab (tests/support/dhcp_lab.py, build6) with the
plan seeded in the database and the appliance's DHCPv6 server on the upstream veth."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from ipamd import runtime
from ipamd.db.bridge import Database
from tests.e2e.dhcp6.lab import LEASE_TIME, PD_PREFIX, RESERVED_DUID, pool, reserved
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import Dhcp6Net


@pytest.fixture
def client_tools() -> tuple[str, ...]:
    """Override in a module: the commands its clients need (the test skips without them)."""
    return ("dhclient", "dhcrelay")


@pytest.fixture
def net6(lab: netns.Lab, client_tools: tuple[str, ...]) -> Dhcp6Net:
    reason = netns.require_tools(*client_tools)
    if reason:
        pytest.skip(reason)
    return dhcp_lab.build6(lab)


@pytest.fixture
async def seeded(db: Database, net6: Dhcp6Net) -> dict[str, Any]:
    async def seed(conn: Any) -> dict[str, Any]:
        tenant = await conn.fetchval("SELECT id FROM tenants ORDER BY id LIMIT 1")
        prefix = await conn.fetchval(
            "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, '2001:db8:77::/48') RETURNING id",
            tenant)
        subnet = await conn.fetchval(
            """INSERT INTO subnets (tenant_id, prefix_id, cidr, lease_time_seconds)
               VALUES ($1, $2, $3, $4) RETURNING id""", tenant, prefix, net6.lan, LEASE_TIME)
        await conn.execute("INSERT INTO pools (subnet_id, name, start_ip, end_ip) "
                           "VALUES ($1, 'clients', $2, $3)", subnet, *pool(net6))
        await conn.execute(
            """INSERT INTO dhcp_options (subnet_id, code, payload) VALUES
               ($1, 23, '{"addresses": ["2001:db8:77::53"]}'),
               ($1, 24, '{"domains": ["lab.example"]}')""", subnet)
        await conn.execute(
            """INSERT INTO pd_pools (tenant_id, subnet_id, name, prefix, delegated_length)
               VALUES ($1, $2, 'pd', $3, 64)""", tenant, subnet, PD_PREFIX)
        await conn.execute("INSERT INTO reservations (subnet_id, ip, duid) VALUES ($1, $2, $3)",
                           subnet, reserved(net6), RESERVED_DUID.text)
        return {"subnet_id": str(subnet)}

    return await db.transaction(seed)


@pytest.fixture
def relay_trusted() -> bool:
    return True


@pytest.fixture
def config_overrides(net6: Dhcp6Net, seeded: dict[str, Any],
                     relay_trusted: bool) -> dict[str, dict[str, Any]]:
    trusted = net6.relay_ip if relay_trusted else str(ipaddress.IPv6Address(net6.relay_ip) + 7)
    return {"dhcp6": {"enabled": True, "listen": [f"[{net6.server_ip}]:547"],
                      "trusted_relays": [f"{trusted}/128"]}}


@pytest.fixture
async def relayed(appliance: runtime.Running, net6: Dhcp6Net, tmp_path: Path) -> Dhcp6Net:
    await dhcp_lab.settled6(net6)
    await dhcp_lab.start_relay6(net6, tmp_path / "dhcrelay6.log")
    return net6
