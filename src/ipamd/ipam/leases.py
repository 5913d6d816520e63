"""Leases as the API shows them: list, read, and force-release (audited, lease.released).

Asyncio-side units (``fn(conn, ...)``). The DHCP server owns lease writes; the only
write here is an operator's force-release, which follows the server's own rules: the
lease change, its lease_events row and its ``lease.released`` event in one
transaction, plus the audit entry.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit, identifiers
from ipamd.core.errors import Conflict, NotFound, conflict, not_found
from ipamd.dhcp import leasestore
from ipamd.dhcp.pingcheck import PING_CONFLICT_KEY

STATES = ("offered", "active", "released", "expired", "declined")
LIVE = ("offered", "active", "declined")

# A ping check's conflict (docs/api-ipam.md, "Ping check"): a constant, never input.
_PING_KEY = f"'\\x{PING_CONFLICT_KEY.hex()}'::bytea"
_COLUMNS = f"""lease_id, host(ip) AS ip, subnet_id, hostname, fqdn, state, mac::text AS mac,
    client_id, duid, circuit_id, remote_id, host(giaddr) AS giaddr, starts_at, expires_at,
    created_at, updated_at, iaid, ia_type, prefix_length, preferred_lifetime, valid_lifetime,
    subscriber_id, client_key = {_PING_KEY} AS ping_conflict"""


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {
        "lease_id": row["lease_id"],
        "ip": row["ip"],
        "subnet_id": row["subnet_id"],
        "hostname": row["hostname"],
        "fqdn": row["fqdn"],
        "state": row["state"],
        "ping_conflict": row["ping_conflict"],
        "mac": row["mac"],
        "client_id": identifiers.hex_or_none(row["client_id"]),
        "duid": row["duid"],
        "circuit_id": identifiers.hex_or_none(row["circuit_id"]),
        "remote_id": identifiers.hex_or_none(row["remote_id"]),
        "giaddr": row["giaddr"],
        # DHCPv6 bindings (migration 0017); null for a DHCPv4 lease.
        "iaid": row["iaid"],
        "ia_type": row["ia_type"],
        "prefix_length": row["prefix_length"],
        "preferred_lifetime": row["preferred_lifetime"],
        "valid_lifetime": row["valid_lifetime"],
        "subscriber_id": identifiers.hex_or_none(row["subscriber_id"]),
        "starts_at": row["starts_at"],
        "expires_at": row["expires_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


@dataclass(frozen=True)
class LeaseFilter:
    subnet_id: uuid.UUID | None = None
    state: str | None = None
    ip: str | None = None
    mac: str | None = None
    hostname: str | None = None


# The filters as SQL over $2..$6 (the order of ``_filter_args``).
_FILTERED = """($2::uuid IS NULL OR subnet_id = $2)
              AND ($3::text IS NULL OR state = $3)
              AND ($4::inet IS NULL OR ip = $4)
              AND ($5::macaddr IS NULL OR mac = $5)
              AND ($6::text IS NULL OR lower(hostname) = lower($6))"""

# Sort keys a list may ask for: the SQL of each (never null, so a row comparison orders and
# pages every row), the SQL type of its cursor value, and the SQL of that value as the cursor
# carries it. Names only from this table reach SQL.
# Qualified (l.): ORDER BY would take an output column of the same name (ip is host(ip)).
SORTS: dict[str, tuple[str, str, str]] = {
    "ip": ("l.ip", "inet", "host(l.ip)"),
    "state": ("l.state", "text", "l.state"),
    "mac": ("coalesce(l.mac::text, '')", "text", "coalesce(l.mac::text, '')"),
    "hostname": ("coalesce(lower(l.hostname), '')", "text", "coalesce(lower(l.hostname), '')"),
    "expires_at": ("l.expires_at", "timestamptz", "l.expires_at"),
}


def _filter_args(f: LeaseFilter) -> tuple[Any, ...]:
    return (f.subnet_id, f.state, f.ip, f.mac, f.hostname)


async def list_page(
    conn: asyncpg.Connection, f: LeaseFilter, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    """Oldest first (lease ids are UUIDv7); fetches limit+1 rows for paging."""
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM leases
            WHERE ($1::uuid IS NULL OR lease_id > $1) AND {_FILTERED}
            ORDER BY lease_id LIMIT $7""",
        after, *_filter_args(f), limit + 1,
    )
    return [public(r) for r in rows]


async def sorted_page(
    conn: asyncpg.Connection, f: LeaseFilter, sort: str, descending: bool,
    after: tuple[Any, uuid.UUID] | None, limit: int,
) -> list[tuple[dict[str, Any], Any]]:
    """A page ordered by a SORTS key, then lease_id (the same way round); each lease with its
    sort key, for the next cursor. limit+1 rows."""
    expr, cast, key = SORTS[sort]
    op, way = ("<", "DESC") if descending else (">", "ASC")
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS}, {key} AS sort_key FROM leases l
            WHERE ($1::boolean OR ({expr}, l.lease_id) {op} ($7::{cast}, $8::uuid))
              AND {_FILTERED}
            ORDER BY {expr} {way}, l.lease_id {way} LIMIT $9""",
        after is None, *_filter_args(f), *(after or (None, None)), limit + 1,
    )
    return [(public(r), r["sort_key"]) for r in rows]


async def count(conn: asyncpg.Connection, f: LeaseFilter) -> int:
    """How many leases the filters select."""
    selected: int = await conn.fetchval(
        f"SELECT count(*) FROM leases WHERE $1::boolean AND {_FILTERED}",
        True, *_filter_args(f),
    )
    return selected


async def get(conn: asyncpg.Connection, lease_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM leases WHERE lease_id = $1", lease_id)
    if row is None:
        raise not_found("lease", str(lease_id))
    return public(row)


async def release_many(
    conn: asyncpg.Connection, actor: str, lease_ids: list[uuid.UUID]
) -> dict[str, list[dict[str, Any]]]:
    """Force-release each lease as ``release`` does (in the caller's one transaction, locked in
    id order); a lease that is unknown or no longer live is skipped with the reason."""
    released: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for lease_id in sorted(set(lease_ids)):
        try:
            released.append(await release(conn, actor, lease_id))
        except (NotFound, Conflict) as error:  # raised before anything was written
            skipped.append({"lease_id": lease_id, "reason": str(error)})
    return {"released": released, "skipped": skipped}


async def release(conn: asyncpg.Connection, actor: str, lease_id: uuid.UUID) -> dict[str, Any]:
    """Force-release a live lease (in the caller's transaction); returns the lease after."""
    before = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM leases WHERE lease_id = $1 FOR UPDATE", lease_id
    )
    if before is None:
        raise not_found("lease", str(lease_id))
    if before["state"] not in LIVE:
        raise conflict(f"lease {lease_id} is already {before['state']}")
    await leasestore.force_release(conn, lease_id, granted=before["state"] != "offered")
    after = await get(conn, lease_id)
    await audit.record(conn, actor, "release", "lease", lease_id, public(before), after)
    return after
