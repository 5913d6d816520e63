"""asyncio's event loop, driven from inside trio, and the crossing to it.

asyncpg is asyncio-only. It used to run on trio-asyncio, which re-implements an asyncio loop
on trio's primitives: a `SELECT 1` on a held connection cost ~660 µs of CPU through it
against ~170 µs in plain asyncio — most of a small API request (issue 17). Here a stock
``SelectorEventLoop`` runs in trio's own thread, one turn (``_run_once``) at a time:

- its selector never blocks; a trio task (the driver) waits until the loop's epoll file
  descriptor is readable (any of asyncpg's sockets has data) or its next timer is due, then
  takes a turn;
- a crossing creates the unit's asyncio task and takes the loop's turns at once, in the
  caller (the unit's query goes out without waiting for the driver); the task's done
  callback reschedules the waiting trio task directly.

No thread, no self-pipe write and no hand-over of the GIL per crossing (a loop on its own
thread cost ~300 µs per `SELECT 1` for those); with 8 units in flight a crossing costs what
plain asyncio does (~170 µs).

It leans on two private parts of CPython 3.11's asyncio (the appliance's Python, pinned by
the image): ``BaseEventLoop._run_once`` (one turn) and the ``_ready``/``_scheduled`` queues
(is there work now, when is the next timer). ``tests/unit/test_aio_loop.py`` covers both.

Cancellation is trio's: a cancelled crossing cancels the asyncio task (asyncpg then asks the
server to cancel the statement and rolls back) and returns only once that task has ended,
so a connection is never still in use by a unit that trio has given up on.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import selectors
import threading
from asyncio import events
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import outcome
import trio

T = TypeVar("T")

_current: contextvars.ContextVar[DrivenLoop] = contextvars.ContextVar("ipamd_asyncio_loop")

# Turns a crossing takes in its caller before leaving the rest to the driver: enough for a
# unit's first steps (acquire, send), bounded so a busy asyncio task cannot hold a caller.
INLINE_TURNS = 16
# How long leaving the loop waits for the tasks it cancels to finish (rollbacks, closes).
CLOSE_SECONDS = 5.0


class LoopClosed(ConnectionError):
    """The asyncio loop was closed under a unit, or before it started (the process stops)."""


class _NeverBlocks(selectors.EpollSelector):
    """The loop's selector: trio does the waiting (on this selector's own epoll fd)."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return super().select(0)


class _Crossing:
    """One unit in flight: how trio asked it to stop, and whether its caller waits yet."""

    __slots__ = ("raise_cancel", "waiting")

    def __init__(self) -> None:
        self.raise_cancel: Callable[[], Any] | None = None
        self.waiting = False


