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

import httpx
import pytest
import trio

from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, relay_socket
from tests.integration.ipam.helpers import created
from tests.support.bind import KEY_NAME, Bind, need_bind
from tests.unit.dhcp.packets import mac_bytes, request

ZONE, REVERSE = "lan.example", "77.127.in-addr.arpa"
SECRET_ENV, WRONG_ENV = "IPAMD_TEST_TSIG", "IPAMD_TEST_TSIG_WRONG"
WAIT = 20.0


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Bind]:
    need_bind()
    server = Bind(tmp_path / "bind", [ZONE, REVERSE])
    server.start()
    os.environ[SECRET_ENV] = server.secret
    os.environ[WRONG_ENV] = "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldCB3cm9uZyE="
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def relay_sock() -> Iterator[socket.socket]:
    sock = relay_socket()
    yield sock
    sock.close()


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return {
        "dhcp": dhcp_section(relay_sock.getsockname()[1]),
        "outbox": {"enabled": True, "workers": 2, "max_attempts": 4,
                   "backoff_base_seconds": 0.05, "backoff_multiplier": 2.0,
                   "backoff_max_seconds": 0.3, "backoff_jitter": 0.0,
                   "request_timeout_seconds": 1.0, "claim_timeout_seconds": 4.0,
                   "poll_interval_seconds": 0.2},
    }


async def _lease(relay: Relay, n: int, hostname: str) -> str:
    mac = mac_bytes(900_000 + n)
    extra = {o.HOSTNAME: hostname.encode()}
    for _ in range(20):  # the plan reloads on NOTIFY after the API's changes
        discover = request(o.DISCOVER, mac, giaddr=RELAY_IP, extra=extra)
        offer = await relay.exchange(discover, timeout=0.5)
        if offer is not None:
            break
    assert offer is not None and offer.message_type == o.OFFER
    ip = o.ip_to_str(offer.yiaddr)
    ack = await relay.exchange(request(o.REQUEST, mac, xid=discover.xid, giaddr=RELAY_IP,
                                       server_id="127.0.0.1", requested=ip, extra=extra))
    assert ack is not None and ack.message_type == o.ACK
    return ip


async def _release(relay: Relay, n: int, ip: str) -> None:
    await relay.send(request(o.RELEASE, mac_bytes(900_000 + n), giaddr=RELAY_IP, ciaddr=ip,
                             server_id="127.0.0.1"))


async def _row(viewer: httpx.AsyncClient, topic: str, name: str, states: set[str]) -> dict:
    """The newest dns row for (topic, name) once it is in one of ``states``."""
    with trio.fail_after(WAIT):
        while True:
            rows = (await viewer.get("/outbox", params={"kind": "dns", "topic": topic})).json()
            found = [r for r in rows["items"] if r["target"] == name]
            if found and found[0]["state"] in states:
                return found[0]
            await trio.sleep(0.1)


async def _dig(bind: Any, name: str, rtype: str, want: list[str]) -> None:
    with trio.fail_after(5):
        while await trio.to_thread.run_sync(bind.dig, name, rtype) != want:
            await trio.sleep(0.1)


