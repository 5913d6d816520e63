"""Periodic clean-up: audit entries past retention, expired Idempotency-Keys.

The Idempotency-Key table is the API's; the runtime passes its purge in (``purge_keys``)
so this room never imports the API.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import asyncpg
import trio

from ipamd.core import audit
from ipamd.state import AppState

log = logging.getLogger("ipamd.housekeeping")

# (connection, ttl seconds) -> rows deleted
Purge = Callable[[asyncpg.Connection, int], Awaitable[int]]


async def sweep_once(
    conn: asyncpg.Connection, retention_days: int, ttl: int, purge_keys: Purge
) -> tuple[int, int]:
    return await audit.purge(conn, retention_days), await purge_keys(conn, ttl)


async def run(
    state: AppState, *, purge_keys: Purge, task_status: trio.TaskStatus[None]
) -> None:
    task_status.started()
    config = state.config
    while True:
        audits, keys = await state.db.run(
            sweep_once, config.audit.retention_days, config.api.idempotency_ttl_seconds,
            purge_keys,
        )
        if audits or keys:
            log.info("housekeeping removed %d audit entries, %d idempotency keys", audits, keys)
        await trio.sleep(config.audit.sweep_interval_seconds)
