"""Dynamic DNS through the outbox against a real PowerDNS Authoritative (HTTP API, PATCH of
rrsets, X-API-Key from secret_ref): lease → A/PTR → release → gone; a static record; a
second client with the same name does not steal it; PowerDNS down → retried, lease granted →
back → delivered; a wrong API key → HTTP 401 shown, failed, Replay after the fix."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.integration.dhcp.harness import Relay
from tests.integration.dns.ddns import (
    REVERSE,
    ZONE,
    appliance_config,
    ddns_subnet,
    dig,
    dns_row,
    lease,
    release,
)
from tests.integration.ipam.helpers import created
from tests.support.pdns import PowerDns, need_pdns

KEY_ENV, WRONG_ENV = "IPAMD_TEST_PDNS_KEY", "IPAMD_TEST_PDNS_WRONG"


@pytest.fixture
def pdns(tmp_path: Path) -> Iterator[PowerDns]:
    need_pdns()
    server = PowerDns(tmp_path / "pdns")
    server.start()
    for zone in (ZONE, REVERSE):
        server.create_zone(zone)
    os.environ[KEY_ENV] = server.key
    os.environ[WRONG_ENV] = "not-the-key"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return appliance_config(relay_sock)


async def test_ddns_against_powerdns(appliance, relay_sock, operator, viewer, admin,
                                     pdns: PowerDns) -> None:
    server = created(await admin.post("/dns-servers", json={
        "name": "pdns", "adapter": "powerdns_http", "api_url": pdns.api,
        "secret_ref": f"env:{KEY_ENV}"}))
    await ddns_subnet(operator, server["id"], "powerdns_http")
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        ip = await lease(relay, 1, "laptop")
        await dns_row(viewer, "lease.granted", f"laptop.{ZONE}", {"delivered"})
        await dig(pdns, f"laptop.{ZONE}", "A", [ip])
        reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
        await dig(pdns, reverse, "PTR", [f"laptop.{ZONE}."])

        other = await lease(relay, 2, "laptop")
        row = await dns_row(viewer, "lease.granted", f"laptop.{ZONE}", {"failed"})
        assert row["last_error"].startswith("YXDOMAIN")
        assert other != ip and pdns.dig(f"laptop.{ZONE}", "A") == [ip]

        zone = (await viewer.get("/dns-zones", params={"name": ZONE})).json()["items"][0]
        created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
            "name": "mail", "type": "MX", "value": "10 mx1"}))
        await dns_row(viewer, "ipam.audit", f"mail.{ZONE}", {"delivered"})
        await dig(pdns, f"mail.{ZONE}", "MX", [f"10 mx1.{ZONE}."])

        await release(relay, 1, ip)
        await dns_row(viewer, "lease.released", f"laptop.{ZONE}", {"delivered"})
        await dig(pdns, f"laptop.{ZONE}", "A", [])
        await dig(pdns, reverse, "PTR", [])

        pdns.stop()
        printer = await lease(relay, 3, "printer")
        row = await dns_row(viewer, "lease.granted", f"printer.{ZONE}", {"retrying"})
        assert row["last_error"].startswith("UNREACHABLE"), row
        pdns.start()
        row = await dns_row(viewer, "lease.granted", f"printer.{ZONE}", {"delivered", "failed"})
        if row["state"] == "failed":
            assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
            await dns_row(viewer, "lease.granted", f"printer.{ZONE}", {"delivered"})
        await dig(pdns, f"printer.{ZONE}", "A", [printer])

        await admin.patch(f"/dns-servers/{server['id']}",
                          json={"secret_ref": f"env:{WRONG_ENV}"})
        await lease(relay, 4, "tablet")
        row = await dns_row(viewer, "lease.granted", f"tablet.{ZONE}", {"failed"})
        assert row["attempts"] == 4 and row["last_error"].startswith("HTTP 401"), row
        await admin.patch(f"/dns-servers/{server['id']}", json={"secret_ref": f"env:{KEY_ENV}"})
        assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
        await dns_row(viewer, "lease.granted", f"tablet.{ZONE}", {"delivered"})
        nursery.cancel_scope.cancel()
