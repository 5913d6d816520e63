"""A DHCP server on loopback against the test's own database, and a fake relay for it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp.server import DhcpServer
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import Relay, dhcp_section, serve


@dataclass
class Running:
    server: DhcpServer
    relay: Relay
    state: AppState
    db: Database


@pytest.fixture
def dhcp_overrides() -> dict[str, Any]:
    """Override in a module to change [dhcp] keys."""
    return {}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    """Override in a module: seed the plan before the server starts; returns ids."""
    return {}


@pytest.fixture
async def dhcp(
    nursery: trio.Nursery, db: Database, dsn: str, relay_sock: socket.socket,
    dhcp_overrides: dict[str, Any], seeded: dict[str, Any],
) -> AsyncIterator[Running]:
    config = make_config(dsn, dhcp=dhcp_section(relay_sock.getsockname()[1], **dhcp_overrides))
    state = AppState(config=config, db=db)
    served = await serve(nursery, state)
    server = served.server
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), server.addresses[0])
    relay_scope = trio.CancelScope()

    async def listen() -> None:
        with relay_scope:
            await relay.run()

    nursery.start_soon(listen)
    try:
        yield Running(server, relay, state, db)
    finally:
        relay_scope.cancel()
        await served.stop()
