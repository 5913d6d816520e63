"""The committer's own database sessions: one connection per commit worker, held for good.

The shared asyncpg pool costs each unit of work an acquire and a release, measured at
~0.22 ms of CPU per unit under trio-asyncio (a quarter of a one-statement commit),
and its reset on release would undo any session setting. The committer runs at most one
batch per worker at a time, so it keeps that many connections and hands them out from a
list: ``Connections`` stands in for the pool inside a ``db.bridge.Database`` (which only
asks its pool for ``acquire()`` as an async context manager, and ``close()``).

The session settings are fixed when a connection opens:
``plan_cache_mode = force_generic_plan``: each statement shape is planned once per
connection (and again whenever the lease table's statistics change, see ``leasestats``).
With the array sizes known a custom plan is made per batch, which costs milliseconds for
the batch statement and finds nothing better. Each new session (at start, and in place of
one lost) is then warmed by the committer's ``warm`` (``leasestore.warm``) before it takes
a batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import asyncpg

from ipamd.db.bridge import NO_TIMERS, Database
from ipamd.db.outage import is_connection_loss

SESSION_SETTINGS = {
    "plan_cache_mode": "force_generic_plan",
    "application_name": "ipamd-dhcp-commit",
}


Warm = Callable[[asyncpg.Connection], Awaitable[None]]


async def _cold(_conn: asyncpg.Connection) -> None:
    """No warm-up."""


class Connections:
    """A fixed set of connections, used from the asyncio side only (inside the bridge)."""

    def __init__(self, dsn: str, warm: Warm = _cold) -> None:
        self._dsn = dsn
        self._warm = warm
        self._free: list[asyncpg.Connection] = []
        self._closed = False

    async def connect(self) -> asyncpg.Connection:
        # A batch waits for this: a short timeout turns an unreachable database into a
        # failed batch (its clients retransmit) instead of a long stall. The crossing's
        # deadline bounds each unit; no per-query timers (db.bridge.NO_TIMERS).
        conn = await asyncpg.connect(self._dsn, server_settings=SESSION_SETTINGS, timeout=10,
                                     **NO_TIMERS)
        try:
            await self._warm(conn)
        except BaseException:
            conn.terminate()
            raise
        return conn

    async def open(self, size: int) -> None:
        for _ in range(size):
            self._free.append(await self.connect())

    def acquire(self) -> _Borrowed:
        return _Borrowed(self)

    def give_back(self, conn: asyncpg.Connection, failed: bool) -> None:
        # After a failure other than an SQL error (cancelled, connection lost — which a
        # server shutdown reports as an SQL error) the session may be mid-statement or dead:
        # a fresh one is opened on the next acquire instead. Reusing it would fail the next
        # batch with "cannot switch to state ...; another operation is in progress".
        if failed or self._closed or conn.is_closed() or conn.is_in_transaction():
            conn.terminate()
        else:
            self._free.append(conn)

    def take(self) -> asyncpg.Connection | None:
        return self._free.pop() if self._free else None

    async def close(self) -> None:
        self._closed = True
        while self._free:
            await self._free.pop().close()


class _Borrowed:
    """One connection borrowed from ``Connections`` for an ``async with`` (not a DHCP lease)."""

    __slots__ = ("_conn", "_owner")

    def __init__(self, owner: Connections) -> None:
        self._owner = owner
        self._conn: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        conn = self._owner.take()
        if conn is None:  # lost after an error (or one more user than workers)
            conn = await self._owner.connect()
        self._conn = conn
        return conn

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._conn is not None:
            failed = error is not None and (
                not isinstance(error, asyncpg.PostgresError) or is_connection_loss(error)
            )
            self._owner.give_back(self._conn, failed)
            self._conn = None


async def _open(_conn: asyncpg.Connection, connections: Connections, size: int) -> None:
    # Runs on the asyncio side of the bridge, as every unit does; the shared pool's
    # connection it was handed is not needed.
    await connections.open(size)


async def open_commit_db(db: Database, size: int, warm: Warm = _cold) -> Database:
    """A Database over ``size`` dedicated committer sessions, on the same server as ``db``;
    ``warm(conn)`` runs on each new session before it is used."""
    connections = Connections(db.dsn, warm)
    await db.run(_open, connections, size)
    pool: Any = connections  # used by Database exactly as it uses an asyncpg pool
    return Database(pool, db.dsn, db.outage)  # one outage, one warning, whichever notices
