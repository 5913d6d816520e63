"""The lease table's shared vocabulary, and the ends of leases no client asks for.

``OpKind`` (what a change asks of the store) and the columns both families' statements
return; the expiry worker's ``expire_batch`` (active/declined → expired; lapsed ``offered``
rows, which earlier versions wrote for Offers, deleted), the API's ``force_release`` and
``drop_ended`` (a subnet with no live lease left being deleted). DHCPv4 and DHCPv6 leases
are rows of one table (migration 0017), so these serve both. Part of the lease store:
``leasestore`` is its one name (docs/DEVELOPING.md).
"""

from __future__ import annotations

import uuid
from enum import IntEnum
from typing import Any

import asyncpg

from ipamd.core.lease_events import JOURNAL_CHANNEL, event_ctes


class OpKind(IntEnum):
    """What an ``Op`` asks of the store (not a DHCP message type: see options.OFFER/ACK)."""

    INSERT = 1  # a new lease: active (the Ack of an Offer) or declined (an Offer declined)
    ACK = 3  # the client's active lease at that address renewed (or an older offered row)
    RELEASE = 4  # active -> released (client Release)
    DECLINE = 5  # offered/active -> declined for the probation period


ZERO = "'0.0.0.0'::inet"  # an IPv4 address as int8: ip - ZERO


LEASE_COLUMNS = ("lease_id, subnet_id, ip, state, mac, client_id, duid, hostname, fqdn, "
                 "circuit_id, remote_id, giaddr, starts_at, expires_at, iaid, ia_type, "
                 "prefix_length")


# The expiry worker's change, any node: ``FOR UPDATE SKIP LOCKED`` lets every node run it.
# A lease comes up at its sweep_at (migration 0014): ended if its time is up, else (renewed
# since) it comes up again at its expiry.
_EXPIRE = f"""
WITH due AS (
    SELECT lease_id, state, expires_at <= now() AS over FROM leases
    WHERE state IN ('offered', 'active', 'declined') AND sweep_at <= now()
    ORDER BY sweep_at LIMIT $1
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM leases l USING due
    WHERE l.lease_id = due.lease_id AND due.over AND due.state = 'offered'
    RETURNING l.lease_id, l.subnet_id
), u AS (
    UPDATE leases l SET state = 'expired', updated_at = now()
    FROM due WHERE l.lease_id = due.lease_id AND due.over AND due.state <> 'offered'
    RETURNING l.*, 'expired'::text AS event
), later AS (
    UPDATE leases l SET sweep_at = l.expires_at
    FROM due WHERE l.lease_id = due.lease_id AND NOT due.over
    RETURNING l.lease_id
){event_ctes("u", "event")}
SELECT lease_id, subnet_id, event, true AS ended FROM u
UNION ALL SELECT lease_id, subnet_id, NULL, true FROM gone
UNION ALL SELECT lease_id, NULL, NULL, false FROM later
"""


async def expire_batch(
    conn: asyncpg.Connection, limit: int
) -> tuple[list[tuple[uuid.UUID, uuid.UUID, Any]], int]:
    """One batch, in the caller's transaction: ((lease_id, subnet_id, event or None) per
    lease ended, how many leases came up). Fewer than ``limit`` came up: nothing else is due.

    active -> expired and declined -> expired (probation over), each with its ``expired``
    event; a lapsed ``offered`` row (an Offer hold an earlier version wrote) is deleted: it
    never was a lease, so it leaves no history. A lease renewed since it was last looked at
    comes up again at its expiry.
    """
    rows = await conn.fetch(_EXPIRE, limit)
    return [(r["lease_id"], r["subnet_id"], r["event"]) for r in rows if r["ended"]], len(rows)


# $2: whether this is a lease event. An ``offered`` row (an earlier version's Offer hold)
# was never granted: ending it leaves no history and no lease.released. The API runs it,
# maybe in a worker process: the NOTIFY (sent at commit) wakes the main process's deriver.
_FORCE_RELEASE = f"""
WITH u AS (
    UPDATE leases SET state = 'released', expires_at = least(expires_at, now()),
        sweep_at = least(sweep_at, now()), updated_at = now()
    WHERE lease_id = $1 AND state IN ('offered', 'active', 'declined')
    RETURNING *, CASE WHEN $2 THEN 'released' END AS event
){event_ctes("u", "event")}
SELECT lease_id, pg_notify('{JOURNAL_CHANNEL}', '') FROM u
"""


async def force_release(conn: asyncpg.Connection, lease_id: uuid.UUID, granted: bool) -> None:
    """An operator ends a live lease (the caller holds it FOR UPDATE, in its transaction).

    ``granted``: the lease was more than an Offer hold, so its end is a ``released`` event.
    """
    await conn.fetchval(_FORCE_RELEASE, lease_id, granted)


async def drop_ended(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> None:
    """A subnet being deleted (no live lease left): its ended leases go, lease_events keeps
    their history, so they must not pin the subnet."""
    await conn.execute("DELETE FROM leases WHERE subnet_id = $1", subnet_id)
