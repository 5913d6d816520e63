"""A crashing service is logged and restarted; one that fails before it is ready stops start-up."""

from __future__ import annotations

import itertools
import logging

import pytest
import trio

from ipamd.runtime import supervise


async def test_crash_after_start_is_restarted(caplog, autojump_clock):
    runs = []

    async def flaky(state, *, task_status):
        task_status.started()
        runs.append(trio.current_time())
        await trio.sleep(1)
        raise RuntimeError("worker fell over")

    caplog.set_level(logging.ERROR, "ipamd")
    async with trio.open_nursery() as nursery:
        await nursery.start(supervise, "flaky", flaky, None)
        await trio.sleep(20)
        nursery.cancel_scope.cancel()
    assert len(runs) >= 4
    gaps = [b - a for a, b in itertools.pairwise(runs)]
    assert gaps[1] > gaps[0]  # backoff grows
    assert "service flaky crashed" in caplog.text


async def test_failure_before_ready_propagates():
    async def broken(state, *, task_status):
        raise OSError("port in use")

    async with trio.open_nursery() as nursery:
        with pytest.raises(OSError, match="port in use"):
            await nursery.start(supervise, "broken", broken, None)


async def test_a_lost_database_is_not_logged_as_a_crash(caplog, autojump_clock):
    import asyncpg

    runs = []

    async def needs_db(state, *, task_status):
        task_status.started()
        runs.append(trio.current_time())
        await trio.sleep(1)
        raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle")

    caplog.set_level(logging.INFO, "ipamd")
    async with trio.open_nursery() as nursery:
        await nursery.start(supervise, "needs_db", needs_db, None)
        await trio.sleep(10)
        nursery.cancel_scope.cancel()
    assert len(runs) >= 3  # still restarted, with the same backoff
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]
    assert "needs_db stopped: database unreachable" in caplog.text
