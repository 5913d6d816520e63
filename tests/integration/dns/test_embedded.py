"""The embedded authoritative server in the running appliance: dig gets A/PTR/SOA/NXDOMAIN
from static records and leases; a real BIND 9 is its secondary (AXFR), and DNS NOTIFY after a
change brings the new serial and record to it."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.integration.dhcp.harness import Relay, dhcp_section
from tests.integration.dns.ddns import REVERSE, ZONE, lease
from tests.integration.ipam.helpers import created
from tests.support.bind import DIG, Bind, free_port, need_bind
from tests.support.daemons import dig_short

DNS_PORT = free_port()
SECONDARY_PORT = free_port()


def _dig(port: int, name: str, rtype: str = "A", *extra: str) -> str:
    out = subprocess.run([DIG, "+time=1", "+tries=2", "-p", str(port), "@127.0.0.1", name,
                          rtype, *extra], capture_output=True, text=True, timeout=15,
                         check=False)
    return out.stdout


# The appliance runs in this test's trio loop: dig must run in a thread, never block it.
async def dig(port: int, name: str, rtype: str = "A", *extra: str) -> str:
    return await trio.to_thread.run_sync(_dig, port, name, rtype, *extra)


async def short(port: int, name: str, rtype: str = "A") -> list[str]:
    return await trio.to_thread.run_sync(dig_short, port, name, rtype)


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    need_bind()
    return {
        "dhcp": dhcp_section(relay_sock.getsockname()[1]),
        "dns": {"enabled": True, "listen": [f"127.0.0.1:{DNS_PORT}"],
                "ns_name": "ns1.lan.example", "hostmaster": "hostmaster.lan.example",
                "secondaries": [f"127.0.0.1:{SECONDARY_PORT}"], "refresh_seconds": 5.0},
    }


@pytest.fixture
def secondary(tmp_path: Path) -> Iterator[Bind]:
    server = Bind(tmp_path / "secondary", [ZONE, REVERSE], port=SECONDARY_PORT,
                  primary=("127.0.0.1", DNS_PORT))
    try:
        yield server
    finally:
        server.stop()


async def _until(fn: Any, want: Any, timeout: float = 10.0) -> None:
    with trio.fail_after(timeout):
        while await trio.to_thread.run_sync(fn) != want:
            await trio.sleep(0.2)


async def test_embedded_answers_and_feeds_a_bind_secondary(appliance, relay_sock, operator,
                                                           admin, secondary: Bind) -> None:
    server = created(await admin.post("/dns-servers", json={"name": "self",
                                                            "adapter": "embedded"}))
    zone = created(await operator.post("/dns-zones", json={"name": ZONE,
                                                           "server_id": server["id"]}))
    created(await operator.post("/dns-zones", json={"name": REVERSE, "server_id": server["id"]}))
    created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
        "name": "www", "type": "A", "value": "127.77.9.9"}))
    prefix = created(await operator.post("/prefixes", json={"cidr": "127.77.0.0/16"}))
    subnet = created(await operator.post("/subnets", json={
        "prefix_id": prefix["id"], "cidr": "127.77.0.0/16", "gateway": "127.77.0.1",
        "ddns_adapter": "embedded", "ddns_server_id": server["id"], "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE}))
    created(await operator.post(f"/subnets/{subnet['id']}/pools", json={
        "name": "clients", "start_ip": "127.77.5.1", "end_ip": "127.77.5.50"}))

    await _until(lambda: dig_short(DNS_PORT, f"www.{ZONE}"), ["127.77.9.9"])
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        ip = await lease(relay, 1, "laptop")
        await _until(lambda: dig_short(DNS_PORT, f"laptop.{ZONE}"), [ip])
        reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
        assert await short(DNS_PORT, reverse, "PTR") == [f"laptop.{ZONE}."]
        nursery.cancel_scope.cancel()
    nx = await dig(DNS_PORT, f"nothing.{ZONE}")
    assert "status: NXDOMAIN" in nx and "flags: qr aa" in nx and "SOA" in nx
    nodata = await dig(DNS_PORT, f"www.{ZONE}", "AAAA")
    assert "status: NOERROR" in nodata and "ANSWER: 0" in nodata
    assert "status: REFUSED" in await dig(DNS_PORT, "example.org")
    # AXFR is for the secondaries only (127.0.0.1 is one here): it is a full zone.
    axfr = await dig(DNS_PORT, ZONE, "AXFR")
    assert axfr.count("\tSOA\t") == 2 and f"laptop.{ZONE}." in axfr, axfr
    # TCP queries work as UDP ones do.
    assert f"www.{ZONE}." in await dig(DNS_PORT, f"www.{ZONE}", "A", "+tcp")

    # BIND as the secondary: the first transfer, then a change announced by NOTIFY.
    await trio.to_thread.run_sync(secondary.start)
    serial = (await short(DNS_PORT, ZONE, "SOA"))[0].split()[2]
    await _until(lambda: [x.split()[2] for x in dig_short(SECONDARY_PORT, ZONE, "SOA")],
                 [serial], 20)
    assert await short(SECONDARY_PORT, f"www.{ZONE}") == ["127.77.9.9"]
    await trio.sleep(1.1)  # serials are unix seconds at least: let the next one be later
    created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
        "name": "new", "type": "TXT", "value": '"via notify"'}))
    # BIND's own refresh timer is an hour away (SOA refresh 3600): only NOTIFY explains this.
    await _until(lambda: dig_short(DNS_PORT, f"new.{ZONE}", "TXT"), ['"via notify"'], 20)
    notified = appliance.state.counters.dns.notifies
    await _until(lambda: dig_short(SECONDARY_PORT, f"new.{ZONE}", "TXT"), ['"via notify"'], 20)
    assert int((await short(SECONDARY_PORT, ZONE, "SOA"))[0].split()[2]) > int(serial)
    assert appliance.state.counters.dns.notifies >= max(notified, 1)
