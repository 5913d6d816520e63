"""The figures the dashboard, the metrics and the alert rules share (asyncio-side units).

Each is one SQL statement over indexed columns, so a /16 with 60k leases answers in a few ms.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from ipamd.core.rows import fetch_one
from ipamd.ipam import utilisation as ipam_utilisation

LIVE = ("offered", "active", "declined")

# Per pool: its bounds and the excludes' overlaps with it (sized in Python: an IPv6 pool can
# hold more addresses than inet - inet's bigint), and its live leases (the partial index
# leases_live_ip on (subnet_id, ip) serves the range count).
_POOLS = """
SELECT p.id, p.name, p.subnet_id, s.cidr::text AS cidr, s.name AS subnet_name,
       family(s.cidr) AS family, p.start_ip, p.end_ip,
       ARRAY(SELECT greatest(e.start_ip, p.start_ip) FROM excludes e
             WHERE e.subnet_id = p.subnet_id AND e.range && p.range ORDER BY e.start_ip)
         AS ex_lo,
       ARRAY(SELECT least(e.end_ip, p.end_ip) FROM excludes e
             WHERE e.subnet_id = p.subnet_id AND e.range && p.range ORDER BY e.start_ip)
         AS ex_hi,
       (SELECT count(*) FROM leases l
        WHERE l.subnet_id = p.subnet_id AND l.state IN ('offered', 'active', 'declined')
          AND l.ip BETWEEN p.start_ip AND p.end_ip) AS used
FROM pools p JOIN subnets s ON s.id = p.subnet_id
"""


def _pool_size(r: asyncpg.Record) -> int:
    """The pool's addresses less the excluded ones inside it (excludes never overlap)."""
    excluded = sum(int(hi) - int(lo) + 1 for lo, hi in zip(r["ex_lo"], r["ex_hi"], strict=True))
    return int(r["end_ip"]) - int(r["start_ip"]) + 1 - excluded


def count_out(value: int, family: int) -> int | str:
    """IPv6 sizes as exact decimal strings, as the IPAM API shows them (docs/api-ipam.md)."""
    return str(value) if family == 6 else value


def _percent(used: int, size: int) -> float:
    return round(100.0 * used / size, 2) if size > 0 else 0.0


async def pool_use(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Pool use, worst first: of a pool's addresses (less its excludes), those live leases
    hold; what runs out when clients get no address, and what the pool_utilisation alert
    watches. Not a subnet's utilisation (ipam/utilisation.py; docs/operations-monitoring.md).
    Sizes of IPv6 pools are decimal strings (2^64 is no JSON number a client can trust)."""
    pools: list[dict[str, Any]] = []
    for r in await conn.fetch(_POOLS):
        size, used = _pool_size(r), int(r["used"])
        pools.append({"pool_id": r["id"], "name": r["name"], "subnet_id": r["subnet_id"],
                      "cidr": r["cidr"], "size": count_out(size, r["family"]), "used": used,
                      "percent_used": _percent(used, size)})
    pools.sort(key=lambda p: (-p["percent_used"], str(p["pool_id"])))
    return pools


async def subnet_utilisation(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Every subnet's utilisation, worst first, by the one definition the subnet and prefix
    pages use (GET /subnets/{id}/utilisation)."""
    return await ipam_utilisation.subnets_all(conn)


async def leases_by_state(conn: asyncpg.Connection) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, count(*) AS n FROM leases GROUP BY state")
    found = {state: 0 for state in ("offered", "active", "released", "expired", "declined")}
    found.update({r["state"]: r["n"] for r in rows})
    return found


async def grants_per_minute(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Grants in each of the last 60 minutes (oldest first, empty minutes as 0)."""
    rows = await conn.fetch(
        """SELECT m.minute, count(e.id) AS grants
           FROM generate_series(date_trunc('minute', now()) - interval '59 minutes',
                                date_trunc('minute', now()), interval '1 minute') AS m(minute)
           LEFT JOIN lease_events e ON e.event = 'granted'
                AND e.at >= m.minute AND e.at < m.minute + interval '1 minute'
                AND e.at >= date_trunc('minute', now()) - interval '59 minutes'
           GROUP BY m.minute ORDER BY m.minute"""
    )
    return [{"minute": r["minute"], "grants": r["grants"]} for r in rows]


async def lease_journal(conn: asyncpg.Connection) -> dict[str, Any]:
    """Lease changes not yet derived into history and events (workers/lease_journal.py): a
    few at any moment, more while a lease storm holds derivation back."""
    row = await fetch_one(
        conn,
        "SELECT count(*) AS n, extract(epoch FROM now() - min(at)) AS oldest FROM lease_journal")
    return {"rows": row["n"], "oldest_seconds": round(float(row["oldest"] or 0), 3)}


async def outbox(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Rows by kind and state, with the oldest queued row's age per kind; and lease DNS
    changes still staged (kind dns, state ``staged``: not rows yet, migration 0008)."""
    rows = await conn.fetch(
        """(SELECT kind, state, count(*) AS n,
                   extract(epoch FROM now() - min(created_at)) AS oldest_seconds
            FROM outbox GROUP BY kind, state ORDER BY kind, state)
           UNION ALL
           SELECT 'dns', 'staged', sum(cardinality(event_ids)),
                  extract(epoch FROM now() - min(created_at))
           FROM dns_staged HAVING count(*) > 0"""
    )
    return [{"kind": r["kind"], "state": r["state"], "rows": r["n"],
             "oldest_seconds": round(float(r["oldest_seconds"] or 0), 3)} for r in rows]
