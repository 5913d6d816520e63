"""The lease expiry worker: ends leases whose time is up, in batches.

* active -> expired, with its lease_events row and a ``lease.expired`` event;
* offered (a lapsed Offer hold) -> deleted: it never was a lease, so no history;
* declined -> expired once the probation is over, with its ``expired`` event: that
  closes the quarantine in the occupancy history.

``FOR UPDATE SKIP LOCKED`` lets every node run the worker against one database.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import asyncpg
import trio

from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp.allocator import event_ctes
from ipamd.state import AppState

log = logging.getLogger("ipamd.dhcp.expiry")

_MAX_ROUNDS = 50  # batches per tick; the rest waits for the next tick

_EXPIRE = f"""
WITH due AS (
    SELECT lease_id, state FROM leases
    WHERE state IN ('offered', 'active', 'declined') AND expires_at <= now()
    ORDER BY expires_at LIMIT $1
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM leases l USING due
    WHERE l.lease_id = due.lease_id AND due.state = 'offered'
    RETURNING l.lease_id, l.subnet_id
), u AS (
    UPDATE leases l SET state = 'expired', updated_at = now()
    FROM due WHERE l.lease_id = due.lease_id AND due.state <> 'offered'
    RETURNING l.*, 'expired'::text AS event
){event_ctes("u", "event")}
SELECT lease_id, subnet_id, event FROM u
UNION ALL SELECT lease_id, subnet_id, NULL FROM gone
"""


async def expire_batch(
    conn: asyncpg.Connection, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID, Any]]:
    """One batch, in the caller's transaction: (lease_id, subnet_id, event or None) per lease."""
    rows = await conn.fetch(_EXPIRE, limit)
    return [(r["lease_id"], r["subnet_id"], r["event"]) for r in rows]


async def sweep(state: AppState) -> int:
    """Expire everything due (bounded by rounds); tell this node's DHCP server. Returns count."""
    batch = state.config.dhcp.expiry_batch
    total = 0
    for _ in range(_MAX_ROUNDS):
        ended = await state.db.transaction(expire_batch, batch)
        server = state.services.get("dhcp")
        if server is not None and ended:
            server.forget(ended)
        total += len(ended)
        if len(ended) < batch:
            break
    return total


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    task_status.started()
    interval = state.config.dhcp.expiry_interval_seconds
    throttle = Throttle(log)
    while True:
        try:
            count = await sweep(state)
            if count:
                log.debug("expired %d leases", count)
        except DB_ERRORS as error:
            log_failure(throttle, error, "lease expiry failed: %s", error.__class__.__name__)
        await trio.sleep(interval)
