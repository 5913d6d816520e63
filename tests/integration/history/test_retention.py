"""History retention: intervals that ended, and events that happened, before the cut-off go.

Year-old leases cannot come from a live DHCP server, so these rows are written by hand.
"""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg

from ipamd.ipam import history
from ipamd.state import AppState
from ipamd.workers import history_retention
from tests.conftest import make_config
from tests.integration.history.rows import T0, event, intervals, make_subnet

H = dt.timedelta(hours=1)
MAC = "02:00:00:00:00:01"


async def _year(conn: asyncpg.Connection, now: dt.datetime) -> None:
    subnet = await make_subnet(conn, "10.77.10.0/24")
    old, held, recent = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await event(conn, subnet, old, "granted", "10.77.10.1", T0, mac=MAC, expires_at=T0 + H)
    await event(conn, subnet, old, "released", "10.77.10.1", T0 + H)
    await event(conn, subnet, held, "granted", "10.77.10.2", T0, mac=MAC, expires_at=now + H)
    await event(conn, subnet, recent, "granted", "10.77.10.3", now - H, mac=MAC,
                expires_at=now + H)


async def test_purge_keeps_open_intervals_and_recent_events(db):
    now = T0 + dt.timedelta(days=400)

    async def unit(conn: asyncpg.Connection):
        await _year(conn, now)
        removed = await history.purge(conn, 365, now=now, batch=1)  # batches of one: loops
        events = await conn.fetchval("SELECT count(*) FROM lease_events")
        return removed, await intervals(conn), events

    removed, left, events = await db.run(unit)
    assert removed == (1, 3)  # the old interval; both old events and the held lease's grant
    assert [row["ip"] for row in left] == ["10.77.10.2", "10.77.10.3"]
    assert events == 1
    assert await db.run(history.purge, 365, now) == (0, 0)  # nothing more to do


async def test_the_service_sweeps_with_the_configured_retention(db, dsn):
    now = dt.datetime.now(dt.UTC)

    async def seed(conn: asyncpg.Connection) -> None:
        await _year(conn, now)

    await db.run(seed)
    # Ten years of retention keep everything; thirty days drop the year-old lease.
    kept = AppState(config=make_config(dsn, history={"retention_days": 3650}), db=db)
    assert await history_retention.sweep_once(kept) == (0, 0)
    state = AppState(config=make_config(dsn, history={"retention_days": 30}), db=db)
    assert await history_retention.sweep_once(state) == (1, 3)
    assert [row["ip"] for row in await db.run(intervals)] == ["10.77.10.2", "10.77.10.3"]
