"""Lease changes and what follows from them: the journal row every change writes, and the
derivation of its history row (``lease_events``) and outbox event (``events``).

A statement that changes leases ends with ``event_ctes``: one ``lease_journal`` row per
changed lease, in the change's own transaction (migration 0011). ``derive`` moves journal
rows, oldest first, into ``lease_events`` (whose trigger folds the occupancy history) and
``events`` (whose triggers fan out to webhooks, DNS and alerts), and deletes them, in one
transaction. ``workers/lease_journal.py`` derives in the background on every node; a reader
that must see every change made so far (the history, the dashboard) derives first
(``derive_all``).
"""

from __future__ import annotations

import asyncpg
import trio

# NOTIFY channel for journal rows written outside the deriver's process (an API worker's
# force-release); the main process's own writers tell it directly (JournalPending).
JOURNAL_CHANNEL = "ipamd_lease_journal"
# Journal rows per derive statement: big enough that a lease storm is derived in few
# statements, small enough that one statement's locks and its fan-out stay short.
DERIVE_BATCH = 2000
# A reader's derive_all stops after this many batches: a journal that keeps growing faster
# than it is derived (a storm) must not hold a history request; the rest follows shortly.
_READER_BATCHES = 8


def event_ctes(source: str, event: str) -> str:
    """A CTE writing the ``lease_journal`` row of each changed lease.

    ``source`` has the lease columns and ``event`` (NULL: a change that is no event). A
    DHCPv6 binding's IA goes with it, so that deriving reads no lease row (migration 0025).
    """
    return f"""
, journaled AS (
    INSERT INTO lease_journal (event, lease_id, subnet_id, ip, state, mac, client_id, duid,
                               hostname, fqdn, circuit_id, remote_id, giaddr, starts_at,
                               expires_at, iaid, ia_type, prefix_length)
    SELECT {event}, lease_id, subnet_id, ip, state, mac, client_id, duid, hostname, fqdn,
           circuit_id, remote_id, giaddr, starts_at, expires_at, iaid, ia_type, prefix_length
    FROM {source} WHERE {event} IS NOT NULL
)"""


async def derive(conn: asyncpg.Connection, limit: int = DERIVE_BATCH) -> int:
    """Derive up to ``limit`` journal rows (one statement, its own transaction unless the
    caller is in one); how many were derived."""
    moved: int = await conn.fetchval("SELECT lease_journal_derive($1)", limit)
    return moved


async def derive_all(conn: asyncpg.Connection) -> int:
    """Derive what the journal holds now, so that a read after it sees every change made so
    far (bounded: see _READER_BATCHES); how many rows were derived."""
    total = 0
    for _ in range(_READER_BATCHES):
        moved = await derive(conn)
        total += moved
        if moved < DERIVE_BATCH:
            break
    return total


class JournalPending:
    """This process's journal writers tell its deriver that rows are waiting (no database
    round trip: the DHCP committer calls ``written`` after every batch)."""

    def __init__(self) -> None:
        self._event = trio.Event()

    def written(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        """Until rows were written since the last wait returned."""
        await self._event.wait()
        self._event = trio.Event()
