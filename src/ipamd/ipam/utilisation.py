"""Size, used and free for subnets, pools and prefixes, counted in SQL without a row-by-row union.

Used addresses are the gateway, reservations (R), assignments (A) and live leases (L),
each address counted once however many of those hold it. Each table holds an address at
most once per subnet (unique indexes), so

    |R or A or L| = |R| + |A| + |L| - |R and A| - |R and L| - |A and L| + |R and A and L|

The three sizes are index-only counts; the overlaps are probed from the managed side
(reservations, assignments: few, capped by the license) into the other tables' unique
(subnet_id, ip) indexes. Nothing hashes or sorts the leases, so the cost stays a count of
index entries plus one probe per managed address. Excluded addresses that nothing uses
are neither used nor free.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from ipamd.core import validate
from ipamd.ipam.occupancy import LIVE_SQL
from ipamd.ipam.ranges import count_out, span
from ipamd.ipam.rows import one


def _lease_at(sid: str, ip: str) -> str:
    # OFFSET 0 keeps the probe a per-row index look-up (not a hash join over all leases).
    return (f"EXISTS (SELECT 1 FROM leases y WHERE y.subnet_id = {sid} AND y.ip = {ip}"
            f" AND y.{LIVE_SQL} OFFSET 0)")


def _reserved_at(sid: str, ip: str) -> str:
    return (f"EXISTS (SELECT 1 FROM reservations y WHERE y.subnet_id = {sid} AND y.ip = {ip}"
            " OFFSET 0)")


def _assigned_at(sid: str, ip: str) -> str:
    return (f"EXISTS (SELECT 1 FROM assignments y WHERE y.subnet_id = {sid} AND y.ip = {ip}"
            " OFFSET 0)")


def _counts(sid: str, lo: str, hi: str, gateway: str) -> str:
    """A one-row SELECT of r, a, l, ra, rl, al, ral, g for subnet ``sid``'s addresses in
    [lo, hi]. R and A are disjoint when written through the API, so the probe for R∩A∩L
    only runs for the (normally no) assignments that R∩A finds."""
    within = f"subnet_id = {sid} AND ip BETWEEN {lo} AND {hi}"
    m_within = f"m.subnet_id = {sid} AND m.ip BETWEEN {lo} AND {hi}"
    return f"""SELECT
      (SELECT count(*) FROM reservations WHERE {within}) AS r,
      (SELECT count(*) FROM assignments WHERE {within}) AS a,
      (SELECT count(*) FROM leases WHERE {within} AND {LIVE_SQL}) AS l,
      both_.ra,
      (SELECT count(*) FROM reservations m
        WHERE {m_within} AND {_lease_at(sid, 'm.ip')}) AS rl,
      (SELECT count(*) FROM assignments m
        WHERE {m_within} AND {_lease_at(sid, 'm.ip')}) AS al,
      both_.ral,
      (CASE WHEN {gateway} BETWEEN {lo} AND {hi}
                 AND NOT {_reserved_at(sid, gateway)} AND NOT {_assigned_at(sid, gateway)}
                 AND NOT {_lease_at(sid, gateway)}
            THEN 1 ELSE 0 END) AS g
    FROM (SELECT count(*) AS ra, count(*) FILTER (WHERE {_lease_at(sid, 'm.ip')}) AS ral
          FROM assignments m WHERE {m_within} AND {_reserved_at(sid, 'm.ip')}) both_"""


_SUMS = "sum(r) AS r, sum(a) AS a, sum(l) AS l, sum(ra) AS ra, sum(rl) AS rl, " \
        "sum(al) AS al, sum(ral) AS ral, sum(g) AS g"

# The range itself, and its excludes (which never overlap each other) summed. The excludes'
# bounds come back as addresses: their sizes are summed in Python, since an IPv6 exclude can
# hold more addresses than a bigint (inet - inet) counts.
_RANGE = f"""
SELECT c.*, NULL::inet[] AS los, NULL::inet[] AS his
  FROM ({_counts("$1", "$2", "$3", "$4::inet")}) c
UNION ALL
SELECT {_SUMS}, array_agg(lo), array_agg(hi) FROM (
    SELECT greatest(start_ip, $2) AS lo, least(end_ip, $3) AS hi FROM excludes
    WHERE subnet_id = $1 AND start_ip <= $3 AND end_ip >= $2
) ex, LATERAL ({_counts("$1", "ex.lo", "ex.hi", "$4::inet")}) c
"""

# Every address of both families lies between these (inet sorts IPv4 before IPv6).
_LOWEST, _HIGHEST = "'0.0.0.0'::inet", "'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'::inet"
_BITS = "CASE family(s.cidr) WHEN 4 THEN 32 ELSE 128 END"

_PREFIX = f"""
WITH inner_subnets AS (
    SELECT id, cidr, gateway FROM subnets WHERE tenant_id = $1 AND cidr <<= $2
)
SELECT count(*) AS subnets,
       coalesce(sum((2::numeric) ^ ({_BITS} - masklen(s.cidr))), 0) AS covered, {_SUMS}
FROM inner_subnets s,
     LATERAL ({_counts("s.id", _LOWEST, _HIGHEST, "s.gateway")}) c
