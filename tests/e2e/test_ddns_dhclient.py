"""A real dhclient (sending its host name) behind a real dhcrelay in network namespaces gets a
lease from the appliance; the A and PTR records answer at a real BIND 9 (bind_tsig through the
outbox); dhclient -r releases → they are gone. Addresses: 10.77.53.0/24 only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.support import dhcp_lab, netns
from tests.support.bind import KEY_NAME, Bind, need_bind
from tests.support.dhcp_lab import DhcpNet

pytestmark = pytest.mark.netns

LAN, GATEWAY, UPSTREAM = "10.77.53.0/25", "10.77.53.1", "10.77.53.128/26"
ZONE, REVERSE = "e2e.example", "53.77.10.in-addr.arpa"
SECRET_ENV = "IPAMD_TEST_TSIG_E2E"


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    reason = netns.require_tools("dhclient", "dhcrelay")
    if reason:
        pytest.skip(reason)
    return dhcp_lab.build(lab, LAN, GATEWAY, UPSTREAM)


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Bind]:
    need_bind()
    server = Bind(tmp_path / "bind", [ZONE, REVERSE])
    server.start()
    os.environ[SECRET_ENV] = server.secret
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet) -> dict[str, dict[str, Any]]:
    return {"dhcp": {"enabled": True, "listen": [f"{dhcp_net.server_ip}:67"],
                     "trusted_relays": [f"{dhcp_net.relay_ip}/32"]},
            "outbox": {"enabled": True, "workers": 2, "backoff_base_seconds": 0.1,
                       "backoff_max_seconds": 0.5, "backoff_jitter": 0.0,
                       "request_timeout_seconds": 1.0, "claim_timeout_seconds": 4.0,
                       "poll_interval_seconds": 0.2}}


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    made = await client.post(path, json=body)
    assert made.status_code == 201, f"POST {path}: {made.status_code} {made.text}"
    return made.json()


async def _dig(bind: Bind, name: str, rtype: str, want: list[str], timeout: float = 15) -> None:
    with trio.move_on_after(timeout):
        while (got := await trio.to_thread.run_sync(bind.dig, name, rtype)) != want:
            await trio.sleep(0.2)
        return
    raise AssertionError(f"{name} {rtype}: {got}, wanted {want}")


async def test_dhclient_lease_registers_and_release_removes(
    appliance, admin: httpx.AsyncClient, dhcp_net: DhcpNet, bind: Bind, tmp_path: Path,
) -> None:
    server = await _post(admin, "/dns-servers", {
        "name": "bind", "adapter": "bind_tsig", "address": "127.0.0.1", "port": bind.port,
        "tsig_key_name": KEY_NAME, "secret_ref": f"env:{SECRET_ENV}"})
    for name in (ZONE, REVERSE):
        await _post(admin, "/dns-zones", {"name": name, "server_id": server["id"]})
    prefix = await _post(admin, "/prefixes", {"cidr": "10.77.53.0/24"})
    subnet = await _post(admin, "/subnets", {
        "prefix_id": prefix["id"], "cidr": LAN, "gateway": GATEWAY,
        "ddns_adapter": "bind_tsig", "ddns_server_id": server["id"], "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE})
    await _post(admin, f"/subnets/{subnet['id']}/pools",
                {"name": "clients", "start_ip": "10.77.53.50", "end_ip": "10.77.53.60"})
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")

    client = dhcp_lab.Dhclient(dhcp_net, tmp_path, "E2E_Host")
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    ip = bound["ip"]
    await _dig(bind, f"e2e-host.{ZONE}", "A", [ip])
    reverse = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
    await _dig(bind, reverse, "PTR", [f"e2e-host.{ZONE}."])
    lease = (await admin.get("/leases", params={"ip": ip})).json()["items"][0]
    assert lease["fqdn"] == f"e2e-host.{ZONE}" and lease["hostname"] == "E2E_Host"

    released = await client.release()
    assert released.returncode == 0, released.stdout
    await _dig(bind, f"e2e-host.{ZONE}", "A", [])
    await _dig(bind, reverse, "PTR", [])