async def _subnet(operator: httpx.AsyncClient, server_id: str, adapter: str) -> dict:
    """The zones on the server, and a DDNS subnet with a pool behind the loopback relay."""
    for name in (ZONE, REVERSE):
        created(await operator.post("/dns-zones", json={"name": name, "server_id": server_id}))
    prefix = created(await operator.post("/prefixes", json={"cidr": "127.77.0.0/16"}))
    subnet = created(await operator.post("/subnets", json={
        "prefix_id": prefix["id"], "cidr": "127.77.0.0/16", "gateway": "127.77.0.1",
        "ddns_adapter": adapter, "ddns_server_id": server_id, "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE, "ddns_ttl": 120}))
    created(await operator.post(f"/subnets/{subnet['id']}/pools", json={
        "name": "clients", "start_ip": "127.77.5.1", "end_ip": "127.77.5.50"}))
    return subnet


async def test_ddns_against_bind(appliance, relay_sock, operator, viewer, bind: Bind) -> None:
    server = created(await operator.post("/dns-servers", json={
        "name": "bind", "adapter": "bind_tsig", "address": "127.0.0.1", "port": bind.port,
        "tsig_key_name": KEY_NAME, "secret_ref": f"env:{SECRET_ENV}"}))
    await _subnet(operator, server["id"], "bind_tsig")
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)

        # A lease → A and PTR at BIND; the lease shows the registered name.
        ip = await _lease(relay, 1, "Laptop")
        row = await _row(viewer, "lease.granted", f"laptop.{ZONE}", {"delivered"})
        assert row["dns"]["server_id"] == server["id"] and row["dns"]["ip"] == ip
        await _dig(bind, f"laptop.{ZONE}", "A", [ip])
        reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
        await _dig(bind, reverse, "PTR", [f"laptop.{ZONE}."])
        assert len(bind.dig(f"laptop.{ZONE}", "DHCID")) == 1
        leases = (await viewer.get("/leases", params={"ip": ip})).json()["items"]
        assert leases[0]["fqdn"] == f"laptop.{ZONE}"

        # A second client with the same name gets its lease, not the name (RFC 4703).
        other = await _lease(relay, 2, "laptop")
        row = await _row(viewer, "lease.granted", f"laptop.{ZONE}", {"failed"})
        assert row["last_error"].startswith("YXDOMAIN") and "another client" in row["last_error"]
        assert other != ip and bind.dig(f"laptop.{ZONE}", "A") == [ip]

        # A static record appears.
        zone = (await viewer.get("/dns-zones", params={"name": ZONE})).json()["items"][0]
        created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
            "name": "www", "type": "A", "value": "127.77.9.9"}))
        await _row(viewer, "ipam.audit", f"www.{ZONE}", {"delivered"})
        await _dig(bind, f"www.{ZONE}", "A", ["127.77.9.9"])

        # Release → both records gone.
        await _release(relay, 1, ip)
        await _row(viewer, "lease.released", f"laptop.{ZONE}", {"delivered"})
        await _dig(bind, f"laptop.{ZONE}", "A", [])
        await _dig(bind, reverse, "PTR", [])

        # BIND down: the lease is granted anyway, the row retries with the error shown.
        bind.stop()
        printer = await _lease(relay, 3, "printer")
        row = await _row(viewer, "lease.granted", f"printer.{ZONE}", {"retrying"})
        assert row["attempts"] >= 1 and row["last_error"].split(":")[0] in (
            "TIMEOUT", "UNREACHABLE")
        bind.start()
        row = await _row(viewer, "lease.granted", f"printer.{ZONE}", {"delivered", "failed"})
        if row["state"] == "failed":  # the attempts ran out before BIND was back: Replay
            assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
            row = await _row(viewer, "lease.granted", f"printer.{ZONE}", {"delivered"})
        await _dig(bind, f"printer.{ZONE}", "A", [printer])

        # A wrong TSIG secret: BADSIG shown, retried, failed; fixed → Replay → delivered.
        await operator.patch(f"/dns-servers/{server['id']}",
                             json={"secret_ref": f"env:{WRONG_ENV}"})
        tablet = await _lease(relay, 4, "tablet")
        row = await _row(viewer, "lease.granted", f"tablet.{ZONE}", {"failed"})
        assert row["attempts"] == 4 and row["last_error"].startswith("BADSIG"), row
        detail = (await viewer.get(f"/outbox/{row['id']}")).json()
        assert [h["response"] for h in detail["history"]] == ["BADSIG"] * 4
        assert bind.dig(f"tablet.{ZONE}", "A") == []
        await operator.patch(f"/dns-servers/{server['id']}",
                             json={"secret_ref": f"env:{SECRET_ENV}"})
        assert (await operator.post(f"/outbox/{row['id']}/replay")).status_code == 200
        await _row(viewer, "lease.granted", f"tablet.{ZONE}", {"delivered"})
        await _dig(bind, f"tablet.{ZONE}", "A", [tablet])
        nursery.cancel_scope.cancel()
