"""The ISC mapping proved (issue 52, docs/migrating.md "From ISC dhcpd"): Debian's dhcpd
example run in a real ISC `dhcpd` and the same file imported with `ipamd-import` into the
appliance hand the same real client (dhclient behind a real dhcrelay) the same answer: the
fixed address, or an address of the same range, and the same mask, router, DNS servers,
lease time and boot file — also for a host without fixed-address, whose boot file the
appliance gives through the host's MAC class.

The example's statements are turned on and the copy is moved into 10.77.x.0 (its networks
are not the lab's), its names replaced by addresses (no DNS in a test; dhcpd and the
importer read the same file). dhcpd runs in a namespace of its own behind its relay
(a socket bound to every address, as dhcpd's is, chooses its source by the main table,
which the root namespace's labs never touch); the appliance is the usual root-side lab.
"""

from __future__ import annotations

import io
import ipaddress
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd import runtime
from ipamd.importer import cli, isc
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import DhcpNet
from tests.support.isc_site import uncommented_example

pytestmark = pytest.mark.netns

NAMES = (("ns1.internal.example.org", "10.77.1.2"), ("ns1.example.org", "10.77.9.53"),
         ("ns2.example.org", "10.77.9.54"), ("rtr-239-0-1.example.org", "10.77.21.1"),
         ("rtr-239-0-2.example.org", "10.77.21.2"), ("rtr-239-32-1.example.org", "10.77.21.33"),
         ("fantasia.example.com", "10.77.1.20"), ("rtr-224.example.org", "10.77.22.1"),
         ("rtr-29.example.org", "10.77.23.1"))
MOVES = (("10.5.5.", "10.77.1."), ("10.152.187.", "10.77.20."), ("10.254.239.", "10.77.21."),
         ("10.17.224.", "10.77.22."), ("10.0.29.", "10.77.23."))
SERVER_IP, RELAY_IP = "10.77.0.253", "10.77.0.254"  # dhcpd's link, inside its namespace
LAN = "10.77.1.0/27"  # the example's "internal subnet", moved: the relays' giaddr is in it


@dataclass(frozen=True)
class Case:
    mac: str
    fixed: str | None = None  # the address both must give; else one of the LAN's range


CASES = [Case("02:00:00:00:52:11"),
         Case("08:00:07:26:c0:a5", fixed="10.77.1.20"),  # host fantasia
         Case("00:00:c0:5d:bd:95")]  # host passacaglia: no address, a boot file


def moved_example(workdir: Path) -> Path:
    text = Path(uncommented_example(workdir)).read_text()
    for old, new in (*NAMES, *MOVES):
        text = text.replace(old, new)
    server_net = ipaddress.ip_interface(f"{SERVER_IP}/30").network
    text += f"\nsubnet {server_net.network_address} netmask {server_net.netmask} {{ }}\n"
    path = workdir / "dhcpd.conf"
    path.write_text(text)
    return path


@pytest.fixture
def dhcpd_lab() -> Iterator[netns.Lab]:
    with netns.lab() as made:
        yield made


@dataclass(frozen=True)
class DhcpdSide:
    net: DhcpNet  # its server_ip is dhcpd's, in server_ns
    server_ns: str
    server_if: str


def dhcpd_side(lab: netns.Lab) -> DhcpdSide:
    """client ns ── relay ns (10.77.1.1/24) ── dhcpd's ns (its own routes)."""
    server_ns, relay_ns, client_ns = (lab.namespace(r) for r in ("srv", "rly", "cli"))
    up = lab.veth("s", server_ns, relay_ns, f"{SERVER_IP}/30", f"{RELAY_IP}/30")
    lan = lab.veth("l", relay_ns, client_ns, f"{dhcp_lab.GATEWAY}/24", None)
    lab.sysctl(relay_ns, "net.ipv4.ip_forward", "1")
    lab.route(server_ns, dhcp_lab.LAN, RELAY_IP)
    net = DhcpNet(lab=lab, client_ns=client_ns, relay_ns=relay_ns, server_ip=SERVER_IP,
                  relay_ip=RELAY_IP, relay_lan_if=lan.a, relay_up_if=up.b, client_if=lan.b)
    return DhcpdSide(net, server_ns, up.a)


