"""The mapping proved (issue 52, docs/migrating.md): a Kea example configuration run in a real
`kea-dhcp4` and the same file imported with `ipamd-import` into the appliance hand the same
real client (ISC dhclient behind a real dhcrelay) the same answer: the reserved address, or an
address of the same pool, and the same mask, router, DNS, lease time and boot file.

Two relayed segments of tests/support/dhcp_lab.py, one per server, both with the LAN
10.77.1.0/24: Kea's examples use the documentation network 192.0.2.0/24 (and its
neighbours), which the tests never touch, so a copy of each example is moved into 10.77.x.0
before both servers read it (interfaces, lease file and logging made the lab's).
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd import runtime
from ipamd.importer import kea, kea_syntax
from tests.integration.importer.helpers import EXAMPLES, apply
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import DhcpNet

pytestmark = pytest.mark.netns

MOVES = (("192.0.2.", "10.77.1."), ("192.0.3.", "10.77.2."), ("192.0.4.", "10.77.4."),
         ("192.0.5.", "10.77.5."))
LAN = ipaddress.ip_network("10.77.1.0/24")  # the subnet both relays' giaddr is in


@dataclass(frozen=True)
class Case:
    mac: str
    conf: str = ""  # added to dhclient's configuration (what the client sends)
    reserved: bool = False  # the same address from both; else an address of the same pool


CASES: dict[str, list[Case]] = {
    "kea4/reservations.json": [
        Case("1a:1b:1c:1d:1e:1f", reserved=True),
        # a reservation by client-id 01 + MAC: dhclient sends that identifier
        Case("0a:0b:0c:0d:0e:0f", "send dhcp-client-identifier 01:0a:0b:0c:0d:0e:0f;\n",
             reserved=True),
        Case("02:00:00:00:52:01"),
    ],
    "kea4/several-subnets.json": [Case("02:00:00:00:52:02")],
    "kea4/classify.json": [Case("02:00:00:00:52:03",
                                'send vendor-class-identifier "Aastra6731i";\n')],
    # the subnet outside the shared network is the LAN: no valid-lifetime anywhere, so both
    # must give Kea's default 7200 s
    "kea4/shared-network.json": [Case("02:00:00:00:52:04")],
}
# Where an example's networks go instead (the rest: MOVES); its 10.0.0.0/8 would cover the lab.
EXAMPLE_MOVES: dict[str, tuple[tuple[str, str], ...]] = {
    "kea4/shared-network.json": (('"10.0.0.0/8"', '"10.96.0.0/11"'), ("192.0.3.", "10.77.1."),
                                 ("192.0.2.", "10.77.2.")),
}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _no_interfaces(value: Any) -> Any:
    """Kea's `interface` selects a directly attached client's subnet; the lab's are relayed."""
    if isinstance(value, dict):
        return {key: _no_interfaces(item) for key, item in value.items() if key != "interface"}
    if isinstance(value, list):
        return [_no_interfaces(item) for item in value]
    return value


def moved_example(example: str, workdir: Path, interface: str, server_ip: str) -> Path:
    """A copy of the example in 10.77.x.0, served on the lab's interface, leases in memory."""
    text = json.dumps(_plain(kea_syntax.load(str(EXAMPLES / example))))
    for old, new in EXAMPLE_MOVES.get(example, MOVES):
        text = text.replace(old, new)
    config = _no_interfaces(json.loads(text))
    dhcp4 = config["Dhcp4"]
    dhcp4["interfaces-config"] = {"interfaces": [f"{interface}/{server_ip}"],
                                  "dhcp-socket-type": "udp"}
    dhcp4["lease-database"] = {"type": "memfile", "persist": False}
    dhcp4["loggers"] = [{"name": "kea-dhcp4", "output_options": [{"output": "stderr"}],
                         "severity": "INFO"}]
    path = workdir / Path(example).name
    path.write_text(json.dumps(config, indent=1))
    return path


@pytest.fixture
def second_lab() -> Iterator[netns.Lab]:
    with netns.lab() as made:
        yield made


