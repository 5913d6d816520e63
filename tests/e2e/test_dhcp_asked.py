"""What a real dhclient asks for and gets, behind a real relay (end to end; the lab of
tests/support/dhcp_lab.py): a requested lease time (option 51) clamped to the subnet's
bounds, T1/T2 following it (docs/api-ipam.md, "Lease time"); a domain search list longer
than one option carries, split (RFC 3396) and overloaded into file/sname of a 576-octet
reply, since dhclient announces no larger size (docs/api-ipam.md, "Long options")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from tests.e2e.test_dhcp_clients import post, wait_lease, when
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import GATEWAY, LAN, DhcpNet

pytestmark = pytest.mark.netns

POOL = ("10.77.1.50", "10.77.1.89")
LEASE, LOW, HIGH = 3600, 1800, 7200  # the subnet's lease time and bounds


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    return dhcp_lab.relayed(lab)


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_lab.serving(dhcp_net)}


@pytest.fixture
async def subnet(admin: httpx.AsyncClient, appliance: runtime.Running, dhcp_net: DhcpNet,
                 tmp_path: Path) -> dict[str, Any]:
    prefix = await post(admin, "/prefixes", {"cidr": "10.77.0.0/16"})
    made = await post(admin, "/subnets", {
        "prefix_id": prefix["id"], "cidr": LAN, "gateway": GATEWAY, "lease_time_seconds": LEASE,
        "min_lease_time_seconds": LOW, "max_lease_time_seconds": HIGH})
    await post(admin, f"/subnets/{made['id']}/pools",
               {"name": "clients", "start_ip": POOL[0], "end_ip": POOL[1]})
    await dhcp_lab.plan_caught_up(appliance)
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")
    return made


async def leased_options(leases: Path, timeout: float = 10) -> dict[str, str]:
    """The options of dhclient's lease in its lease file (``option name value;``): dhclient
    writes it after running its script for BOUND, so it is awaited."""
    with trio.move_on_after(timeout):
        while "}" not in (last := leases.read_text().rpartition("lease {")[2]):
            await trio.sleep(0.05)
        return dict(re.findall(r"^\s*option ([\w-]+) (.*);$", last, re.MULTILINE))
    raise AssertionError(f"no lease written to {leases}: {leases.read_text()!r}")


async def bound_asking(net: DhcpNet, workdir: Path, extra_conf: str) -> tuple[Any, Any]:
    """dhclient with ``extra_conf`` added to its configuration, bound: (client, BOUND event)."""
    client = dhcp_lab.Dhclient(net, workdir, hostname="asking")
    client.conf.write_text(client.conf.read_text() + extra_conf)
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    return client, bound


@pytest.mark.parametrize(("asked", "granted"), [(60, LOW), (5000, 5000), (86_400, HIGH)])
async def test_dhclient_asking_for_a_lease_time_gets_it_within_the_bounds(
    dhcp_net: DhcpNet, subnet: dict[str, Any], admin: httpx.AsyncClient, tmp_path: Path,
    asked: int, granted: int,
) -> None:
    client, bound = await bound_asking(dhcp_net, tmp_path, f"send dhcp-lease-time {asked};\n")
    assert bound["lease"] == str(granted), bound
    told = await leased_options(tmp_path / "dhclient.leases")
    assert told["dhcp-lease-time"] == str(granted), told
    # T1 = 0.5, T2 = 0.875 of the granted time (RFC 2131 §4.4.5).
    assert told["dhcp-renewal-time"] == str(granted // 2), told
    assert told["dhcp-rebinding-time"] == str(granted * 7 // 8), told
    lease = await wait_lease(admin, dhcp_lab.client_mac(dhcp_net), "active")
    # The lease row's expiry follows the granted time, not the subnet's.
    length = (when(lease["expires_at"]) - when(lease["starts_at"])).total_seconds()
    assert abs(length - granted) < 5, lease
    done = await client.release()
    assert done.returncode == 0, done.stderr


# 22 names of 18 octets and one of 4 in wire format: 400 octets, two RFC 3396 instances.
SEARCH = [f"s{i:03d}.example.com" for i in range(22)] + ["ab"]


async def test_a_400_octet_domain_search_reaches_dhclient_intact(
    dhcp_net: DhcpNet, subnet: dict[str, Any], admin: httpx.AsyncClient, tmp_path: Path,
    appliance: runtime.Running,
) -> None:
    made = await post(admin, f"/subnets/{subnet['id']}/options",
                      {"code": 119, "payload": {"domains": SEARCH}})
    assert made["payload"] == {"domains": SEARCH}
    await dhcp_lab.plan_caught_up(appliance)
    client, _ = await bound_asking(dhcp_net, tmp_path, "also request domain-search;\n")
    told = await leased_options(tmp_path / "dhclient.leases")
    assert told["domain-search"] == ", ".join(f'"{name}."' for name in SEARCH), told
    done = await client.release()
    assert done.returncode == 0, done.stderr
