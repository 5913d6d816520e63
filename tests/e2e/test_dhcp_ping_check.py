"""The ping check end to end (docs/api-ipam.md, "Ping check"): a real dhclient behind a real
dhcrelay (tests/support/dhcp_lab.py) on a LAN where a host nobody recorded already uses the
pool's first address — a namespace of its own that answers ping. That address is never
offered: the client is bound to another, and the address shows as a conflict (a declined
lease of no client, its event, the metric)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ipamd import runtime
from tests.e2e.test_dhcp_clients import post, wait_events, wait_lease
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import GATEWAY, LAN, DhcpNet

pytestmark = pytest.mark.netns

POOL = ("10.77.1.50", "10.77.1.59")
SQUATTER = POOL[0]  # configured by hand on a host IPAM does not know
NEXT = "10.77.1.51"


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    return dhcp_lab.relayed(lab)


def squat(net: DhcpNet, address: str) -> str:
    """A host on the LAN holding ``address``: a namespace behind the relay's namespace, which
    routes the address to it (10.77.2.0/30 between them); it answers ICMP echo as any host."""
    lab = net.lab
    host = lab.namespace("sq")
    pair = lab.veth("q", net.relay_ns, host, "10.77.2.1/30", "10.77.2.2/30")
    lab.address(host, pair.b, f"{address}/32")
    lab.route(net.relay_ns, f"{address}/32", "10.77.2.2")
    lab.route(host, "default", "10.77.2.1")
    return host


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_lab.serving(dhcp_net)}


@pytest.fixture
async def subnet(admin: httpx.AsyncClient, appliance: runtime.Running, dhcp_net: DhcpNet,
                 tmp_path: Path) -> dict[str, Any]:
    prefix = await post(admin, "/prefixes", {"cidr": "10.77.0.0/16"})
    made = await post(admin, "/subnets", {
        "prefix_id": prefix["id"], "cidr": LAN, "gateway": GATEWAY, "lease_time_seconds": 3600,
        "ping_check": True, "ping_timeout_ms": 300})
    assert (made["ping_check"], made["ping_timeout_ms"]) == (True, 300)
    await post(admin, f"/subnets/{made['id']}/pools",
               {"name": "clients", "start_ip": POOL[0], "end_ip": POOL[1]})
    await dhcp_lab.plan_caught_up(appliance)
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")
    return made


async def _metric(client: httpx.AsyncClient, line_start: str) -> float:
    text = (await client.get("/metrics")).text
    found = [line for line in text.splitlines() if line.startswith(line_start)]
    assert len(found) == 1, text
    return float(found[0].rsplit(" ", 1)[1])


async def test_an_address_that_answers_ping_is_never_offered_and_shows_as_a_conflict(
    dhcp_net: DhcpNet, subnet: dict[str, Any], admin: httpx.AsyncClient,
    appliance: runtime.Running, tmp_path: Path,
) -> None:
    host = squat(dhcp_net, SQUATTER)
    # The squatter answers from the server's address, over the lab's policy route (what the
    # server's probe does): the lab is sound before the client starts.
    seen = await dhcp_net.lab.run_async(
        None, ["busybox", "ping", "-c", "1", "-W", "2", "-I", dhcp_net.server_ip, SQUATTER],
        check=False)
    assert seen.returncode == 0, (host, seen.stdout, seen.stderr)

    client = dhcp_lab.Dhclient(dhcp_net, tmp_path, hostname="pinged")
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    assert bound["ip"] == NEXT, bound  # the next address: the first answered its probe
    lease = await wait_lease(admin, dhcp_lab.client_mac(dhcp_net), "active")
    assert lease["ip"] == NEXT

    listed = await admin.get("/leases", params={"ip": SQUATTER})
    assert listed.status_code == 200, listed.text
    [conflict] = listed.json()["items"]
    assert conflict["state"] == "declined" and conflict["ping_conflict"] is True, conflict
    assert conflict["mac"] is None and conflict["hostname"] is None  # no client's lease
    assert not lease["ping_conflict"]
    await wait_events(appliance.state.db, conflict["lease_id"], "declined")  # like a decline
    assert await _metric(admin, 'ipamd_dhcp_ping_checks_total{outcome="answered"}') == 1
    assert await _metric(admin, 'ipamd_dhcp_ping_checks_total{outcome="silent"}') >= 1
    done = await client.release()
    assert done.returncode == 0, done.stderr
