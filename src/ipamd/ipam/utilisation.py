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
from collections.abc import AsyncIterator, Mapping, Sequence
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


# The terms of the inclusion-exclusion above, with their signs (g: the gateway, when free).
_TERMS = (("r", 1), ("a", 1), ("l", 1), ("ra", -1), ("rl", -1), ("al", -1), ("ral", 1), ("g", 1))


def used_of(row: asyncpg.Record | Mapping[str, Any]) -> int:
    """Inclusion-exclusion over reservations, assignments and live leases, plus the gateway;
    a count missing or NULL (no row, no exclude) is 0."""
    return int(sum(sign * (row.get(name) or 0) for name, sign in _TERMS))


def _percent(used: int, size: int) -> float:
    return round(100.0 * used / size, 2) if size else 0.0


def _figures(
    whole: asyncpg.Record | Mapping[str, Any], excludes: Mapping[str, Any], low: validate.IPAddress,
    high: validate.IPAddress,
) -> dict[str, Any]:
    """A range's figures from its counts (``whole``) and its excludes' summed counts and
    bounds (``excludes``; empty when it has none)."""
    size = span(low, high)
    used = used_of(whole)
    bounds = zip(excludes.get("los") or (), excludes.get("his") or (), strict=True)
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


async def _range(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, low: validate.IPAddress,
    high: validate.IPAddress, gateway: validate.IPAddress | None,
) -> dict[str, Any]:
    async with _no_jit(conn):
        whole, excludes = await conn.fetch(_RANGE, subnet_id, low, high, gateway)
    return _figures(whole, dict(excludes), low, high)


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


def _range_args(rows: Sequence[asyncpg.Record]) -> tuple[list[Any], ...]:
    """The arrays the statements over many subnets take: ids, the first and last assignable
    address of each (validate.host_range, as for one subnet), gateways."""
    nets = [r["cidr"] for r in rows]
    ranges = [validate.host_range(net) for net in nets]
    return ([r["id"] for r in rows],
            [validate.address_in_family(n, lo) for n, (lo, _) in zip(nets, ranges, strict=True)],
            [validate.address_in_family(n, hi) for n, (_, hi) in zip(nets, ranges, strict=True)],
            [r["gateway"] for r in rows])


# Each subnet's excludes, clipped to its range, probed and summed as _RANGE does for one.
_SUBNETS_EXCLUDED = f"""
SELECT t.id, {_SUMS}, array_agg(ex.lo) AS los, array_agg(ex.hi) AS his
FROM unnest($1::uuid[], $2::inet[], $3::inet[], $4::inet[]) AS t(id, lo, hi, gateway),
     LATERAL (SELECT greatest(start_ip, t.lo) AS lo, least(end_ip, t.hi) AS hi FROM excludes
              WHERE subnet_id = t.id AND start_ip <= t.hi AND end_ip >= t.lo) ex,
     LATERAL ({_counts("t.id", "ex.lo", "ex.hi", "t.gateway")}) c
GROUP BY t.id
"""

_SUBNETS_POOLS = """
SELECT subnet_id, count(*) AS n, array_agg(start_ip) AS los, array_agg(end_ip) AS his
FROM pools WHERE subnet_id = ANY($1::uuid[]) GROUP BY subnet_id
"""


async def subnets_page(
    conn: asyncpg.Connection, subnet_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, dict[str, Any]]:
    """``subnet`` for each of a list page's subnets, in three statements whatever their
    number (GET /subnets?include=utilisation); a subnet deleted meanwhile is left out."""
    rows = await conn.fetch("SELECT id, cidr, gateway FROM subnets WHERE id = ANY($1::uuid[])",
                            list(subnet_ids))
    args = _range_args(rows)
    async with _no_jit(conn):
        whole = {c["id"]: c for c in await conn.fetch(_SUBNETS, *args)}
        excluded = {c["id"]: dict(c) for c in await conn.fetch(_SUBNETS_EXCLUDED, *args)}
        pools = {p["subnet_id"]: p for p in await conn.fetch(_SUBNETS_POOLS, args[0])}
    out = {}
    for r, lo, hi in zip(rows, args[1], args[2], strict=True):
        net, held = r["cidr"], pools.get(r["id"])
        pool_size = sum(map(span, held["los"], held["his"])) if held else 0
        out[r["id"]] = {
            "subnet_id": r["id"], "cidr": str(net),
            **_figures(whole[r["id"]], excluded.get(r["id"], {}), lo, hi),
            "pools": held["n"] if held else 0, "pool_size": count_out(pool_size, net.version)}
    return out


async def subnets_all(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Every subnet's utilisation as ``subnet`` defines it (used of its assignable addresses),
    worst first; the dashboard and the subnet_utilisation alert read this, so one subnet shows
    one figure everywhere (docs/operations-monitoring.md)."""
    rows = await conn.fetch("SELECT id, name, cidr, gateway FROM subnets ORDER BY id")
    args = _range_args(rows)
    async with _no_jit(conn):
        counts = {c["id"]: c for c in await conn.fetch(_SUBNETS, *args)}
    out = []
    for r, lo, hi in zip(rows, args[1], args[2], strict=True):
        size, used = span(lo, hi), used_of(counts[r["id"]])
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
    async with _no_jit(conn):
        (row,) = await conn.fetch(_PREFIX, p["tenant_id"], p["cidr"])  # an aggregate: one row
    return _prefix_figures(prefix_id, p["cidr"], row)


# ``_PREFIX`` for each of a list page's prefixes at once.
_PREFIXES = f"""
SELECT p.id, p.cidr, count(s.id) AS subnets,
       coalesce(sum((2::numeric) ^ ({_BITS} - masklen(s.cidr))), 0) AS covered, {_SUMS}
FROM prefixes p
LEFT JOIN subnets s ON s.tenant_id = p.tenant_id AND s.cidr <<= p.cidr
LEFT JOIN LATERAL ({_counts("s.id", _LOWEST, _HIGHEST, "s.gateway")}) c ON true
WHERE p.id = ANY($1::uuid[])
GROUP BY p.id
"""


async def prefixes_page(
    conn: asyncpg.Connection, prefix_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, dict[str, Any]]:
    """``prefix`` for each of a list page's prefixes in one statement (GET
    /prefixes?include=utilisation); a prefix deleted meanwhile is left out."""
    async with _no_jit(conn):
        rows = await conn.fetch(_PREFIXES, list(prefix_ids))
    return {r["id"]: _prefix_figures(r["id"], r["cidr"], r) for r in rows}


def _prefix_figures(
    prefix_id: uuid.UUID, net: validate.Network, row: asyncpg.Record,
) -> dict[str, Any]:
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
