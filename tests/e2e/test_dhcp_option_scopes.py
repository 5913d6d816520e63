"""Options at every scope with real clients (docs/api-ipam.md, "Option scopes"): dhclient
sending option 93 = 0 gets the BIOS boot file and 7 the UEFI one, each from a client class;
a reserved host gets its reservation's DNS servers over the subnet's. Behind a real relay
(ISC dhcrelay), in namespaces (tests/support/dhcp_lab.py)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import httpx
import pytest

from ipamd import runtime
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import GATEWAY, LAN, DhcpNet

pytestmark = pytest.mark.netns

POOL = ("10.77.1.50", "10.77.1.89")
RESERVED_IP, RESERVED_MAC = "10.77.1.99", "02:77:00:00:01:99"
BIOS_FILE, UEFI_FILE = "bios/pxelinux.0", "uefi/grubx64.efi"
SUBNET_DNS, RESERVED_DNS = "10.77.0.53", "10.77.0.99"
# dhclient.conf(5): a new option declared by code, then sent (RFC 4578 §2.1 architecture).
ARCH_CONF = "option arch code 93 = unsigned integer 16;\nsend arch {arch};\n"


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    return dhcp_lab.relayed(lab)


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_lab.serving(dhcp_net)}


@pytest.fixture
async def subnet_id(admin: httpx.AsyncClient, appliance: runtime.Running,
                    dhcp_net: DhcpNet, tmp_path: Path) -> str:
    """A PXE network made through the API: BIOS and UEFI classes by option 93, and a
    reservation with its own DNS servers."""
    prefix = await dhcp_lab.created(admin, "/prefixes", {"cidr": "10.77.0.0/16"})
    subnet = await dhcp_lab.created(admin, "/subnets", {"prefix_id": prefix["id"], "cidr": LAN,
                                             "gateway": GATEWAY, "lease_time_seconds": 600})
    sid = subnet["id"]
    await dhcp_lab.created(admin, f"/subnets/{sid}/pools",
                {"name": "clients", "start_ip": POOL[0], "end_ip": POOL[1]})
    await dhcp_lab.created(admin, f"/subnets/{sid}/options",
                {"code": 6, "payload": {"addresses": [SUBNET_DNS]}})
    await dhcp_lab.created(admin, "/client-classes", {"name": "pxe-bios", "match": "arch", "value": "0",
                                           "boot_file": BIOS_FILE})
    await dhcp_lab.created(admin, "/client-classes", {"name": "pxe-uefi", "match": "arch", "value": "7",
                                           "boot_file": UEFI_FILE})
    reservation = await dhcp_lab.created(admin, f"/subnets/{sid}/reservations",
                              {"ip": RESERVED_IP, "mac": RESERVED_MAC})
    await dhcp_lab.created(admin, f"/reservations/{reservation['id']}/options",
                {"code": 6, "payload": {"addresses": [RESERVED_DNS]}})
    await dhcp_lab.plan_caught_up(appliance)
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")
    return str(sid)


async def _bound(net: DhcpNet, workdir: Path, mac: str, arch: int | None) -> dict[str, str]:
    """dhclient's BOUND event for a client with ``mac`` sending option 93 = ``arch``."""
    workdir.mkdir()
    dhcp_lab.set_mac(net, mac)
    client = dhcp_lab.Dhclient(net, workdir, hostname=f"pxe-{workdir.name}")
    if arch is not None:
        client.conf.write_text(client.conf.read_text() + ARCH_CONF.format(arch=arch))
    client.start()
    try:
        return await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    finally:
        await client.release()


def _in_pool(ip: str) -> bool:
    low, high = (ipaddress.IPv4Address(a) for a in POOL)
    return low <= ipaddress.IPv4Address(ip) <= high


async def test_boot_file_by_architecture_and_a_reservations_own_dns(
    dhcp_net: DhcpNet, subnet_id: str, tmp_path: Path
) -> None:
    bios = await _bound(dhcp_net, tmp_path / "bios", "02:77:00:00:01:10", 0)
    assert bios["file"] == BIOS_FILE and _in_pool(bios["ip"]), bios
    assert bios["dns"] == SUBNET_DNS, bios
    uefi = await _bound(dhcp_net, tmp_path / "uefi", "02:77:00:00:01:11", 7)
    assert uefi["file"] == UEFI_FILE and _in_pool(uefi["ip"]), uefi
    reserved = await _bound(dhcp_net, tmp_path / "reserved", RESERVED_MAC, None)
    assert reserved["ip"] == RESERVED_IP, reserved
    assert reserved["dns"] == RESERVED_DNS and reserved["file"] == "", reserved
