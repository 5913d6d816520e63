"""Real Debian DHCPv6 clients behind a real relay, served by the appliance (issue 49, end to end).

dhclient -6 (isc-dhcp-client) runs in a client namespace; ISC `dhcrelay -6` relays it from
its namespace to the appliance's DHCPv6 server, which runs inside the real runtime in this
process on a 2001:db8:77:x::1 veth address (tests/support/dhcp_lab.py, build6). The plan is
seeded in the database (the server reloads it on NOTIFY); the bindings are checked through
GET /leases and the lease_events and events rows written with them.
"""

from __future__ import annotations

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
from ipamd.dhcp6.duid import Duid
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp6.conftest import start_server
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import Dhclient6, Dhcp6Net

pytestmark = pytest.mark.netns

LEASE_TIME = 16  # valid 16 s, preferred 10 s, T1 5 s: the client renews within the test
PD_PREFIX = "2001:db8:77:ff00::/56"  # delegated as /64s
CLIENT_TOOLS = ("dhclient", "dhcrelay")
RESERVED_DUID = Duid.ll(bytes.fromhex("027700000199"))


@pytest.fixture
def net6(lab: netns.Lab) -> Dhcp6Net:
    reason = netns.require_tools(*CLIENT_TOOLS)
    if reason:
        pytest.skip(reason)
    return dhcp_lab.build6(lab)


def _pool(net: Dhcp6Net) -> tuple[str, str]:
    base = ipaddress.IPv6Network(net.lan).network_address
    return str(base + 0x100), str(base + 0x1FF)


def _reserved(net: Dhcp6Net) -> str:
    return str(ipaddress.IPv6Network(net.lan).network_address + 0x99)


@pytest.fixture
async def seeded(db: Database, net6: Dhcp6Net) -> dict[str, Any]:
    async def seed(conn: Any) -> dict[str, Any]:
        tenant = await conn.fetchval("SELECT id FROM tenants ORDER BY id LIMIT 1")
        prefix = await conn.fetchval(
            "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, '2001:db8:77::/48') RETURNING id",
            tenant)
        subnet = await conn.fetchval(
            """INSERT INTO subnets (tenant_id, prefix_id, cidr, lease_time_seconds)
               VALUES ($1, $2, $3, $4) RETURNING id""", tenant, prefix, net6.lan, LEASE_TIME)
        await conn.execute("INSERT INTO pools (subnet_id, name, start_ip, end_ip) "
                           "VALUES ($1, 'clients', $2, $3)", subnet, *_pool(net6))
        await conn.execute(
            """INSERT INTO dhcp_options (subnet_id, code, payload) VALUES
               ($1, 23, '{"addresses": ["2001:db8:77::53"]}'),
               ($1, 24, '{"domains": ["lab.example"]}')""", subnet)
        await conn.execute(
            """INSERT INTO pd_pools (tenant_id, subnet_id, name, prefix, delegated_length)
               VALUES ($1, $2, 'pd', $3, 64)""", tenant, subnet, PD_PREFIX)
        await conn.execute("INSERT INTO reservations (subnet_id, ip, duid) VALUES ($1, $2, $3)",
                           subnet, _reserved(net6), RESERVED_DUID.text)
        return {"subnet_id": str(subnet)}

    return await db.transaction(seed)


@pytest.fixture
def relay_trusted() -> bool:
    return True


@pytest.fixture
def config_overrides(net6: Dhcp6Net, seeded: dict[str, Any],
                     relay_trusted: bool) -> dict[str, dict[str, Any]]:
    trusted = net6.relay_ip if relay_trusted else str(ipaddress.IPv6Address(net6.relay_ip) + 7)
    return {"dhcp6": {"enabled": True, "listen": [f"[{net6.server_ip}]:547"],
                      "trusted_relays": [f"{trusted}/128"]}}


@pytest.fixture
async def relayed(appliance: runtime.Running, net6: Dhcp6Net, tmp_path: Path) -> Dhcp6Net:
    await dhcp_lab.settled6(net6)
    await dhcp_lab.start_relay6(net6, tmp_path / "dhcrelay6.log")
    return net6


