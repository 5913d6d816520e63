"""A DHCPv6 server on [::1] against the test's own database, and a fake relay for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp6.server import Dhcp6Server
from ipamd.runtime.dhcp_servers import dhcp6_server, serve_dhcp6
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp6.harness import Relay6, dhcp6_section, relay_socket


@dataclass
class Running6:
    server: Dhcp6Server
    relay: Relay6
    state: AppState
    db: Database


@pytest.fixture
def dhcp6_overrides() -> dict[str, Any]:
    """Override in a module to change [dhcp6] keys."""
    return {}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    """Override in a module: seed the plan before the server starts; returns ids."""
    return {}


async def start_server(nursery: trio.Nursery, state: AppState) -> tuple[Dhcp6Server,
                                                                           trio.CancelScope,
                                                                           trio.Event]:
    server = dhcp6_server(state)
    scope = trio.CancelScope()
    done = trio.Event()

    async def run(*, task_status: trio.TaskStatus[None]) -> None:
        try:
            with scope:  # registered as the runtime registers it (state.dhcp6)
                await serve_dhcp6(state, task_status=task_status, server=server)
        finally:
            done.set()

    await nursery.start(run)
    return server, scope, done


@pytest.fixture
async def dhcp6(nursery: trio.Nursery, db: Database, dsn: str, dhcp6_overrides: dict[str, Any],
                seeded: dict[str, Any]) -> AsyncIterator[Running6]:
    config = make_config(dsn, dhcp6=dhcp6_section(**dhcp6_overrides))
    state = AppState(config=config, db=db)
    server, scope, done = await start_server(nursery, state)
    relay = Relay6(trio.socket.from_stdlib_socket(relay_socket()), server.addresses[0])
    relay_scope = trio.CancelScope()

    async def listen() -> None:
        with relay_scope:
            await relay.run()

    nursery.start_soon(listen)
    try:
        yield Running6(server, relay, state, db)
    finally:
        relay_scope.cancel()
        scope.cancel()
        await done.wait()
        relay.sock.close()
