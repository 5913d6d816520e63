"""Periodic retention of occupancy history (history.retention_days in the TOML file)."""

from __future__ import annotations

import logging

import trio

from ipamd.ipam import history
from ipamd.state import AppState

log = logging.getLogger("ipamd.history")


async def sweep_once(state: AppState) -> tuple[int, int]:
    """One sweep now; returns (intervals, events) deleted."""
    return await state.db.run(history.purge, state.config.history.retention_days)


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    task_status.started()
    while True:
        intervals, events = await sweep_once(state)
        if intervals or events:
            log.info("history retention removed %d intervals, %d lease events", intervals, events)
        await trio.sleep(state.config.history.sweep_interval_seconds)
