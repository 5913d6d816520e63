"""The crossing's deadline: a unit that takes too long fails as a lost database would, the
statement is cancelled on the server, the pool keeps serving, and a finished unit leaves
nothing of its caller behind (no timer holding its context until it would have fired)."""

from __future__ import annotations

import contextvars
import gc
import weakref
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.db.outage import is_connection_loss
from ipamd.dhcp.sessions import open_commit_db

_CALLER: contextvars.ContextVar[Any] = contextvars.ContextVar("caller")


class _Request:
    """Stands for what a caller's context holds (an API request, with everything it refers to)."""


async def _select_one(conn: Any) -> int:
    return int(await conn.fetchval("SELECT 1"))


async def _sleep(conn: Any, seconds: float) -> None:
    await conn.execute("SELECT pg_sleep($1)", seconds)


async def _sleeping(conn: Any) -> int:
    return int(await conn.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' "
        "AND state = 'active' AND pid <> pg_backend_pid()"))


@pytest.mark.parametrize("sessions", [False, True], ids=["pool", "commit-sessions"])
async def test_a_unit_past_its_deadline_fails_and_is_cancelled(db: Database,
                                                               sessions: bool) -> None:
    target = await open_commit_db(db, 1) if sessions else db
    target.unit_timeout = 0.5
    try:
        with trio.fail_after(10):
            started = trio.current_time()
            with pytest.raises(TimeoutError, match=r"did not finish a unit of work in 0\.5 s") as info:
                await target.run(_sleep, 30)
            assert trio.current_time() - started < 5
        assert is_connection_loss(info.value)  # what callers already retry and log once
        assert db.outage.down
        if not sessions:  # the pooled connection is kept: the server was told to stop
            with trio.fail_after(3):
                while await db.run(_sleeping):
                    await trio.sleep(0.05)
        # (A commit session is not kept after a failure; sessions.Connections replaces it.)
        assert await target.run(_select_one) == 1  # the next unit is served
        assert not db.outage.down
    finally:
        if sessions:
            await target.close()


async def test_a_finished_unit_keeps_nothing_of_its_caller(db: Database) -> None:
    request = _Request()
    gone = weakref.ref(request)
    token = _CALLER.set(request)
    try:
        for _ in range(20):
            assert await db.run(_select_one) == 1
        assert await db.transaction(_select_one) == 1
    finally:
        _CALLER.reset(token)
    del request
    gc.collect()
    assert gone() is None, "something the unit armed still holds the caller's context"


async def _backend(conn: Any) -> int:
    return int(await conn.fetchval("SELECT pg_backend_pid()"))


async def _divide_by_zero(conn: Any) -> None:
    await conn.fetchval("SELECT 1 / 0")


async def test_a_cancelled_caller_leaves_no_statement_on_the_kept_connection(dsn: str) -> None:
    # One connection in all: the unit after the cancelled one must get it back idle.
    db = await Database.connect(dsn, min_size=1, max_size=1)
    try:
        first = await db.run(_backend)
        with trio.move_on_after(0.3) as scope:
            await db.run(_sleep, 30)
        assert scope.cancelled_caught
        with trio.fail_after(5):
            assert await db.run(_select_one) == 1
            assert await db.transaction(_select_one) == 1
        assert await db.run(_backend) == first  # released to the pool, taken again
    finally:
        await db.close()


async def test_a_connection_is_kept_after_an_sql_error(dsn: str) -> None:
    db = await Database.connect(dsn, min_size=1, max_size=2)
    try:
        first = await db.run(_backend)
        with pytest.raises(Exception, match="division by zero"):
            await db.run(_divide_by_zero)
        with pytest.raises(Exception, match="division by zero"):
            await db.transaction(_divide_by_zero)
        assert await db.run(_backend) == first
    finally:
        await db.close()


async def test_closing_waits_for_a_unit_under_way(dsn: str) -> None:
    db = await Database.connect(dsn, min_size=1, max_size=2)
    await db.run(_select_one)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(db.run, _sleep, 0.3)
            await trio.sleep(0.1)
            await db.close()  # the unit gives its connection to the closing pool


async def _terminate(conn: Any, pid: int) -> None:
    await conn.fetchval("SELECT pg_terminate_backend($1)", pid)


async def test_a_kept_connection_the_server_closed_is_replaced(dsn: str) -> None:
    db = await Database.connect(dsn, min_size=1, max_size=1)
    other = await Database.connect(dsn, min_size=1, max_size=1)
    try:
        first = await db.run(_backend)
        await other.run(_terminate, first)
        # Time for the loop to read the close while the connection is kept (had it not,
        # the unit below fails as a lost connection and the loop tries again).
        await trio.sleep(0.3)
        with trio.fail_after(5):
            while True:  # until the loop has read the close; meanwhile a lost connection
                try:
                    pid = await db.run(_backend)
                    break
                except Exception as error:
                    assert is_connection_loss(error), error
                    await trio.sleep(0.05)
        assert pid != first
        assert not db.outage.down
    finally:
        await other.close()
        await db.close()


async def test_more_units_than_connections_all_finish(dsn: str) -> None:
    """With every connection taken, a unit ending hands its connection to one waiting for
    the pool instead of keeping it (kept, the waiter sat out its unit timeout beside it)."""
    db = await Database.connect(dsn, min_size=1, max_size=2)
    db.unit_timeout = 30
    done: list[int] = []

    async def one() -> None:
        await db.run(_sleep, 0.05)
        done.append(1)

    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(one)
        assert len(done) == 8
    finally:
        await db.close()
