"""Helpers of the DHCPv6 end-to-end tests: the seeded plan's figures, and the bindings read
back through GET /leases, /history and the lease_events and events rows written with them."""

from __future__ import annotations

import ipaddress
from typing import Any

import httpx
import trio

from ipamd.core.lease_events import derive_all
from ipamd.db.bridge import Database
from ipamd.dhcp6.duid import Duid
from tests.support.dhcp_lab import Dhcp6Net

LEASE_TIME = 16  # valid 16 s, preferred 10 s, T1 5 s: the client renews within the test
PD_PREFIX = "2001:db8:77:ff00::/56"  # delegated as /64s
RESERVED_DUID = Duid.ll(bytes.fromhex("027700000199"))


def pool(net: Dhcp6Net) -> tuple[str, str]:
    base = ipaddress.IPv6Network(net.lan).network_address
    return str(base + 0x100), str(base + 0x1FF)


def in_pool(net: Dhcp6Net, address: str) -> bool:
    first, last = pool(net)
    return ipaddress.IPv6Address(first) <= ipaddress.IPv6Address(address) \
        <= ipaddress.IPv6Address(last)


def reserved(net: Dhcp6Net) -> str:
    return str(ipaddress.IPv6Network(net.lan).network_address + 0x99)


async def leases(client: httpx.AsyncClient, ia_type: str) -> list[dict[str, Any]]:
    listed = await client.get("/leases", params={"limit": 1000})
    assert listed.status_code == 200, listed.text
    return [lease for lease in listed.json()["items"] if lease["ia_type"] == ia_type]


async def wait_lease(client: httpx.AsyncClient, ia_type: str, state: str,
                     timeout: float = 15) -> dict[str, Any]:
    with trio.move_on_after(timeout):
        while True:
            found = [x for x in await leases(client, ia_type) if x["state"] == state]
            if found:
                assert len(found) == 1, found
                return found[0]
            await trio.sleep(0.1)
    raise AssertionError(f"no {state} {ia_type} lease: {await leases(client, ia_type)}")


async def events(db: Database, lease_id: str) -> list[str]:
    async def read(conn: Any) -> list[str]:
        await derive_all(conn)
        rows = await conn.fetch("SELECT event FROM lease_events WHERE lease_id = $1::uuid "
                                "ORDER BY at, id", lease_id)
        return [row["event"] for row in rows]

    return await db.run(read)


async def wait_event(db: Database, lease_id: str, wanted: str, timeout: float = 15) -> list[str]:
    with trio.move_on_after(timeout):
        while wanted not in (found := await events(db, lease_id)):
            await trio.sleep(0.1)
        return found
    raise AssertionError(f"no {wanted} for {lease_id}: {await events(db, lease_id)}")


async def topics(db: Database, lease_id: str) -> list[str]:
    """The events rows (webhook topics) written for a lease, oldest first."""
    async def read(conn: Any) -> list[str]:
        rows = await conn.fetch("SELECT topic FROM events WHERE payload->>'lease_id' = $1 "
                                "ORDER BY id", lease_id)
        return [r["topic"] for r in rows]

    return await db.run(read)


async def history(client: httpx.AsyncClient, **query: str) -> list[dict[str, Any]]:
    found = await client.get("/history", params=query)
    assert found.status_code == 200, found.text
    return list(found.json()["items"])
