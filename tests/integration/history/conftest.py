"""The appliance with its DHCP server on loopback, a plan made through the API, and a relay.

History is then produced the way it is in production: clients talk DHCP through the
relay, the server commits lease_events, the fold trigger builds intervals.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import trio

from ipamd.db.bridge import Database
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section
from tests.integration.history.dhcp_clients import Dhcp

CIDR = "127.77.0.0/16"
PLAN_WAIT = 10.0  # seconds for the server to load a plan made through the API


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1],
                                 decline_probation_seconds=3600)}


@pytest.fixture
def pools() -> list[tuple[str, str]]:
    """Override (or parametrize) to change the subnet's pools."""
    return [("127.77.1.10", "127.77.1.19")]


@pytest.fixture
def lease_seconds() -> int:
    return 600


@dataclass
class Net:
    subnet_id: str
    dhcp: Dhcp
    admin: httpx.AsyncClient


@pytest.fixture
async def net(
    appliance: Any, admin: httpx.AsyncClient, db: Database, relay_sock: socket.socket,
    nursery: trio.Nursery, pools: list[tuple[str, str]], lease_seconds: int,
) -> AsyncIterator[Net]:
    made = await admin.post("/prefixes", json={"cidr": CIDR})
    assert made.status_code == 201, made.text
    subnet = await admin.post("/subnets", json={
        "prefix_id": made.json()["id"], "cidr": CIDR, "gateway": RELAY_IP,
        "lease_time_seconds": lease_seconds})
    assert subnet.status_code == 201, subnet.text
    subnet_id = subnet.json()["id"]
    for index, (start, end) in enumerate(pools):
        pool = await admin.post(f"/subnets/{subnet_id}/pools",
                                json={"name": f"pool{index}", "start_ip": start, "end_ip": end})
        assert pool.status_code == 201, pool.text
    server = appliance.state.dhcp
    with trio.fail_after(PLAN_WAIT):  # the server reloads on the plan's NOTIFY
        while True:
            loaded = server.env.plan.subnets.get(uuid.UUID(subnet_id))
            if loaded is not None and len(loaded.pools) == len(pools):
                break
            await trio.sleep(0.05)
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), server.addresses[0])
    scope = trio.CancelScope()

    async def listen() -> None:
        with scope:
            await relay.run()

    nursery.start_soon(listen)
    try:
        yield Net(subnet_id=subnet_id, dhcp=Dhcp(relay, db), admin=admin)
    finally:
        scope.cancel()