async def _leases(client: httpx.AsyncClient, ia_type: str) -> list[dict[str, Any]]:
    listed = await client.get("/leases", params={"limit": 1000})
    assert listed.status_code == 200, listed.text
    return [lease for lease in listed.json()["items"] if lease["ia_type"] == ia_type]


async def _wait_lease(client: httpx.AsyncClient, ia_type: str, state: str,
                      timeout: float = 15) -> dict[str, Any]:
    with trio.move_on_after(timeout):
        while True:
            found = [x for x in await _leases(client, ia_type) if x["state"] == state]
            if found:
                assert len(found) == 1, found
                return found[0]
            await trio.sleep(0.1)
    raise AssertionError(f"no {state} {ia_type} lease: {await _leases(client, ia_type)}")


async def _events(db: Database, lease_id: str) -> list[str]:
    async def read(conn: Any) -> list[str]:
        await derive_all(conn)
        rows = await conn.fetch("SELECT event FROM lease_events WHERE lease_id = $1::uuid "
                                "ORDER BY at, id", lease_id)
        return [row["event"] for row in rows]

    return await db.run(read)


async def _wait_event(db: Database, lease_id: str, wanted: str, timeout: float = 15) -> list[str]:
    with trio.move_on_after(timeout):
        while wanted not in (events := await _events(db, lease_id)):
            await trio.sleep(0.1)
        return events
    raise AssertionError(f"no {wanted} for {lease_id}: {await _events(db, lease_id)}")


async def test_dhclient6_address_options_renew_release(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, db: Database, tmp_path: Path) -> None:
    client = Dhclient6(relayed, tmp_path)
    client.start("-N")
    bound = await client.recorder.wait({"BOUND6"}, timeout=30)
    pool = _pool(relayed)
    address = ipaddress.IPv6Address(bound["ip"])
    assert ipaddress.IPv6Address(pool[0]) <= address <= ipaddress.IPv6Address(pool[1]), bound
    assert bound["dns"] == "2001:db8:77::53" and bound["search"] == "lab.example.", bound
    lease = await _wait_lease(admin, "na", "active")
    assert lease["ip"] == bound["ip"] and lease["prefix_length"] == 128, lease
    assert lease["giaddr"] == relayed.link_ip and lease["duid"], lease
    assert (await _events(db, lease["lease_id"]))[0] == "granted"

    # Renew at T1 (5 s): the same binding, extended.
    await client.recorder.wait({"RENEW6"}, timeout=20)
    await _wait_event(db, lease["lease_id"], "renewed")
    renewed = await _wait_lease(admin, "na", "active")
    assert renewed["lease_id"] == lease["lease_id"] and renewed["ip"] == lease["ip"]

    # Release: the binding ends and lease.released is announced.
    relayed.lab.stop(client.proc)  # type: ignore[arg-type]
    await client.release("-N")
    released = await _wait_lease(admin, "na", "released")
    assert released["lease_id"] == lease["lease_id"]
    events = await _wait_event(db, lease["lease_id"], "released")
    assert events[0] == "granted" and events[-1] == "released", events

    async def topics(conn: Any) -> list[str]:
        rows = await conn.fetch("SELECT topic FROM events WHERE payload->>'lease_id' = $1 "
                                "ORDER BY id", lease["lease_id"])
        return [r["topic"] for r in rows]

    assert (await db.run(topics))[-1] == "lease.released"


async def test_dhclient6_reserved_duid_and_delegated_prefix(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, tmp_path: Path) -> None:
    reserved = Dhclient6(relayed, tmp_path, "reserved", duid=RESERVED_DUID.raw)
    reserved.start("-N")
    bound = await reserved.recorder.wait({"BOUND6"}, timeout=30)
    assert bound["ip"] == _reserved(relayed), bound
    relayed.lab.stop(reserved.proc)  # type: ignore[arg-type]

    delegated = Dhclient6(relayed, tmp_path, "pd")
    delegated.start("-P")
    got = await delegated.recorder.wait({"BOUND6"}, timeout=30)
    prefix = ipaddress.IPv6Network(got["prefix"])
    assert prefix.prefixlen == 64 and prefix.subnet_of(ipaddress.IPv6Network(PD_PREFIX)), got
    lease = await _wait_lease(admin, "pd", "active")
    assert lease["ip"] == str(prefix.network_address) and lease["prefix_length"] == 64, lease


