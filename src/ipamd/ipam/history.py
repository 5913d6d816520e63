"""Occupancy history: who held which address when (a subnet's address map "As of" a moment
is address_map.py).

Lease changes are journaled and derived into ``lease_events`` (core/lease_events.py); a
trigger (migration 0005) folds them into ``lease_intervals``, one row per occupancy.
Everything here reads that table, and deletes from it past the retention.
Asyncio side: call through the bridge.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core.lease_events import derive_all

# The identity parameters of GET /history, each with the condition it puts on
# lease_intervals. $1 is the (normalised) value, $2 the optional giaddr.
IDENTITY_SQL: dict[str, str] = {
    "ip": "ip = $1::inet",
    "mac": "mac = $1::macaddr",
    "hostname": "(lower(hostname) = $1::text OR lower(rtrim(fqdn, '.')) = $1::text)",
    "client_id": "client_id = $1::bytea",
    "duid": "duid = $1::text",
    "circuit": "circuit_id = $1::bytea",
    "remote": "remote_id = $1::bytea",
}
IDENTITIES: tuple[str, ...] = tuple(IDENTITY_SQL)
# An IPv6 address is also found inside the prefixes delegated to DHCPv6 clients (IA_PD:
# ip is the prefix's first address; index lease_intervals_delegated, migration 0018).
IP6_SQL = ("(ip = $1::inet OR (ia_type = 'pd' AND "
           "set_masklen(ip, prefix_length) >>= $1::inet))")

# An interval with no end event whose lease ran out anyway (the expiry sweeper has not run
# yet, or the appliance was down) ended when it ran out.
EFFECTIVE_TO = "coalesce(to_at, CASE WHEN expires_at < now() THEN expires_at END)"
EFFECTIVE_STATE = (
    "CASE WHEN to_at IS NULL AND expires_at < now() AND state = 'active' "
    "THEN 'expired' ELSE state END"
)

_INTERVAL_COLUMNS = f"""
    id, lease_id, subnet_id, host(ip) AS ip, mac::text AS mac, client_id, duid,
    coalesce(hostname, fqdn) AS hostname, circuit_id, remote_id, host(giaddr) AS giaddr,
    from_at, {EFFECTIVE_TO} AS to_at, {EFFECTIVE_STATE} AS state, iaid, ia_type,
    prefix_length"""


@dataclass(frozen=True)
class Lookup:
    """One GET /history question: an identity and a time window.

    Intervals are [from, to): those begun at or before ``end`` and not ended by ``start``
    overlap the window; ``start == end`` asks for one moment.
    """

    kind: str  # one of IDENTITIES
    value: Any  # normalised: str for ip/mac/hostname/duid, bytes for the others
    giaddr: str | None = None  # narrows circuit / remote: they are unique per relay only
    start: dt.datetime | None = None
    end: dt.datetime | None = None


def lookup_sql(lookup: Lookup, after: tuple[dt.datetime, int] | None, limit: int
               ) -> tuple[str, list[Any]]:
    """The page query for a lookup: fixed fragments only, values as parameters."""
    if lookup.kind not in IDENTITY_SQL:
        raise ValueError(f"unknown identity {lookup.kind!r}")
    args: list[Any] = [lookup.value, lookup.giaddr]
    identity = IDENTITY_SQL[lookup.kind]
    if lookup.kind == "ip" and ":" in str(lookup.value):
        identity = IP6_SQL
    where = [identity, "($2::inet IS NULL OR giaddr = $2::inet)"]
    if lookup.end is not None:
        args.append(lookup.end)
        where.append(f"from_at <= ${len(args)}")
    if lookup.start is not None:
        args.append(lookup.start)
        where.append(f"({EFFECTIVE_TO} IS NULL OR {EFFECTIVE_TO} > ${len(args)})")
    if after is not None:
        args += [after[0], after[1]]
        where.append(f"(from_at, id) > (${len(args) - 1}, ${len(args)})")
    args.append(limit + 1)
    sql = (
        f"SELECT {_INTERVAL_COLUMNS} FROM lease_intervals WHERE {' AND '.join(where)} "
        f"ORDER BY from_at, id LIMIT ${len(args)}"
    )
    return sql, args


async def intervals_page(
    conn: asyncpg.Connection, lookup: Lookup, after: tuple[dt.datetime, int] | None, limit: int
) -> list[asyncpg.Record]:
    """limit+1 intervals in time order after the cursor (the extra one says there is more).

    The first page derives the lease journal first: the answer includes every change made
    before the question (later pages continue that answer)."""
    if after is None:
        await derive_all(conn)
    sql, args = lookup_sql(lookup, after, limit)
    return await conn.fetch(sql, *args)


# --- retention ---------------------------------------------------------------------------

async def purge(
    conn: asyncpg.Connection, retention_days: int, now: dt.datetime | None = None,
    batch: int = 10_000,
) -> tuple[int, int]:
    """Delete intervals that ended, and events that happened, before the retention cut-off.

    Open intervals are kept whatever their age (they are still true). Batches keep each
    lock short; returns (intervals, events) deleted.
    """
    moment = now or dt.datetime.now(dt.UTC)
    cutoff = moment - dt.timedelta(days=retention_days)
    totals = [0, 0]
    statements = (
        """DELETE FROM lease_intervals WHERE id IN (
               SELECT id FROM lease_intervals WHERE to_at < $1 LIMIT $2)""",
        """DELETE FROM lease_events WHERE id IN (
               SELECT id FROM lease_events WHERE at < $1 LIMIT $2)""",
    )
    for index, sql in enumerate(statements):
        while True:
            count = int((await conn.execute(sql, cutoff, batch)).split()[-1])
            totals[index] += count
            if count < batch:
                break
    return totals[0], totals[1]
