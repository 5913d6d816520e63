"""The one crossing between trio and asyncpg (which is asyncio-only).

asyncpg runs on an asyncio loop that trio drives (db/aio_loop.py). A crossing costs an
asyncio task and a trio reschedule, so a unit of database work is written as one asyncio-side
coroutine function ``fn(conn, *args)`` and crosses once: ``await db.run(fn, ...)`` or, inside a
transaction, ``await db.transaction(fn, ...)``. Nothing else in the package imports asyncio.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Generic, Protocol, TypedDict, TypeVar

import asyncpg
import trio
from asyncpg.pool import PoolConnectionProxy

from ipamd.core.jsonutil import dumps
from ipamd.db import aio_loop
from ipamd.db.outage import Outage, is_connection_loss, quiet_pool_logs

log = logging.getLogger("ipamd.db")

T = TypeVar("T")
Work = Callable[..., Awaitable[T]]

# How long one unit of work may take before it fails with TimeoutError (an OSError, so its
# callers treat it as the database being unreachable). Kept on the trio side, not as asyncpg's
# command_timeout, because of NO_TIMERS below.
UNIT_TIMEOUT_SECONDS = 60.0

# asyncpg arms an asyncio timer per query (command_timeout), per pool release (to close a
# connection idle for 5 minutes) and per cached statement (to forget it after 5 minutes). A
# cancelled timer stays on the loop, with the context it holds (a whole API request), until
# it would have fired: under trio-asyncio a busy API process held minutes of requests in
# memory. So no connection arms any: the pool keeps its connections (at most pool_max) and
# statements stay cached (asyncpg's LRU of 100 per connection bounds them); the unit timeout
# is trio's.
class NoTimers(TypedDict):
    """The keyword arguments of asyncpg's connect and create_pool that arm no timer."""

    max_cached_statement_lifetime: int


NO_TIMERS: NoTimers = {"max_cached_statement_lifetime": 0}


class Notifications:
    """A LISTEN's payloads, read with ``async for``; ``release()`` ends it (``Database.listen``)."""

    __slots__ = ("_payloads", "_release")

    def __init__(self, payloads: trio.MemoryReceiveChannel[str],
                 release: Callable[[], Awaitable[None]]) -> None:
        self._payloads = payloads
        self._release = release

    def __aiter__(self) -> trio.MemoryReceiveChannel[str]:
        return self._payloads

    async def receive(self) -> str:
        """The next payload (waits for it)."""
        return await self._payloads.receive()

    async def release(self) -> None:
        """Close the listening connection; never raises."""
        await self._release()


async def _init_connection(conn: asyncpg.Connection) -> None:
    # jsonb in and out as Python objects, everywhere.
    await conn.set_type_codec(
        "jsonb", encoder=dumps, decoder=json.loads, schema="pg_catalog"
    )
    await conn.set_type_codec("json", encoder=dumps, decoder=json.loads, schema="pg_catalog")


@asynccontextmanager
async def asyncio_loop() -> AsyncIterator[aio_loop.DrivenLoop]:
    """Open the asyncio loop that asyncpg runs on; wrap the whole nursery in it."""
    async with aio_loop.open_loop() as loop:
        yield loop


# The server answered and said no: retrying cannot help, so start-up fails at once.
_REFUSED: tuple[type[BaseException], ...] = (
    asyncpg.InvalidAuthorizationSpecificationError,  # 28000: no such role, pg_hba says no
    asyncpg.InvalidPasswordError,  # 28P01
    asyncpg.InvalidCatalogNameError,  # 3D000: no such database
    asyncpg.InsufficientPrivilegeError,  # 42501: no CONNECT privilege
)


class DatabaseRefused(ConnectionError):
    """The database server refused us for good (credentials, rights, database name).
    The message is the server's, which never holds the password."""


class PoolLike(Protocol):
    """A pool other than asyncpg's (dhcp/sessions.py's ``Connections``)."""

    def acquire(self) -> contextlib.AbstractAsyncContextManager[asyncpg.Connection]: ...

    async def close(self) -> None: ...


class Unit(Generic[T]):
    """A unit of work started on a ``Database`` (``start``); ``await result()`` once.

    Past the database's unit timeout the unit is cancelled on the asyncio side (asyncpg asks
    the server to cancel the statement and rolls back an open transaction before the
    connection goes back to the pool) and ``result`` fails with TimeoutError, an OSError: a
    connection loss to its callers."""

    __slots__ = ("_crossing", "_db")

    def __init__(self, db: Database, crossing: aio_loop.Crossing[T]) -> None:
        self._db = db
        self._crossing = crossing

    async def result(self) -> T:
        outage = self._db.outage
        try:
            value = await self._crossing.result()
        except Exception as error:
            if is_connection_loss(error):
                outage.lost(error)
            raise
        outage.reached()
        return value


