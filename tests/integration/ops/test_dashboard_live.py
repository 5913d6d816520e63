"""The dashboard shows this node's DHCP counters as they are now, not as of its last
heartbeat (which here is an hour away)."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, seed_subnet
from tests.unit.dhcp.packets import mac_bytes, request


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> Any:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.20")])

    return await db.transaction(seed)


@pytest.fixture
async def config_overrides(relay_sock: socket.socket,
                           seeded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "ops": {"heartbeat_seconds": 3600.0, "node_down_seconds": 7200.0}}


async def test_dashboard_counts_this_nodes_packets_at_once(
    appliance: runtime.Running, relay_sock: socket.socket, nursery: trio.Nursery,
    viewer: httpx.AsyncClient, seeded: dict[str, Any],
) -> None:
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock),
                  appliance.state.dhcp.addresses[0])  # type: ignore[union-attr]
    nursery.start_soon(relay.run)
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(7), giaddr=RELAY_IP))
    assert offer is not None and offer.message_type == o.OFFER
    dash = (await viewer.get("/dashboard")).json()
    mine = [row for row in dash["dhcp"] if row["status"] == "up"]
    assert len(mine) == 1, dash["dhcp"]
    assert mine[0]["received"].get("discover") == 1
    assert mine[0]["sent"].get("offer") == 1