async def _awaited(fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> T:
    return await fn(*args)


def _result(task: asyncio.Task[T], crossing: _Crossing) -> outcome.Outcome[T]:
    if task.cancelled():
        if crossing.raise_cancel is not None:
            return outcome.capture(crossing.raise_cancel)  # trio's Cancelled, as trio wants
        return outcome.Error(LoopClosed("the database loop closed under this unit of work"))
    return outcome.capture(task.result)


class DrivenLoop:
    def __init__(self) -> None:
        self.loop = asyncio.SelectorEventLoop(_NeverBlocks())
        self._waiting: trio.CancelScope | None = None  # the driver's wait, while it waits
        self.closed = False

    # -- turns --------------------------------------------------------------------------

    def _turns(self) -> None:
        """Turns until nothing is ready, at most INLINE_TURNS: a reply from the database
        takes three (the read, the task's step, its done callback), and a trio round between
        each would cost more than the turns themselves."""
        loop = self.loop
        events._set_running_loop(loop)
        try:
            for _ in range(INLINE_TURNS):
                loop._run_once()  # type: ignore[attr-defined]
                if not loop._ready:  # type: ignore[attr-defined]
                    break
        finally:
            events._set_running_loop(None)

    def _next_timer(self) -> float:
        """The trio time of the loop's next timer; inf without one."""
        scheduled = self.loop._scheduled  # type: ignore[attr-defined]
        if not scheduled:
            return math.inf
        return trio.current_time() + max(0.0, scheduled[0]._when - self.loop.time())

    def _wake_driver(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()

    def turn_now(self) -> None:
        """Take the loop's turns in the caller until nothing is ready; more than
        INLINE_TURNS are left to the driver."""
        self._turns()
        if self.loop._ready:  # type: ignore[attr-defined]
            self._wake_driver()
        elif self._waiting is not None:
            # A timer armed in these turns (asyncpg's connect timeout) may be due before
            # the driver would otherwise look. (Set only when earlier: trio re-registers a
            # deadline on every set, and this runs at every crossing.)
            due = self._next_timer()
            if due < self._waiting.deadline:
                self._waiting.deadline = due

    async def drive(self) -> None:
        """Take a turn whenever the loop has I/O, a due timer or ready callbacks."""
        loop = self.loop
        epoll_fd = loop._selector.fileno()  # type: ignore[attr-defined]
        while True:
            self._turns()
            if loop._ready:  # type: ignore[attr-defined]
                await trio.lowlevel.checkpoint()  # trio's tasks run between busy turns
                continue
            with trio.CancelScope(deadline=self._next_timer()) as waiting:
                self._waiting = waiting
                try:
                    await trio.lowlevel.wait_readable(epoll_fd)
                finally:
                    self._waiting = None

    def soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the loop at its next turn (taken now); nothing once the loop
        is closed."""
        if self.closed:
            return
        self.loop.call_soon(fn, *args)
        self.turn_now()

    # -- the crossing -------------------------------------------------------------------

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await fn(*args)`` as an asyncio task; trio's cancellation reaches it."""
        if self.closed:
            raise LoopClosed("the database loop is closed")
        waiter = trio.lowlevel.current_task()
        crossing = _Crossing()
        # The unit sees the caller's context variables, as if it ran in the caller.
        task = self.loop.create_task(_awaited(fn, args), context=contextvars.copy_context())

        def finished(_task: asyncio.Task[T]) -> None:
            if crossing.waiting:
                trio.lowlevel.reschedule(waiter, _result(task, crossing))

        task.add_done_callback(finished)
        self.turn_now()
        if task.done():  # no I/O to wait for (or it failed at once)
            # Still a schedule point, as every trio async call is; shielded, so a unit that
            # has finished (a commit, say) is never reported as cancelled.
            await trio.lowlevel.cancel_shielded_checkpoint()
            return _result(task, crossing).unwrap()

        def abort(raise_cancel: Callable[[], Any]) -> trio.lowlevel.Abort:
            # Not aborted yet: ``finished`` wakes the caller once the task has ended.
            crossing.raise_cancel = raise_cancel
            task.cancel()
            self._wake_driver()
            return trio.lowlevel.Abort.FAILED

        crossing.waiting = True
        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    async def close(self) -> None:
        """Cancel the tasks still on the loop, let them finish (bounded), close it."""
        rest = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        if rest:
            ended = trio.Event()
            left = len(rest)

            def one_ended(_task: asyncio.Task[Any]) -> None:
                nonlocal left
                left -= 1
                if not left:
                    ended.set()

            for task in rest:
                task.add_done_callback(one_ended)
                task.cancel()
            self._wake_driver()
            with trio.move_on_after(CLOSE_SECONDS):
                await ended.wait()
        self.closed = True


@contextlib.asynccontextmanager
async def open_loop() -> AsyncIterator[DrivenLoop]:
    """An asyncio loop driven from this trio run, for the body and the tasks it starts."""
    driven = DrivenLoop()
    # The loop counts as running in this thread while it is open: asyncio's thread checks
    # and ``is_running`` see it so.
    driven.loop._thread_id = threading.get_ident()  # type: ignore[attr-defined]
    reset = _current.set(driven)
    # Shielded: when the body is cancelled its clean-up still crosses (a pool closes, a
    # shielded "node stopped" write): the driver turns until the loop is closed.
    driving = trio.CancelScope(shield=True)

    async def drive() -> None:
        with driving:
            await driven.drive()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drive)
            try:
                yield driven
            finally:
                with trio.CancelScope(shield=True):
                    await driven.close()
                driving.cancel()
    finally:
        with contextlib.suppress(ValueError):  # reset from another context: let it be
            _current.reset(reset)
        driven.loop._thread_id = None  # type: ignore[attr-defined]
        driven.loop.close()


def current() -> DrivenLoop:
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError("no asyncio loop is open: wrap the work in "
                           "ipamd.db.bridge.asyncio_loop()") from None


async def call(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await fn(*args)`` on the current loop."""
    return await current().call(fn, *args)


def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(fn, *args)`` with a loop open around it (CLI and test helpers)."""

    async def main() -> T:
        async with open_loop():
            return await fn(*args)

    return trio.run(main)
