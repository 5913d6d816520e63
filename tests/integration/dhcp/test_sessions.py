"""The committer's dedicated sessions: settings fixed at connect, reused across units,
replaced after a failure that may leave one mid-statement, closed with the Database."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp.sessions import open_commit_db


async def _backend(conn: Any) -> tuple[int, str]:
    return await conn.fetchval("SELECT pg_backend_pid()"), await conn.fetchval(
        "SHOW plan_cache_mode")


async def _sql_error(conn: Any) -> None:
    await conn.execute("SELECT 1/0")


async def _other_error(conn: Any) -> None:
    raise RuntimeError("a bug in a unit")


async def _open_transaction(conn: Any) -> None:
    await conn.execute("BEGIN")


async def test_sessions_are_kept_settled_and_replaced_when_in_doubt(db: Database) -> None:
    sessions = await open_commit_db(db, 1)
    try:
        pid, mode = await sessions.run(_backend)
        assert mode == "force_generic_plan"
        assert (await sessions.run(_backend))[0] == pid  # the same session, no reset
        with pytest.raises(asyncpg.DivisionByZeroError):
            await sessions.run(_sql_error)
        assert (await sessions.run(_backend))[0] == pid  # an SQL error leaves it usable
        with pytest.raises(RuntimeError):
            await sessions.run(_other_error)
        replaced, mode = await sessions.run(_backend)
        assert replaced != pid and mode == "force_generic_plan"
        await sessions.run(_open_transaction)  # left open: not handed out again
        assert (await sessions.run(_backend))[0] not in (pid, replaced)
    finally:
        await sessions.close()

    async def live(conn: Any) -> int:
        return await conn.fetchval("SELECT count(*) FROM pg_stat_activity "
                                   "WHERE application_name = 'ipamd-dhcp-commit'")

    with trio.fail_after(10):  # a terminated backend goes away on its own time
        while await db.run(live):
            await trio.sleep(0.05)


async def test_each_new_session_is_warmed_before_its_first_unit(db: Database) -> None:
    warmed: list[int] = []

    async def warm(conn: Any) -> None:
        warmed.append(await conn.fetchval("SELECT pg_backend_pid()"))

    sessions = await open_commit_db(db, 2, warm)
    try:
        assert len(set(warmed)) == 2  # both, at open
        pid, _mode = await sessions.run(_backend)
        assert pid in warmed
        with pytest.raises(RuntimeError):
            await sessions.run(_other_error)  # the session is dropped...
        async with trio.open_nursery() as nursery:  # ...and both in use: one new, warmed
            for _ in range(2):
                nursery.start_soon(sessions.run, _backend)
        assert len(set(warmed)) == 3
    finally:
        await sessions.close()


async def test_a_session_whose_warm_up_fails_is_not_used(db: Database) -> None:
    async def warm(conn: Any) -> None:
        await conn.execute("SELECT 1/0")

    with pytest.raises(asyncpg.DivisionByZeroError):
        await open_commit_db(db, 1, warm)