"""


@asynccontextmanager
async def _no_jit(conn: asyncpg.Connection) -> AsyncIterator[None]:
    """These statements are many cheap index probes whose summed cost crosses
    jit_above_cost; compiling them would cost far more than running them."""
    async with conn.transaction():
        await conn.execute("SET LOCAL jit = off")
        yield


def used_of(row: asyncpg.Record | dict[str, Any]) -> int:
    """Inclusion-exclusion over reservations, assignments and live leases, plus the gateway."""
    value = (row["r"] or 0) + (row["a"] or 0) + (row["l"] or 0) - (row["ra"] or 0) \
        - (row["rl"] or 0) - (row["al"] or 0) + (row["ral"] or 0) + (row["g"] or 0)
    return int(value)


def _percent(used: int, size: int) -> float:
    return round(100.0 * used / size, 2) if size else 0.0


async def _range(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, low: validate.IPAddress,
    high: validate.IPAddress, gateway: validate.IPAddress | None,
) -> dict[str, Any]:
    async with _no_jit(conn):
        whole, excludes = await conn.fetch(_RANGE, subnet_id, low, high, gateway)
    size = span(low, high)
    used = used_of(whole)
    bounds = zip(excludes["los"] or (), excludes["his"] or (), strict=True)
    excluded = sum(span(lo, hi) for lo, hi in bounds)
    excluded_unused = excluded - used_of(excludes)
    version = low.version
    return {
        "size": count_out(size, version),
        "used": used,
        "free": count_out(size - used - excluded_unused, version),
        "excluded": count_out(excluded_unused, version),
        "reserved": whole["r"],
        "assigned": whole["a"],
        "leased": whole["l"],
        "percent_used": _percent(used, size),
    }


async def subnet(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> dict[str, Any]:
    s = await one(conn, "SELECT id, cidr, gateway FROM subnets WHERE id = $1", subnet_id,
                  "subnet")
    net = s["cidr"]
    first, last = validate.host_range(net)
    out = await _range(conn, subnet_id, validate.address_in_family(net, first),
                       validate.address_in_family(net, last), s["gateway"])
    pools = await conn.fetch("SELECT start_ip, end_ip FROM pools WHERE subnet_id = $1",
                             subnet_id)
    pool_size = sum(span(p["start_ip"], p["end_ip"]) for p in pools)
    return {"subnet_id": subnet_id, "cidr": str(net), **out,
            "pools": len(pools), "pool_size": count_out(pool_size, net.version)}


# Every subnet's counts in one statement: its assignable range comes in as arrays (computed
# by validate.host_range, as for one subnet), each probed by the same _counts.
_SUBNETS = f"""
SELECT t.id, c.*
FROM unnest($1::uuid[], $2::inet[], $3::inet[], $4::inet[]) AS t(id, lo, hi, gateway),
     LATERAL ({_counts("t.id", "t.lo", "t.hi", "t.gateway")}) c
"""


async def subnets_all(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Every subnet's utilisation as ``subnet`` defines it (used of its assignable addresses),
    worst first; the dashboard and the subnet_utilisation alert read this, so one subnet shows
    one figure everywhere (docs/operations-monitoring.md)."""
    rows = await conn.fetch("SELECT id, name, cidr, gateway FROM subnets ORDER BY id")
    bounds = [validate.host_range(r["cidr"]) for r in rows]
    paired = list(zip(rows, bounds, strict=True))
    args = ([r["id"] for r in rows],
            [validate.address_in_family(r["cidr"], lo) for r, (lo, _) in paired],
            [validate.address_in_family(r["cidr"], hi) for r, (_, hi) in paired],
            [r["gateway"] for r in rows])
    async with _no_jit(conn):
        counts = {c["id"]: c for c in await conn.fetch(_SUBNETS, *args)}
    out = []
    for r, (lo, hi) in paired:
        size, used = hi - lo + 1, used_of(counts[r["id"]])
        out.append({"subnet_id": r["id"], "cidr": str(r["cidr"]), "name": r["name"],
                    "size": count_out(size, r["cidr"].version), "used": used,
                    "percent_used": _percent(used, size)})
    out.sort(key=lambda s: (-s["percent_used"], str(s["subnet_id"])))
    return out


async def pool(conn: asyncpg.Connection, pool_id: uuid.UUID) -> dict[str, Any]:
    p = await one(
        conn,
        """SELECT p.id, p.subnet_id, p.start_ip, p.end_ip, s.gateway
           FROM pools p JOIN subnets s ON s.id = p.subnet_id WHERE p.id = $1""",
        pool_id, "pool",
    )
    out = await _range(conn, p["subnet_id"], p["start_ip"], p["end_ip"], p["gateway"])
    return {"pool_id": pool_id, "subnet_id": p["subnet_id"],
            "start_ip": str(p["start_ip"]), "end_ip": str(p["end_ip"]), **out}


async def prefix(conn: asyncpg.Connection, prefix_id: uuid.UUID) -> dict[str, Any]:
    """A prefix is a container: used = addresses its tenant's subnets cover inside it."""
    p = await one(conn, "SELECT id, tenant_id, cidr FROM prefixes WHERE id = $1", prefix_id,
                  "prefix")
    net = p["cidr"]
    async with _no_jit(conn):
        row = await conn.fetchrow(_PREFIX, p["tenant_id"], net)
    size = net.num_addresses
    covered = int(row["covered"])
    return {
        "prefix_id": prefix_id,
        "cidr": str(net),
        "size": count_out(size, net.version),
        "used": count_out(covered, net.version),
        "free": count_out(size - covered, net.version),
        "percent_used": _percent(covered, size),
        "subnets": row["subnets"],
        "addresses_used": used_of(row),
    }
