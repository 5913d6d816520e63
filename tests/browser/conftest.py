"""Browser tests: the real appliance (DHCP on, over a loopback relay) and a real Chromium."""

from __future__ import annotations

import datetime
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.dhcp import options as o
from tests.browser.harness import BrowserThread, chromium_available
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section
from tests.unit.dhcp.packets import mac_bytes, request


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
async def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1])}


@pytest.fixture
async def relay(appliance: runtime.Running, relay_sock: socket.socket,
                nursery: trio.Nursery) -> Relay:
    found = Relay(trio.socket.from_stdlib_socket(relay_sock),
                  appliance.state.dhcp.addresses[0])  # type: ignore[union-attr]
    nursery.start_soon(found.run)
    return found


@pytest.fixture
def base(appliance: runtime.Running) -> str:
    return appliance.url("http")


XSS_HOSTNAME = "<img src=x onerror=alert(1)>"


async def lease(relay: Relay, n: int, hostname: str) -> str:
    """A lease granted by the real DHCP server (DISCOVER/OFFER/REQUEST/ACK through the relay)."""
    mac = mac_bytes(n)
    for _ in range(40):  # the plan may still be loading
        offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP), timeout=0.5)
        if offer is not None:
            break
    assert offer is not None, "no OFFER"
    address = o.ip_to_str(offer.yiaddr)
    ack = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, server_id="127.0.0.1",
                                       requested=address, extra={o.HOSTNAME: hostname.encode()}))
    assert ack is not None and ack.message_type == o.ACK
    return address


@pytest.fixture
async def plan(appliance: runtime.Running, admin: httpx.AsyncClient, relay: Relay) -> dict:
    """A prefix, a /24 with every kind of child, a moment before any lease, then two leases."""

    async def made(path: str, body: dict) -> dict:
        reply = await admin.post(path, json=body)
        assert reply.status_code == 201, reply.text
        return reply.json()

    prefix = await made("/prefixes", {"cidr": "127.77.0.0/16", "description": "lab prefix"})
    subnet = await made("/subnets", {"prefix_id": prefix["id"], "cidr": "127.77.0.0/24",
                                     "name": "lab-a", "gateway": "127.77.0.1"})
    sid = subnet["id"]
    pool = await made(f"/subnets/{sid}/pools", {"name": "dyn", "start_ip": "127.77.0.10",
                                                "end_ip": "127.77.0.60"})
    await made(f"/subnets/{sid}/excludes", {"start_ip": "127.77.0.200", "end_ip": "127.77.0.209"})
    await made(f"/subnets/{sid}/reservations", {"ip": "127.77.0.100", "mac": "02:00:00:00:99:01",
                                                "hostname": "reserved-host"})
    await made(f"/subnets/{sid}/assignments", {"ip": "127.77.0.150", "hostname": "printer",
                                               "description": "2nd floor"})
    await made(f"/subnets/{sid}/options", {"code": 6, "payload": {"addresses": ["127.77.0.53"]}})
    await made("/client-classes", {"name": "phones", "match": "vendor_class", "value": "polycom"})
    await made("/tenants", {"name": "acme", "description": "a customer"})
    # The DHCP server reloads its plan on NOTIFY (lease() retries until it offers).
    await trio.sleep(1.1)
    before = datetime.datetime.now(datetime.UTC)
    await trio.sleep(1.1)
    xss = await lease(relay, 1, XSS_HOSTNAME)
    beta = await lease(relay, 2, "beta")
    return {"prefix": prefix, "subnet": subnet, "pool": pool, "before": before,
            "xss_ip": xss, "beta_ip": beta}
