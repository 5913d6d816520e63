"""Keeps the planner statistics of ``leases`` current while the table grows fast.

Autovacuum analyzes a table once a tenth of it has changed, looking once a minute. A lease
table that grows from nothing to tens of thousands of rows within that minute (a fresh
appliance, the burst after a power cut) is planned all along without statistics: the
batch statements then hash the subnet's whole lease set on every batch instead of looking
up each op's lease (measured: ~1 ms per batch at 2,000 leases, growing with the table).

The DHCP server knows how fast it adds leases, so it analyzes the table each time it has
doubled since the last analysis (at least ``min_step`` rows), and once at start when it
never was. An ANALYZE also makes every session re-plan its cached statements on ``leases``.

These analyses come in the middle of a storm, so they are kept light: only the columns the
lease store's statements look leases up by, from a sample a tenth of the default's. At
51,200 leases that took ~4 ms of PostgreSQL CPU instead of ~45 ms for a full ANALYZE
(measured), and the statements' plans stay index lookups
(tests/integration/dhcp/test_leasestore_plans.py plans them on exactly these statistics).
Autovacuum's own ANALYZE still keeps every column's statistics, at full size, in its time.
"""

from __future__ import annotations

import logging

import asyncpg
import trio

from ipamd.db.bridge import Database
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure

log = logging.getLogger("ipamd.dhcp.stats")

MIN_STEP = 100  # rows added before the first re-analysis
_RETRY_SECONDS = 30.0


async def table_rows(conn: asyncpg.Connection) -> float:
    """The planner's row count of ``leases``; negative when it was never analyzed."""
    rows: float = await conn.fetchval(
        "SELECT reltuples FROM pg_class WHERE oid = 'leases'::regclass")
    return rows


# What the lease store's statements (leasestore.py) filter, join and order leases by.
PLANNED_COLUMNS = ("subnet_id", "ip", "client_key", "state", "sweep_at")
# Rows sampled are 300 times this. Enough for these columns: unique or nearly (addresses,
# clients, expiry times) or few values (subnets, states). The row count, which decides
# between an index lookup and a scan, is taken from up to 3,000 of the table's pages
# (ANALYZE reads up to as many pages as rows it samples): all of a table that size or less.
SAMPLE_TARGET = 10


async def analyze(conn: asyncpg.Connection) -> float:
    """A light ANALYZE (see the module docstring); the planner's row count after it."""
    async with conn.transaction():
        await conn.execute(f"SET LOCAL default_statistics_target = {SAMPLE_TARGET}")
        await conn.execute(f"ANALYZE leases ({', '.join(PLANNED_COLUMNS)})")
    return await table_rows(conn)


class LeaseStats:
    def __init__(self, db: Database, min_step: int = MIN_STEP) -> None:
        self.db = db
        self.min_step = min_step
        self.analyses = 0  # done by this server
        self._rows = 0.0  # the planner's row count after the last analysis
        self._added = 0  # rows this server inserted since
        self._due = trio.Event()

    def added(self, rows: int) -> None:
        """``rows`` new leases were committed."""
        self._added += rows
        if self._added >= max(self.min_step, self._rows):
            self._due.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        throttle = Throttle(log)
        try:
            rows = await self.db.run(table_rows)
            if rows < 0:
                self._due.set()
            self._rows = max(rows, 0.0)
        except DB_ERRORS as error:
            log_failure(throttle, error, "lease statistics unknown: %s",
                        error.__class__.__name__)
            self._due.set()
        while True:
            await self._due.wait()
            self._due = trio.Event()
            self._added = 0
            try:
                rows = await self.db.run(analyze)
            except DB_ERRORS as error:
                # Autovacuum still analyzes in its own time; try again later meanwhile.
                log_failure(throttle, error, "ANALYZE leases failed: %s",
                            error.__class__.__name__)
                await trio.sleep(_RETRY_SECONDS)
                self._due.set()
                continue
            if rows < 0:
                # Skipped: on an external database this role may not own the table.
                # Autovacuum keeps the statistics there, only later.
                log.warning("ANALYZE leases was skipped (not the table's owner?); "
                            "leaving the statistics to autovacuum")
                return
            self._rows = rows
            self.analyses += 1
            log.debug("analyzed leases: %.0f rows", rows)