@pytest.fixture
def nets(lab: netns.Lab, dhcpd_lab: netns.Lab) -> tuple[DhcpdSide, DhcpNet]:
    """(dhcpd's segment, the appliance's): the same LAN behind two relays."""
    reason = netns.require_tools("dhclient", "dhcrelay", "dhcpd")
    if reason:
        pytest.skip(reason)
    return dhcpd_side(dhcpd_lab), dhcp_lab.build(lab)


@pytest.fixture
def config_overrides(nets: tuple[DhcpdSide, DhcpNet]) -> dict[str, dict[str, Any]]:
    ours = nets[1]
    return {"dhcp": {"enabled": True, "listen": [f"{ours.server_ip}:67"],
                     "trusted_relays": [f"{ours.relay_ip}/32"]}}


async def start_dhcpd(side: DhcpdSide, config: Path, workdir: Path
                      ) -> subprocess.Popen[Any]:
    leases, log = workdir / "dhcpd.leases", workdir / "dhcpd.log"
    leases.touch()
    with open(log, "w") as handle:
        proc = side.net.lab.spawn(
            side.server_ns,
            ["dhcpd", "-4", "-f", "-d", "-cf", str(config), "-lf", str(leases),
             "-pf", str(workdir / "dhcpd.pid"), side.server_if],
            stdout=handle, stderr=subprocess.STDOUT)
    with trio.move_on_after(15):
        while "Server starting service" not in log.read_text(errors="replace"):
            if proc.poll() is not None:
                raise AssertionError(f"dhcpd exited: {log.read_text(errors='replace')}")
            await trio.sleep(0.05)
        return proc
    raise AssertionError(f"dhcpd did not start: {log.read_text(errors='replace')}")


async def answer(net: DhcpNet, workdir: Path, case: Case) -> dict[str, str]:
    """What dhclient was given (its BOUND event), then released."""
    workdir.mkdir()
    dhcp_lab.set_mac(net, case.mac)
    client = dhcp_lab.Dhclient(net, workdir, hostname="import-check")
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    await client.release()
    return bound


def in_a_range(config: Path, address: str) -> bool:
    """The address is in a pool of the LAN subnet, as planned from the moved example."""
    ip = ipaddress.ip_address(address)
    return any(obj.kind == "pool" and obj.owner == f"subnet:{LAN}"
               and ipaddress.ip_address(obj.body["start_ip"]) <= ip
               <= ipaddress.ip_address(obj.body["end_ip"])
               for obj in isc.read(str(config)).objects)


async def test_dhcpd_and_the_imported_appliance_answer_alike(
        nets: tuple[DhcpdSide, DhcpNet], appliance: runtime.Running, tokens: dict[str, str],
        tmp_path: Path) -> None:
    side, our_net = nets
    theirs_net = side.net
    config = moved_example(tmp_path)
    out = io.StringIO()
    code, report = await trio.to_thread.run_sync(
        lambda: cli.apply_file(str(config), appliance.url("http"), tokens["operator"],
                               fmt="isc", out=out))
    assert (code, report.stopped) == (0, None), out.getvalue()
    await dhcp_lab.plan_caught_up(appliance)
    await start_dhcpd(side, config, tmp_path)
    await dhcp_lab.start_relay(theirs_net, tmp_path / "dhcpd-relay.log")
    await dhcp_lab.start_relay(our_net, tmp_path / "our-relay.log")
    for number, case in enumerate(CASES):
        theirs = await answer(theirs_net, tmp_path / f"dhcpd-{number}", case)
        ours = await answer(our_net, tmp_path / f"ours-{number}", case)
        fields = ("mask", "router", "dns", "lease", "file")
        assert {f: ours[f] for f in fields} == {f: theirs[f] for f in fields}, (case, theirs,
                                                                                ours)
        if case.fixed:
            assert ours["ip"] == theirs["ip"] == case.fixed, (case, theirs, ours)
        else:
            assert in_a_range(config, ours["ip"]) and in_a_range(config, theirs["ip"]), (
                case, theirs, ours)
    assert theirs["file"] == "vmunix.passacaglia"  # the last case: the host's boot file
