"""Dynamic DNS through the outbox with GSS-TSIG (RFC 3645) against a real BIND 9 with
tkey-gssapi-keytab, in a small MIT Kerberos realm made by the test (krb5-kdc): lease → A/PTR
→ release → gone; a static record; a second client with the same name does not steal it; a
keytab readable by others is refused (shown, failed) → fixed → Replay → delivered."""

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
from tests.support.bind import Bind, need_bind
from tests.support.kerberos import REALM, Realm, need_kerberos

DNS_HOST = "ns1.lan.example"


@pytest.fixture
def realm(tmp_path: Path) -> Iterator[Realm]:
    need_bind()
    need_kerberos()
    made = Realm(tmp_path / "krb", DNS_HOST)
    try:
        made.start()
        with made.exported():  # the appliance runs in this process
            yield made
    finally:
        made.stop()


@pytest.fixture
def bind(tmp_path: Path, realm: Realm) -> Iterator[Bind]:
    server = realm.dns_server(tmp_path / "bind", [ZONE, REVERSE])
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return appliance_config(relay_sock, max_attempts=3, request_timeout_seconds=2.0,
                            claim_timeout_seconds=8.0)


async def test_ddns_with_gss_tsig(appliance, relay_sock, operator, viewer, admin, realm: Realm,
                                  bind: Bind) -> None:
    keytab = realm.keytab("ipamd")
    server = created(await admin.post("/dns-servers", json={
        "name": "ad", "adapter": "ad_gsstsig", "address": "127.0.0.1", "port": bind.port,
        "krb_principal": "ipamd", "krb_realm": REALM, "keytab_path": str(keytab),
        "krb_service_host": DNS_HOST}))
    assert server["secret_ref"] is None and server["keytab_path"] == str(keytab)
    assert server["krb_realm"] == REALM  # realms are case-sensitive: kept as given
    await ddns_subnet(operator, server["id"], "ad_gsstsig")
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        ip = await lease(relay, 1, "laptop")
        await dns_row(viewer, "lease.granted", f"laptop.{ZONE}", {"delivered"})
        await dig(bind, f"laptop.{ZONE}", "A", [ip])
        reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
        await dig(bind, reverse, "PTR", [f"laptop.{ZONE}."])

        other = await lease(relay, 2, "laptop")
        row = await dns_row(viewer, "lease.granted", f"laptop.{ZONE}", {"failed"})
        assert row["last_error"].startswith("YXDOMAIN")
        assert other != ip and bind.dig(f"laptop.{ZONE}", "A") == [ip]

        zone = (await viewer.get("/dns-zones", params={"name": ZONE})).json()["items"][0]
        created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
            "name": "srv", "type": "TXT", "value": '"gss"'}))
        await dns_row(viewer, "ipam.audit", f"srv.{ZONE}", {"delivered"})
        await dig(bind, f"srv.{ZONE}", "TXT", ['"gss"'])

        await release(relay, 1, ip)
        await dns_row(viewer, "lease.released", f"laptop.{ZONE}", {"delivered"})
        await dig(bind, f"laptop.{ZONE}", "A", [])
        await dig(bind, reverse, "PTR", [])

        # A keytab others can read is refused: shown, failed; fixed → Replay → delivered.
        os.chmod(keytab, 0o644)
        tablet = await lease(relay, 4, "tablet")
        row = await dns_row(viewer, "lease.granted", f"tablet.{ZONE}", {"failed"})
        assert row["last_error"].startswith("SECRET") and "0600" in row["last_error"], row
        os.chmod(keytab, 0o600)
        assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
        await dns_row(viewer, "lease.granted", f"tablet.{ZONE}", {"delivered"})
        await dig(bind, f"tablet.{ZONE}", "A", [tablet])
        nursery.cancel_scope.cancel()
