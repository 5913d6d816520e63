"""dhcpcd (Debian dhcpcd-base), a second DHCPv6 client implementation, behind ISC
`dhcrelay -6`, served by the appliance (end to end; the lab and plan of
conftest.py). dhcpcd runs with its state directories bound to the test's own in a private
mount namespace (tests/support/dhcp_lab.py, Dhcpcd), so the host's are never touched."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import httpx
import pytest

from ipamd.db.bridge import Database
from tests.e2e.dhcp6.lab import (
    PD_PREFIX,
    RESERVED_DUID,
    events,
    history,
    in_pool,
    reserved,
    topics,
    wait_event,
    wait_lease,
)
from tests.support.dhcp_lab import Dhcp6Net, Dhcpcd

pytestmark = pytest.mark.netns


@pytest.fixture
def client_tools() -> tuple[str, ...]:
    return ("dhcpcd", "dhcrelay", "unshare")


async def test_dhcpcd_address_options_renew_release(
        relayed: Dhcp6Net, admin: httpx.AsyncClient, db: Database, tmp_path: Path) -> None:
    client = Dhcpcd(relayed, tmp_path)
    client.start()
    bound = await client.recorder.wait({"BOUND6"}, timeout=30)
    assert in_pool(relayed, bound["ip"]), bound
    assert bound["dns"] == "2001:db8:77::53" and bound["search"] == "lab.example", bound
    lease = await wait_lease(admin, "na", "active")
    assert lease["ip"] == bound["ip"] and lease["prefix_length"] == 128, lease
    assert lease["giaddr"] == relayed.link_ip and lease["iaid"] is not None, lease
    assert (await events(db, lease["lease_id"]))[0] == "granted"

    # Renew at T1 (5 s): the same binding, extended.
    await client.recorder.wait({"RENEW6"}, timeout=20)
    await wait_event(db, lease["lease_id"], "renewed")
    renewed = await wait_lease(admin, "na", "active")
    assert renewed["lease_id"] == lease["lease_id"] and renewed["ip"] == lease["ip"]

    # Release (dhcpcd -k): the binding ends and lease.released is announced.
    done = await client.release()
    assert done.returncode == 0, done.stderr
    released = await wait_lease(admin, "na", "released")
    assert released["lease_id"] == lease["lease_id"]
    journal = await wait_event(db, lease["lease_id"], "released")
    assert journal[0] == "granted" and journal[-1] == "released", journal
    assert (await topics(db, lease["lease_id"]))[-1] == "lease.released"
    rows = await history(admin, duid=lease["duid"])
    assert [(r["ip"], r["ia_type"], r["state"]) for r in rows] == \
        [(lease["ip"], "na", "released")], rows


async def test_dhcpcd_reserved_duid(relayed: Dhcp6Net, admin: httpx.AsyncClient,
                                    db: Database, tmp_path: Path) -> None:
    client = Dhcpcd(relayed, tmp_path, "reserved", duid=RESERVED_DUID.raw)
    client.start()
    bound = await client.recorder.wait({"BOUND6"}, timeout=30)
    assert bound["ip"] == reserved(relayed), bound
    lease = await wait_lease(admin, "na", "active")
    assert (lease["ip"], lease["duid"]) == (reserved(relayed), RESERVED_DUID.text), lease
    assert await wait_event(db, lease["lease_id"], "granted") == ["granted"]
    assert await topics(db, lease["lease_id"]) == ["lease.granted"]
    rows = await history(admin, duid=RESERVED_DUID.text)
    assert [(r["ip"], r["state"]) for r in rows] == [(reserved(relayed), "active")], rows


async def test_dhcpcd_delegated_prefix(relayed: Dhcp6Net, admin: httpx.AsyncClient,
                                       db: Database, tmp_path: Path) -> None:
    client = Dhcpcd(relayed, tmp_path, "pd", ia="ia_pd 1")
    client.start()
    bound = await client.recorder.wait({"BOUND6"}, timeout=30)
    prefix = ipaddress.IPv6Network(f"{bound['prefix']}/{bound['prefixlen']}")
    assert prefix.prefixlen == 64 and prefix.subnet_of(ipaddress.IPv6Network(PD_PREFIX)), bound
    lease = await wait_lease(admin, "pd", "active")
    assert lease["ip"] == str(prefix.network_address) and lease["prefix_length"] == 64, lease
    assert (await wait_event(db, lease["lease_id"], "granted"))[0] == "granted"
    rows = await history(admin, ip=str(prefix.network_address + 1))
    assert [(r["ia_type"], r["prefix_length"], r["state"]) for r in rows] == \
        [("pd", 64, "active")], rows

    done = await client.release()
    assert done.returncode == 0, done.stderr
    released = await wait_lease(admin, "pd", "released")
    assert released["lease_id"] == lease["lease_id"]
    await wait_event(db, lease["lease_id"], "released")
    assert (await topics(db, lease["lease_id"]))[-1] == "lease.released"

