"""Real Debian DHCPv6 clients behind a real relay, served by the appliance (end to end).

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
from ipamd.db.bridge import Database
from ipamd.state import AppState
from tests.conftest import make_config
from tests.e2e.dhcp6.lab import (
    LEASE_TIME,
    PD_PREFIX,
    RESERVED_DUID,
    events,
    history,
    in_pool,
    leases,
    reserved,
    topics,
    wait_event,
    wait_lease,
)
from tests.integration.dhcp6.conftest import start_server
from tests.support import dhcp_lab, netns
from tests.support.dhcp_lab import Dhclient6, Dhcp6Net

pytestmark = pytest.mark.netns


async def test_dhclient6_address_options_renew_release(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, db: Database, tmp_path: Path) -> None:
    client = Dhclient6(relayed, tmp_path)
    client.start("-N")
    bound = await client.recorder.wait({"BOUND6"}, timeout=30)
    assert in_pool(relayed, bound["ip"]), bound
    assert bound["dns"] == "2001:db8:77::53" and bound["search"] == "lab.example.", bound
    lease = await wait_lease(admin, "na", "active")
    assert lease["ip"] == bound["ip"] and lease["prefix_length"] == 128, lease
    assert lease["giaddr"] == relayed.link_ip and lease["duid"], lease
    assert (await events(db, lease["lease_id"]))[0] == "granted"

    # Renew at T1 (5 s): the same binding, extended.
    await client.recorder.wait({"RENEW6"}, timeout=20)
    await wait_event(db, lease["lease_id"], "renewed")
    renewed = await wait_lease(admin, "na", "active")
    assert renewed["lease_id"] == lease["lease_id"] and renewed["ip"] == lease["ip"]

    # Release: the binding ends and lease.released is announced.
    relayed.lab.stop(client.proc)  # type: ignore[arg-type]
    await client.release("-N")
    released = await wait_lease(admin, "na", "released")
    assert released["lease_id"] == lease["lease_id"]
    journal = await wait_event(db, lease["lease_id"], "released")
    assert journal[0] == "granted" and journal[-1] == "released", journal
    assert (await topics(db, lease["lease_id"]))[-1] == "lease.released"


async def test_dhclient6_reserved_duid_and_delegated_prefix(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, tmp_path: Path) -> None:
    client = Dhclient6(relayed, tmp_path, "reserved", duid=RESERVED_DUID.raw)
    client.start("-N")
    bound = await client.recorder.wait({"BOUND6"}, timeout=30)
    assert bound["ip"] == reserved(relayed), bound
    relayed.lab.stop(client.proc)  # type: ignore[arg-type]

    delegated = Dhclient6(relayed, tmp_path, "pd")
    delegated.start("-P")
    got = await delegated.recorder.wait({"BOUND6"}, timeout=30)
    prefix = ipaddress.IPv6Network(got["prefix"])
    assert prefix.prefixlen == 64 and prefix.subnet_of(ipaddress.IPv6Network(PD_PREFIX)), got
    lease = await wait_lease(admin, "pd", "active")
    assert lease["ip"] == str(prefix.network_address) and lease["prefix_length"] == 64, lease


async def test_dhclient6_gone_its_binding_expires(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, db: Database, tmp_path: Path) -> None:
    client = Dhclient6(relayed, tmp_path, "gone")
    client.start("-N")
    await client.recorder.wait({"BOUND6"}, timeout=30)
    lease = await wait_lease(admin, "na", "active")
    assert client.proc is not None
    client.proc.send_signal(signal.SIGKILL)  # no Release: the binding runs out
    expired = await wait_lease(admin, "na", "expired", timeout=LEASE_TIME + 20)
    assert expired["lease_id"] == lease["lease_id"]
    assert (await wait_event(db, lease["lease_id"], "expired"))[-1] == "expired"
    history = await admin.get("/history", params={"duid": lease["duid"]})
    assert history.status_code == 200, history.text
    assert [item["state"] for item in history.json()["items"]] == ["expired"]



async def test_dhclient6_declines_an_address_in_use(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, db: Database, tmp_path: Path) -> None:
    """Duplicate address detection fails for the address the client is given: another
    namespace on its link (the relay's) already holds it. dhclient declines it (its script
    exits 3, RFC 8415 §18.2.8); the server quarantines it (declined, on probation) and the
    client's next Solicit gets another address."""
    taken = reserved(relayed)  # a DUID reservation: the address it is given is known
    net = relayed.lab
    net.address(relayed.relay_ns, relayed.relay_lan_if, f"{taken}/128")
    net.sysctl(relayed.client_ns, f"net.ipv6.conf.{relayed.client_if}.accept_dad", "1")
    client = Dhclient6(relayed, tmp_path, "dad", duid=RESERVED_DUID.raw, dad=True)
    client.start("-N")

    failed = await client.recorder.wait({"DADFAILED"}, timeout=30)
    assert failed["ip"] == taken, failed
    declined = await wait_lease(admin, "na", "declined", timeout=20)
    assert (declined["ip"], declined["duid"]) == (taken, RESERVED_DUID.text), declined
    journal = await wait_event(db, declined["lease_id"], "declined")
    assert journal == ["granted", "declined"], journal
    assert (await topics(db, declined["lease_id"]))[-1] == "lease.declined"
    rows = await history(admin, ip=taken)
    assert [(r["duid"], r["state"]) for r in rows] == [(RESERVED_DUID.text, "declined")], rows

    again = await wait_lease(admin, "na", "active", timeout=30)
    assert again["ip"] != taken and in_pool(relayed, again["ip"]), again
    assert again["duid"] == RESERVED_DUID.text
    bound = await client.recorder.wait({"BOUND6"}, timeout=20,
                                       after=client.recorder.names().index("DADFAILED"))
    assert bound["ip"] == again["ip"], bound

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
    assert await leases(admin, "na") == []


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