@pytest.fixture
def nets(lab: netns.Lab, second_lab: netns.Lab) -> tuple[DhcpNet, DhcpNet]:
    """(Kea's segment, the appliance's): the same LAN behind two relays."""
    reason = netns.require_tools("dhclient", "dhcrelay", "kea-dhcp4")
    if reason:
        pytest.skip(reason)
    return dhcp_lab.build(second_lab), dhcp_lab.build(lab)


@pytest.fixture
def config_overrides(nets: tuple[DhcpNet, DhcpNet]) -> dict[str, dict[str, Any]]:
    ours = nets[1]
    return {"dhcp": {"enabled": True, "listen": [f"{ours.server_ip}:67"],
                     "trusted_relays": [f"{ours.relay_ip}/32"]}}


async def start_kea(lab: netns.Lab, config: Path, workdir: Path) -> Any:
    env = {**os.environ, "KEA_LOCKFILE_DIR": str(workdir), "KEA_PIDFILE_DIR": str(workdir)}
    log = workdir / "kea.log"
    with open(log, "w") as handle:
        proc = lab.spawn(None, ["kea-dhcp4", "-c", str(config)], stdout=handle,
                         stderr=handle, env=env)
    with trio.move_on_after(15):
        while "DHCP4_STARTED" not in log.read_text(errors="replace"):
            if proc.poll() is not None:
                raise AssertionError(f"kea-dhcp4 exited: {log.read_text(errors='replace')}")
            await trio.sleep(0.05)
        return proc
    raise AssertionError(f"kea-dhcp4 did not start: {log.read_text(errors='replace')}")


async def answer(net: DhcpNet, workdir: Path, case: Case) -> dict[str, str]:
    """What dhclient was given (its BOUND event), then released."""
    workdir.mkdir()
    dhcp_lab.set_mac(net, case.mac)
    client = dhcp_lab.Dhclient(net, workdir, hostname="import-check")
    client.conf.write_text(client.conf.read_text() + case.conf)
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    await client.release()
    return bound


def same_pool(config: Path, first: str, second: str) -> bool:
    """Both addresses in one pool of the LAN subnet, as planned from the moved example."""
    for obj in kea.read(str(config)).objects:
        if obj.kind == "pool" and obj.owner == f"subnet:{LAN}":
            low, high = (ipaddress.ip_address(obj.body[k]) for k in ("start_ip", "end_ip"))
            if all(low <= ipaddress.ip_address(ip) <= high for ip in (first, second)):
                return True
    return False


@pytest.mark.parametrize("example", sorted(CASES))
async def test_kea_and_the_imported_appliance_answer_alike(
        example: str, nets: tuple[DhcpNet, DhcpNet], second_lab: netns.Lab,
        appliance: runtime.Running, tokens: dict[str, str], tmp_path: Path) -> None:
    kea_net, our_net = nets
    config = moved_example(example, tmp_path, second_lab.ifname("sa"), kea_net.server_ip)
    code, report, out = await apply(appliance, tokens["operator"], str(config))
    assert (code, report.stopped) == (0, None), out
    await dhcp_lab.plan_caught_up(appliance)
    await start_kea(second_lab, config, tmp_path)
    await dhcp_lab.start_relay(kea_net, tmp_path / "kea-relay.log")
    await dhcp_lab.start_relay(our_net, tmp_path / "our-relay.log")
    for number, case in enumerate(CASES[example]):
        theirs = await answer(kea_net, tmp_path / f"kea-{number}", case)
        ours = await answer(our_net, tmp_path / f"ours-{number}", case)
        assert theirs["ip"] and theirs["lease"] and theirs["mask"], theirs
        if example == "kea4/shared-network.json":
            assert theirs["lease"] == "7200"  # no valid-lifetime in the file: Kea's default
        fields = ("mask", "router", "dns", "lease", "file")
        assert {f: ours[f] for f in fields} == {f: theirs[f] for f in fields}, (case, theirs,
                                                                                 ours)
        if case.reserved:
            assert ours["ip"] == theirs["ip"], (case, theirs, ours)
        else:
            assert same_pool(config, ours["ip"], theirs["ip"]), (case, theirs, ours)
