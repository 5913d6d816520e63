"""A shared network with real clients (docs/api-ipam.md, "Shared networks"): behind a real
relay (ISC dhcrelay) whose giaddr is in subnet A, a first dhclient takes A's one pool
address; a second one, with another MAC, gets an address from subnet B's pool with B's mask,
router and lease time. In namespaces (tests/support/dhcp_lab.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ipamd import runtime
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import GATEWAY, LAN, DhcpNet

pytestmark = pytest.mark.netns

A_ONLY = "10.77.1.50"  # A (the relay's LAN, 10.77.1.0/24): a pool of one address
B_CIDR, B_ROUTER, B_POOL = "10.77.8.0/22", "10.77.8.1", ("10.77.8.10", "10.77.8.19")
MAC1, MAC2 = "02:77:00:00:51:01", "02:77:00:00:51:02"


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    return dhcp_lab.relayed(lab)


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_lab.serving(dhcp_net)}


@pytest.fixture
async def shared(admin: httpx.AsyncClient, appliance: runtime.Running, dhcp_net: DhcpNet,
                 tmp_path: Path) -> None:
    """Subnets A and B in one shared network, made through the API."""
    prefix = await dhcp_lab.created(admin, "/prefixes", {"cidr": "10.77.0.0/16"})
    group = await dhcp_lab.created(admin, "/shared-networks", {"name": "lan-and-overflow"})
    a = await dhcp_lab.created(admin, "/subnets", {"prefix_id": prefix["id"], "cidr": LAN,
                                        "gateway": GATEWAY, "lease_time_seconds": 600,
                                        "shared_network_id": group["id"]})
    b = await dhcp_lab.created(admin, "/subnets", {"prefix_id": prefix["id"], "cidr": B_CIDR,
                                        "gateway": B_ROUTER, "lease_time_seconds": 1200,
                                        "shared_network_id": group["id"]})
    await dhcp_lab.created(admin, f"/subnets/{a['id']}/pools",
                {"name": "lan", "start_ip": A_ONLY, "end_ip": A_ONLY})
    await dhcp_lab.created(admin, f"/subnets/{b['id']}/pools",
                {"name": "overflow", "start_ip": B_POOL[0], "end_ip": B_POOL[1]})
    await dhcp_lab.plan_caught_up(appliance)
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")


async def _bound(net: DhcpNet, workdir: Path, mac: str) -> tuple[dhcp_lab.Dhclient,
                                                                 dict[str, str]]:
    workdir.mkdir()
    dhcp_lab.set_mac(net, mac)
    client = dhcp_lab.Dhclient(net, workdir, hostname=f"shared-{workdir.name}")
    client.start()
    return client, await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)


async def test_a_full_subnet_overflows_into_the_other_members_pool(
    dhcp_net: DhcpNet, shared: None, tmp_path: Path, admin: httpx.AsyncClient
) -> None:
    first, bound = await _bound(dhcp_net, tmp_path / "first", MAC1)
    assert (bound["ip"], bound["mask"], bound["router"]) == (A_ONLY, "255.255.255.0", GATEWAY)
    # dhclient -x: stop without a Release, so the lease keeps A's one address.
    stopped = await dhcp_net.lab.run_async(
        dhcp_net.client_ns, ["dhclient", "-4", "-x", *first.files, dhcp_net.client_if],
        timeout=dhcp_lab.DHCLIENT_WAIT, check=False)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    second, bound = await _bound(dhcp_net, tmp_path / "second", MAC2)
    try:
        assert bound["ip"] == B_POOL[0], bound
        assert (bound["mask"], bound["router"], bound["lease"]) == (
            "255.255.252.0", B_ROUTER, "1200"), bound  # B's, not A's where giaddr is
    finally:
        await second.release()
    leases = (await admin.get("/leases")).json()["items"]
    held = {x["ip"]: x["state"] for x in leases}
    assert held[A_ONLY] == "active"  # the first client's, untouched by the overflow
