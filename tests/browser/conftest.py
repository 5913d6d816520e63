"""Browser tests: the real appliance (DHCP on, over a loopback relay) and a real Chromium."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from ipamd import runtime
from tests.browser.harness import BrowserThread, chromium_available
from tests.integration.dhcp.harness import Relay, dhcp_section, relay_socket


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserThread]:
    """One Chromium per test module (it is heavy); each test gets a fresh context."""
    if not chromium_available():
        pytest.fail("chromium is missing: `make system-test` installs the Debian package")
    thread = BrowserThread()
    try:
        yield thread
    finally:
        thread.close()


@pytest.fixture
def relay_sock() -> Iterator[socket.socket]:
    sock = relay_socket()
    yield sock
    sock.close()


@pytest.fixture
async def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1])}


@pytest.fixture
async def relay(appliance: runtime.Running, relay_sock: socket.socket,
                nursery: trio.Nursery) -> Relay:
    found = Relay(trio.socket.from_stdlib_socket(relay_sock),
                  appliance.state.services["dhcp"].addresses[0])
    nursery.start_soon(found.run)
    return found


@pytest.fixture
def base(appliance: runtime.Running) -> str:
    return appliance.url("http")