async def test_dhclient6_gone_its_binding_expires(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, db: Database, tmp_path: Path) -> None:
    client = Dhclient6(relayed, tmp_path, "gone")
    client.start("-N")
    await client.recorder.wait({"BOUND6"}, timeout=30)
    lease = await _wait_lease(admin, "na", "active")
    assert client.proc is not None
    client.proc.send_signal(signal.SIGKILL)  # no Release: the binding runs out
    expired = await _wait_lease(admin, "na", "expired", timeout=LEASE_TIME + 20)
    assert expired["lease_id"] == lease["lease_id"]
    assert (await _wait_event(db, lease["lease_id"], "expired"))[-1] == "expired"
    history = await admin.get("/history", params={"duid": lease["duid"]})
    assert history.status_code == 200, history.text
    assert [item["state"] for item in history.json()["items"]] == ["expired"]


@pytest.mark.parametrize("relay_trusted", [False])
async def test_untrusted_relay_is_ignored(relayed: Dhcp6Net, appliance: runtime.Running,
                                          admin: httpx.AsyncClient, tmp_path: Path) -> None:
    client = Dhclient6(relayed, tmp_path)
    client.start("-N")
    server: Any = appliance.state.dhcp6
    with trio.move_on_after(20):
        while not server.counters.drops["untrusted_relay"]:
            await trio.sleep(0.1)
    assert server.counters.drops["untrusted_relay"] >= 1
    assert "BOUND6" not in client.recorder.names()
    assert await _leases(admin, "na") == []


@pytest.fixture
def attached(lab: netns.Lab) -> Dhcp6Net:
    reason = netns.require_tools("dhclient")
    if reason:
        pytest.skip(reason)
    return dhcp_lab.build6_attached(lab)


async def test_directly_attached_client_is_served(lab: netns.Lab, attached: Dhcp6Net,
                                                  db: Database, nursery: trio.Nursery,
                                                  dsn: str, tmp_path: Path) -> None:
    async def seed(conn: Any) -> None:
        tenant = await conn.fetchval("SELECT id FROM tenants ORDER BY id LIMIT 1")
        prefix = await conn.fetchval(
            "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, $2) RETURNING id",
            tenant, attached.lan)
        subnet = await conn.fetchval(
            "INSERT INTO subnets (tenant_id, prefix_id, cidr) VALUES ($1, $2, $3) RETURNING id",
            tenant, prefix, attached.lan)
        base = ipaddress.IPv6Network(attached.lan).network_address
        await conn.execute("INSERT INTO pools (subnet_id, name, start_ip, end_ip) "
                           "VALUES ($1, 'direct', $2, $3)", subnet, str(base + 0x10),
                           str(base + 0x1F))

    await db.transaction(seed)
    await dhcp_lab.settled6(attached)
    config = make_config(dsn, dhcp6={"enabled": True, "listen": [],
                                     "interfaces": [attached.server_if]})
    state = AppState(config=config, db=db)
    server, scope, done = await start_server(nursery, state)
    try:
        client = Dhclient6(attached, tmp_path, "direct")
        client.start("-N")
        bound = await client.recorder.wait({"BOUND6"}, timeout=30)
        base = ipaddress.IPv6Network(attached.lan).network_address
        assert base + 0x10 <= ipaddress.IPv6Address(bound["ip"]) <= base + 0x1F, bound
        assert server.counters.leases["granted"] == 1
        assert server.counters.drops == {}
        lab.stop(client.proc)  # type: ignore[arg-type]
    finally:
        scope.cancel()
        await done.wait()
