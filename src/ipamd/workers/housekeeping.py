"""Periodic clean-up: audit entries past retention, expired Idempotency-Keys."""

from __future__ import annotations

import logging

import asyncpg
import trio

from ipamd.api.idempotency import purge_expired
from ipamd.core import audit
from ipamd.state import AppState

log = logging.getLogger("ipamd.housekeeping")


async def sweep_once(conn: asyncpg.Connection, retention_days: int, ttl: int) -> tuple[int, int]:
    return await audit.purge(conn, retention_days), await purge_expired(conn, ttl)


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    task_status.started()
    config = state.config
    while True:
        audits, keys = await state.db.run(
            sweep_once, config.audit.retention_days, config.api.idempotency_ttl_seconds
        )
        if audits or keys:
            log.info("housekeeping removed %d audit entries, %d idempotency keys", audits, keys)
        await trio.sleep(config.audit.sweep_interval_seconds)
