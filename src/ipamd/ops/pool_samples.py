"""Pool use over time: one row per pool per sample, for the dashboard's chart
(docs/operations-monitoring.md, "Pool use over time").

Each sample reads every pool's use with the dashboard's own aggregate statement
(figures.pool_use: live leases counted per pool range over the leases_live_ip index, never
an address enumeration) and writes it with one INSERT; the same transaction deletes rows
past retention. Nodes share the work: an advisory lock and the latest sample's age keep two
nodes from sampling the same minute.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import asyncpg

from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.ops import figures
from ipamd.state import AppState

log = logging.getLogger("ipamd.ops.pool_samples")

SAMPLE_LOCK = 0x1BA41  # one sampler at a time across nodes (0x1BA40: the lease journal)
READ_MAX = 100_000  # rows one GET returns at most (20 pools for a day at one a minute: 28,800)


async def sample(conn: asyncpg.Connection, every_seconds: float,
                 retention_days: int) -> int | None:
    """Record every pool's use now; None when another node holds the lock or sampled less
    than most of an interval ago (a node's own clock drift must not skip a minute)."""
    if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", SAMPLE_LOCK):
        return None
    recent = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pool_use_samples"
        " WHERE at > now() - make_interval(secs => $1))", every_seconds * 0.5)
    if recent:
        return None
    pools = await figures.pool_use(conn)
    await conn.execute(
        """INSERT INTO pool_use_samples (at, pool_id, used, size)
           SELECT now(), t.pool_id, t.used, t.size
           FROM unnest($1::uuid[], $2::bigint[], $3::numeric[]) AS t(pool_id, used, size)""",
        [p["pool_id"] for p in pools], [p["used"] for p in pools],
        [int(p["size"]) for p in pools])
    await conn.execute(
        "DELETE FROM pool_use_samples WHERE at < now() - make_interval(days => $1)",
        retention_days)
    return len(pools)


async def read(conn: asyncpg.Connection, since: dt.datetime) -> list[dict[str, Any]]:
    """Each live pool's samples since ``since``, oldest first; IPv6 sizes as decimal strings
    (docs/api-ipam.md)."""
    rows = await conn.fetch(
        """SELECT x.at, x.pool_id, p.name, s.cidr::text AS cidr, family(s.cidr) AS family,
                  x.used, x.size
           FROM pool_use_samples x JOIN pools p ON p.id = x.pool_id
                JOIN subnets s ON s.id = p.subnet_id
           WHERE x.at >= $1 ORDER BY x.at, x.pool_id LIMIT $2""", since, READ_MAX)
    return [{"at": r["at"], "pool_id": r["pool_id"], "name": r["name"], "cidr": r["cidr"],
             "used": r["used"], "size": figures.count_out(int(r["size"]), r["family"]),
             "percent_used": round(100.0 * r["used"] / int(r["size"]), 2) if r["size"] else 0.0}
            for r in rows]


class Sampler:
    def __init__(self, state: AppState) -> None:
        self.state = state
        self._log = Throttle(log)

    async def tick(self) -> None:
        config = self.state.config.ops
        try:
            await self.state.db.transaction(sample, config.pool_sample_seconds,
                                            config.pool_sample_retention_days)
        except DB_ERRORS as error:
            log_failure(self._log, error, "pool use sample failed: %s", error)
