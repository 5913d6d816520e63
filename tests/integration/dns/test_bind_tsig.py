"""Dynamic DNS through the outbox against a real BIND 9 (RFC 2136 + TSIG, RFC 4703 DHCID):
leases over a loopback relay → A/PTR at BIND → release → gone; a static record; a second
client with the same name does not steal it; BIND down → retried, the lease granted anyway →
back → delivered; a wrong TSIG secret → BADSIG, failed, Replay after the fix."""

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
    ZONE,
    appliance_config,
    bind_serving,
    ddns_subnet,
    dig,
    dns_row,
    lease,
    release,
)
from tests.integration.ipam.helpers import created
from tests.support.bind import KEY_NAME, Bind

SECRET_ENV, WRONG_ENV = "IPAMD_TEST_TSIG", "IPAMD_TEST_TSIG_WRONG"


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Bind]:
    os.environ[WRONG_ENV] = "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldCB3cm9uZyE="
    with bind_serving(tmp_path, SECRET_ENV) as server:
        yield server


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return appliance_config(relay_sock)


async def test_ddns_against_bind(appliance, relay_sock, operator, viewer, admin,
                                 bind: Bind) -> None:
    server = created(await admin.post("/dns-servers", json={
        "name": "bind", "adapter": "bind_tsig", "address": "127.0.0.1", "port": bind.port,
        "tsig_key_name": KEY_NAME, "secret_ref": f"env:{SECRET_ENV}"}))
    await ddns_subnet(operator, server["id"], "bind_tsig")
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)

        # A lease → A and PTR at BIND; the lease shows the registered name.
        ip = await lease(relay, 1, "Laptop")
        row = await dns_row(viewer, "lease.granted", f"laptop.{ZONE}", {"delivered"})
        assert row["dns"]["server_id"] == server["id"] and row["dns"]["ip"] == ip
        await dig(bind, f"laptop.{ZONE}", "A", [ip])
        reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
        await dig(bind, reverse, "PTR", [f"laptop.{ZONE}."])
        assert len(bind.dig(f"laptop.{ZONE}", "DHCID")) == 1
        leases = (await viewer.get("/leases", params={"ip": ip})).json()["items"]
        assert leases[0]["fqdn"] == f"laptop.{ZONE}"

        # A second client with the same name gets its lease, not the name (RFC 4703).
        other = await lease(relay, 2, "laptop")
        row = await dns_row(viewer, "lease.granted", f"laptop.{ZONE}", {"failed"})
        assert row["last_error"].startswith("YXDOMAIN") and "another client" in row["last_error"]
        assert other != ip and bind.dig(f"laptop.{ZONE}", "A") == [ip]

        # A static record appears.
        zone = (await viewer.get("/dns-zones", params={"name": ZONE})).json()["items"][0]
        created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
            "name": "www", "type": "A", "value": "127.77.9.9"}))
        await dns_row(viewer, "ipam.audit", f"www.{ZONE}", {"delivered"})
        await dig(bind, f"www.{ZONE}", "A", ["127.77.9.9"])

        # Release → both records gone.
        await release(relay, 1, ip)
        await dns_row(viewer, "lease.released", f"laptop.{ZONE}", {"delivered"})
        await dig(bind, f"laptop.{ZONE}", "A", [])
        await dig(bind, reverse, "PTR", [])

        # BIND down: the lease is granted anyway, the row retries with the error shown.
        bind.stop()
        printer = await lease(relay, 3, "printer")
        row = await dns_row(viewer, "lease.granted", f"printer.{ZONE}", {"retrying"})
        assert row["attempts"] >= 1 and row["last_error"].split(":")[0] in (
            "TIMEOUT", "UNREACHABLE")
        bind.start()
        row = await dns_row(viewer, "lease.granted", f"printer.{ZONE}", {"delivered", "failed"})
        if row["state"] == "failed":  # the attempts ran out before BIND was back: Replay
            assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
            row = await dns_row(viewer, "lease.granted", f"printer.{ZONE}", {"delivered"})
        await dig(bind, f"printer.{ZONE}", "A", [printer])

        # A wrong TSIG secret: BADSIG shown, retried, failed; fixed → Replay → delivered.
        await admin.patch(f"/dns-servers/{server['id']}",
                          json={"secret_ref": f"env:{WRONG_ENV}"})
        tablet = await lease(relay, 4, "tablet")
        row = await dns_row(viewer, "lease.granted", f"tablet.{ZONE}", {"failed"})
        assert row["attempts"] == 4 and row["last_error"].startswith("BADSIG"), row
        detail = (await viewer.get(f"/outbox/{row['id']}")).json()
        assert [h["response"] for h in detail["history"]] == ["BADSIG"] * 4
        assert bind.dig(f"tablet.{ZONE}", "A") == []
        await admin.patch(f"/dns-servers/{server['id']}",
                          json={"secret_ref": f"env:{SECRET_ENV}"})
        assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
        await dns_row(viewer, "lease.granted", f"tablet.{ZONE}", {"delivered"})
        await dig(bind, f"tablet.{ZONE}", "A", [tablet])
        nursery.cancel_scope.cancel()
