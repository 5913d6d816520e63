"""Real Debian DHCP clients behind a real relay, served by the appliance (end to end).

dhclient (isc-dhcp-client) and busybox udhcpc run in a client namespace; ISC dhcrelay
relays them from its namespace to the appliance's DHCP server, which runs inside the real
runtime in this process on a 10.77.0.x veth address (see tests/support/dhcp_lab.py). The
plan is created through the API; the leases are checked through GET /leases and the
lease_events rows written with them.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.core.lease_events import derive_all
from ipamd.db.bridge import Database
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import GATEWAY, LAN, DhcpNet

pytestmark = pytest.mark.netns

LEASE_TIME = 10  # seconds: clients renew at T1 (half of it) within the test
POOL = ("10.77.1.50", "10.77.1.89")
RESERVED_IP = "10.77.1.99"
RESERVED_MAC = "02:77:00:00:01:99"
CLIENT_TOOLS = ("dhclient", "dhcrelay", "busybox")


@pytest.fixture
def dhcp_net(lab: netns.Lab) -> DhcpNet:
    return dhcp_lab.relayed(lab, tools=CLIENT_TOOLS)


@pytest.fixture
def relay_trusted() -> bool:
    """Parametrised to False by the test of an untrusted relay."""
    return True


@pytest.fixture
def config_overrides(dhcp_net: DhcpNet, relay_trusted: bool) -> dict[str, dict[str, Any]]:
    # An untrusted relay: the list names only another address (the /30's broadcast).
    other = str(ipaddress.IPv4Address(dhcp_net.relay_ip) + 1)
    trusted = dhcp_net.relay_ip if relay_trusted else other
    return {"dhcp": {"enabled": True, "listen": [f"{dhcp_net.server_ip}:67"],
                     "trusted_relays": [f"{trusted}/32"]}}


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    made = await client.post(path, json=body)
    assert made.status_code == 201, f"POST {path}: {made.status_code} {made.text}"
    return made.json()


@pytest.fixture
async def subnet_id(admin: httpx.AsyncClient, appliance: runtime.Running,
                    dhcp_net: DhcpNet, tmp_path: Path) -> str:
    """The plan, made through the API: prefix, subnet, pool, reservation; and the relay."""
    prefix = await post(admin, "/prefixes", {"cidr": "10.77.0.0/16", "description": "e2e"})
    subnet = await post(admin, "/subnets", {
        "prefix_id": prefix["id"], "cidr": LAN, "gateway": GATEWAY,
        "lease_time_seconds": LEASE_TIME,
    })
    await post(admin, f"/subnets/{subnet['id']}/pools",
               {"name": "clients", "start_ip": POOL[0], "end_ip": POOL[1]})
    await post(admin, f"/subnets/{subnet['id']}/reservations",
               {"ip": RESERVED_IP, "mac": RESERVED_MAC, "hostname": "reserved"})
    await dhcp_lab.plan_caught_up(appliance)
    await dhcp_lab.start_relay(dhcp_net, tmp_path / "dhcrelay.log")
    return subnet["id"]


def when(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def in_pool(ip: str) -> bool:
    return ipaddress.IPv4Address(POOL[0]) <= ipaddress.IPv4Address(ip) <= ipaddress.IPv4Address(
        POOL[1])


async def leases_of(client: httpx.AsyncClient, mac: str) -> list[dict[str, Any]]:
    listed = await client.get("/leases", params={"mac": mac})
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert set(body) == {"items", "next_cursor"}
    return [lease for lease in body["items"] if lease["mac"] == mac]


async def wait_lease(client: httpx.AsyncClient, mac: str, state: str,
                     timeout: float = 10) -> dict[str, Any]:
    with trio.move_on_after(timeout):
        while True:
            found = [lease for lease in await leases_of(client, mac) if lease["state"] == state]
            if found:
                assert len(found) == 1, found
                return found[0]
            await trio.sleep(0.1)
    raise AssertionError(f"no {state} lease for {mac}: {await leases_of(client, mac)}")


async def _events(conn: Any, lease_id: str) -> list[str]:
    await derive_all(conn)  # history rows and events follow the lease journal
    rows = await conn.fetch(
        "SELECT event FROM lease_events WHERE lease_id = $1::uuid ORDER BY at, id", lease_id
    )
    return [row["event"] for row in rows]


async def lease_events(db: Database, lease_id: str) -> list[str]:
    return await db.run(_events, lease_id)


async def _topics(conn: Any, lease_id: str) -> list[str]:
    await derive_all(conn)  # history rows and events follow the lease journal
    rows = await conn.fetch(
        "SELECT topic FROM events WHERE payload->>'lease_id' = $1 ORDER BY id", lease_id
    )
    return [row["topic"] for row in rows]


async def wait_events(db: Database, lease_id: str, wanted: str, timeout: float = 10) -> list[str]:
    with trio.move_on_after(timeout):
        while wanted not in (events := await lease_events(db, lease_id)):
            await trio.sleep(0.1)
        return events
    raise AssertionError(f"no {wanted} event for lease {lease_id}: "
                         f"{await lease_events(db, lease_id)}")


async def check_granted(admin: httpx.AsyncClient, db: Database, net: DhcpNet, subnet_id: str,
                        bound: dict[str, str], mac: str, hostname: str) -> dict[str, Any]:
    """What the client was told matches the lease the appliance stored and announced."""
    assert in_pool(bound["ip"]), bound
    assert bound["mask"] == "255.255.255.0" and bound["router"] == GATEWAY, bound
    assert bound["server"] == net.server_ip and bound["lease"] == str(LEASE_TIME), bound
    lease = await wait_lease(admin, mac, "active")
    assert lease["ip"] == bound["ip"] and lease["subnet_id"] == subnet_id, lease
    assert lease["hostname"] == hostname, lease
    # dhcrelay -a puts its downstream interface name in the circuit id (option 82).
    assert lease["circuit_id"] == net.relay_lan_if.encode().hex(":"), lease
    assert lease["giaddr"] == GATEWAY and lease["state"] == "active", lease
    assert (await lease_events(db, lease["lease_id"]))[0] == "granted"
    return lease


async def check_renewed(admin: httpx.AsyncClient, db: Database, lease: dict[str, Any],
                        mac: str) -> None:
    await wait_events(db, lease["lease_id"], "renewed")
    renewed = await wait_lease(admin, mac, "active")
    assert renewed["lease_id"] == lease["lease_id"] and renewed["ip"] == lease["ip"]
    assert when(renewed["expires_at"]) > when(lease["expires_at"]), (lease, renewed)


async def check_released(admin: httpx.AsyncClient, db: Database, lease: dict[str, Any],
                         mac: str) -> None:
    released = await wait_lease(admin, mac, "released")
    assert released["lease_id"] == lease["lease_id"]
    events = await wait_events(db, lease["lease_id"], "released")
    assert events[0] == "granted" and events[-1] == "released", events
    # The same transactions queued the webhook topics (docs/webhooks.md) for the outbox.
    topics = await db.run(_topics, lease["lease_id"])
    assert topics == [f"lease.{event}" for event in events], (topics, events)


async def test_dhclient_gets_renews_and_releases_an_address(
    dhcp_net: DhcpNet, subnet_id: str, admin: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    client = dhcp_lab.Dhclient(dhcp_net, tmp_path, hostname="e2e-dhclient")
    mac = dhcp_lab.client_mac(dhcp_net)
    client.start()
    bound = await client.recorder.wait({"BOUND"}, dhcp_lab.DHCLIENT_WAIT)
    lease = await check_granted(admin, db, dhcp_net, subnet_id, bound, mac, "e2e-dhclient")

    # dhclient renews by itself at T1 (~LEASE_TIME/2), unicast to the server identifier.
    seen = len(client.recorder.events())
    renew = await client.recorder.wait({"RENEW"}, LEASE_TIME + 5, after=seen)
    assert renew["ip"] == bound["ip"], renew
    await check_renewed(admin, db, lease, mac)

    done = await client.release()
    assert done.returncode == 0, done.stderr
    assert client.recorder.names()[-1] == "RELEASE"
    await check_released(admin, db, lease, mac)


async def test_udhcpc_gets_renews_and_releases_an_address(
    dhcp_net: DhcpNet, subnet_id: str, admin: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    client = dhcp_lab.Udhcpc(dhcp_net, tmp_path, hostname="e2e-udhcpc")
    mac = dhcp_lab.client_mac(dhcp_net)
    client.start("-t", "5", "-T", "1", "-A", "1")
    bound = await client.recorder.wait({"bound"}, 15)
    lease = await check_granted(admin, db, dhcp_net, subnet_id, bound, mac, "e2e-udhcpc")

    seen = len(client.recorder.events())
    client.signal(signal.SIGUSR1)  # renew now
    renew = await client.recorder.wait({"renew"}, 10, after=seen)
    assert renew["ip"] == bound["ip"], renew
    await check_renewed(admin, db, lease, mac)

    seen = len(client.recorder.events())
    client.signal(signal.SIGUSR2)  # release
    await client.recorder.wait({"deconfig"}, 10, after=seen)
    await check_released(admin, db, lease, mac)


async def test_reserved_mac_gets_its_reserved_address(
    dhcp_net: DhcpNet, subnet_id: str, admin: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    dhcp_lab.set_mac(dhcp_net, RESERVED_MAC)
    client = dhcp_lab.Udhcpc(dhcp_net, tmp_path, hostname="reserved-client")
    client.start("-q", "-n", "-t", "5", "-T", "1")
    assert await client.wait_exit(15) == 0, client.log.read_text()
    bound = await client.recorder.wait({"bound"}, 1)
    assert bound["ip"] == RESERVED_IP, bound
    lease = await wait_lease(admin, RESERVED_MAC, "active")
    assert lease["ip"] == RESERVED_IP and lease["subnet_id"] == subnet_id, lease
    assert await lease_events(db, lease["lease_id"]) == ["granted"]


@pytest.mark.parametrize("relay_trusted", [False])
async def test_relay_not_in_trusted_relays_gets_nothing(
    dhcp_net: DhcpNet, subnet_id: str, admin: httpx.AsyncClient, appliance: runtime.Running,
    tmp_path: Path
) -> None:
    client = dhcp_lab.Udhcpc(dhcp_net, tmp_path, hostname="untrusted")
    client.start("-q", "-n", "-t", "2", "-T", "1", "-A", "0")
    assert await client.wait_exit(10) != 0  # gave up: no offer came back
    assert "bound" not in client.recorder.names()
    assert await leases_of(admin, dhcp_lab.client_mac(dhcp_net)) == []
    # The Discovers did reach the server and were refused as untrusted, not lost.
    drops = appliance.state.counters.dhcp.drops
    assert drops["untrusted_relay"] >= 2, dict(drops)