class Database:
    """An asyncpg pool driven from trio.

    ``outage`` follows reachability: every unit that fails with a lost connection reports
    it there (one warning per outage), and the next unit that succeeds ends it (one info).
    """

    def __init__(self, pool: asyncpg.Pool | PoolLike, dsn: str, outage: Outage | None = None,
                 unit_timeout: float = UNIT_TIMEOUT_SECONDS) -> None:
        self._pool = pool
        self._loop = aio_loop.current()  # the pool's loop: every unit of it runs there
        # An asyncpg pool's connections are kept between units (_Held); a pool of another
        # kind (dhcp/sessions.py's) hands its own out cheaply already.
        self._held: _Held | None = _Held(pool) if isinstance(pool, asyncpg.Pool) else None
        self.dsn = dsn
        self.outage = outage or Outage()
        self.unit_timeout = unit_timeout

    @classmethod
    async def connect(
        cls, dsn: str, *, min_size: int = 2, max_size: int = 10, timeout: float = 60.0,
        settings: dict[str, str] | None = None,
    ) -> Database:
        """Connect, retrying with backoff until ``timeout`` (Postgres may still be starting).
        ``settings``: session settings of every connection of the pool."""
        delay = 0.1
        with trio.move_on_after(timeout) as scope:
            while True:
                try:
                    pool = await aio_loop.call(_create_pool, dsn, min_size, max_size, settings)
                    return cls(pool, dsn)
                except _REFUSED as error:
                    # Waiting does not fix a wrong password, a missing role or database.
                    raise DatabaseRefused(f"{error.__class__.__name__}: {error}") from None
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                    last = error
                    log.info("database not reachable yet: %s", error.__class__.__name__)
                await trio.sleep(delay)
                delay = min(delay * 2, 2.0)
        assert scope.cancelled_caught
        raise ConnectionError(f"database not reachable after {timeout:.0f}s: {last}")

    async def close(self) -> None:
        if self._held is not None:
            await self._loop.call(self._held.close)
        else:
            await self._loop.call(self._pool.close)

    async def run(self, fn: Work[T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on one pooled connection; one crossing."""
        return await self._cross(fn, args, False)

    async def transaction(self, fn: Work[T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` inside one transaction; one crossing."""
        return await self._cross(fn, args, True)

    def start(self, fn: Work[T], *args: Any, then: Callable[[T], None] | None = None) -> Unit[T]:
        """Start ``fn(conn, *args)`` on one pooled connection now, from synchronous code (its
        query goes out before this returns); ``await unit.result()`` for what it gives. One
        crossing, as ``run``. ``then(value)`` runs as soon as it has succeeded, before its
        waiter is woken (``aio_loop.DrivenLoop.start``)."""
        return self._begin(fn, args, False, then)

    async def _cross(self, fn: Work[T], args: tuple[Any, ...], in_transaction: bool) -> T:
        return await self._begin(fn, args, in_transaction, None).result()

    def _begin(self, fn: Work[T], args: tuple[Any, ...], in_transaction: bool,
               then: Callable[[T], None] | None) -> Unit[T]:
        try:
            if self._held is not None:
                crossing = self._loop.start(_on_held, self._held, fn, args, in_transaction,
                                            timeout=self.unit_timeout, then=then)
            else:
                crossing = self._loop.start(_on_connection, self._pool, fn, args,
                                            in_transaction, timeout=self.unit_timeout,
                                            then=then)
        except Exception as error:
            if is_connection_loss(error):
                self.outage.lost(error)
            raise
        return Unit(self, crossing)

    async def listen(self, channel: str, buffer: int = 1024) -> Notifications:
        """LISTEN on ``channel``; payloads arrive on the returned trio channel.

        The listener has its own connection (not a pooled one: a pooled connection that
        dies is detached from its proxy, and removing the listener then raises). When that
        connection is lost (a restart, a failover) the channel ends: the caller LISTENs
        again and polls once, since notifications sent meanwhile are gone. ``release()``
        closes the connection; it never raises. Notifications that find the buffer full
        are dropped: listeners must also poll.
        """
        send, receive = trio.open_memory_channel[str](buffer)

        def on_notify(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            # Runs in a turn of the asyncio loop, inside one of trio's tasks (aio_loop).
            with contextlib.suppress(
                trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
            ):
                send.send_nowait(payload)

        def on_lost(_conn: Any) -> None:
            send.close()  # ends the consumer's ``async for``: it listens again

        try:
            conn = await self._loop.call(_listen_connection, self.dsn, channel, on_notify,
                                         on_lost)
        except Exception as error:
            if is_connection_loss(error):
                self.outage.lost(error)
            raise

        async def release() -> None:
            send.close()
            with contextlib.suppress(Exception):
                await self._loop.call(conn.close, 2)
            if not conn.is_closed():
                self._loop.soon(conn.terminate)

        return Notifications(receive, release)


async def _listen_connection(
    dsn: str, channel: str, on_notify: Callable[..., None], on_lost: Callable[..., None]
) -> asyncpg.Connection:
    # Same DSN as the pool: with several hosts and target_session_attrs=read-write it
    # finds the primary, like every other connection of the process.
    conn = await asyncpg.connect(dsn, timeout=10, server_settings={
        "application_name": "ipamd-listen"})
    try:
        await conn.add_listener(channel, on_notify)
        conn.add_termination_listener(on_lost)
    except BaseException:
        conn.terminate()
        raise
    return conn


async def _no_reset(_conn: asyncpg.Connection) -> None:
    return None


async def _create_pool(dsn: str, min_size: int, max_size: int,
                       settings: dict[str, str] | None = None) -> asyncpg.Pool:
    quiet_pool_logs()
    return await asyncpg.create_pool(
        dsn,
        server_settings=settings,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        # No reset query on release (it is a round trip per unit): units never change session
        # state — settings are SET LOCAL inside a transaction, and Database.listen removes its
        # own listener. asyncpg still rolls back a transaction left open.
        reset=_no_reset,
        max_inactive_connection_lifetime=0,
        **NO_TIMERS,
    )


async def _on_connection(
    pool: PoolLike, fn: Work[T], args: tuple[Any, ...], in_transaction: bool
) -> T:
    async with pool.acquire() as conn:
        if in_transaction:
            async with conn.transaction():
                return await fn(conn, *args)
        return await fn(conn, *args)


class _Held:
    """An asyncpg pool's connections, kept taken between units (used on the asyncio side).

    asyncpg's acquire (a queue, a new proxy) and release (a task under asyncio.shield, the
    reset) cost a crossing more than the rest of its asyncio side. A unit takes a kept
    connection, or one from the pool when none is free (so at most the pool's max_size are
    kept, one per unit running at once), and leaves it kept when it ended cleanly. After a
    cancellation (the statement may still be running: asyncpg asks the server to cancel
    it), a lost connection or a client-side error the connection goes back to the pool,
    whose release waits for the cancellation, rolls back or closes it, as before."""

    __slots__ = ("closing", "free", "pool", "waiting")

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.free: list[PoolConnectionProxy[Any]] = []
        self.closing = False
        self.waiting = 0  # units waiting for the pool: a connection ending goes back to it

    async def take(self) -> PoolConnectionProxy[Any]:
        while self.free:
            kept = self.free.pop()
            if _idle(kept):
                return kept
            await self.pool.release(kept)  # dead while kept: the pool opens a new one
        self.waiting += 1
        try:
            conn: PoolConnectionProxy[Any] = await self.pool.acquire()
        finally:
            self.waiting -= 1
        return conn

    async def give_back(self, conn: PoolConnectionProxy[Any], clean: bool) -> None:
        # Kept only while no unit waits for the pool: with every connection taken, a unit
        # waiting there would otherwise wait for its timeout beside a free kept one.
        if clean and not self.closing and not self.waiting and _idle(conn):
            self.free.append(conn)
        else:
            await self.pool.release(conn)

    async def close(self) -> None:
        self.closing = True  # units still running give their connection back to the pool
        while self.free:
            await self.pool.release(self.free.pop())
        await self.pool.close()


def _idle(conn: PoolConnectionProxy[Any]) -> bool:
    """Open, and outside a transaction. A connection that closed has been detached from its
    proxy by the pool already (asyncpg's pool: its methods then raise InterfaceError, and
    releasing it again does nothing)."""
    try:
        return not conn.is_closed() and not conn.is_in_transaction()
    except asyncpg.InterfaceError:
        return False


def _clean_end(error: BaseException) -> bool:
    """May a connection be kept after its unit raised ``error``? Yes when the server answered
    (an SQL error) or the unit's own code raised between statements; not after a cancel
    (the statement may still run), a lost connection or misuse of the client."""
    if not isinstance(error, Exception):
        return False
    return not (is_connection_loss(error)
                or isinstance(error, (asyncpg.InterfaceError, asyncpg.InternalClientError)))


async def _on_held(held: _Held, fn: Work[T], args: tuple[Any, ...],
                   in_transaction: bool) -> T:
    conn = await held.take()
    clean = False
    try:
        if in_transaction:
            async with conn.transaction():
                value = await fn(conn, *args)
        else:
            value = await fn(conn, *args)
        clean = True
        return value
    except BaseException as error:
        clean = _clean_end(error)
        raise
    finally:
        await held.give_back(conn, clean)


async def connect_once(dsn: str) -> asyncpg.Connection:
    """A single connection outside any pool (migrations, admin work); asyncio side."""
    conn = await asyncpg.connect(dsn)
    await _init_connection(conn)
    return conn


async def run_once(dsn: str, fn: Work[T], *args: Any) -> T:
    """From trio: open one connection, run ``fn(conn, *args)``, close. For CLI and admin work."""

    async def _go() -> T:
        conn = await connect_once(dsn)
        try:
            return await fn(conn, *args)
        finally:
            await conn.close()

    return await aio_loop.call(_go)


def run_sync(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(fn, *args)`` with the asyncio loop open (CLI entry points, test helpers)."""
    return aio_loop.run(fn, *args)
