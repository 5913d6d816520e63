"""asyncio's event loop, driven from inside trio, and the crossing to it.

asyncpg is asyncio-only. It used to run on trio-asyncio, which re-implements an asyncio loop
on trio's primitives: a `SELECT 1` on a held connection cost ~660 µs of CPU through it
against ~170 µs in plain asyncio — most of a small API request (on the 2-core VM). Here a stock
``SelectorEventLoop`` runs in trio's own thread, one turn (``_run_once``) at a time:

- its selector never blocks; a trio task (the driver) waits until the loop's epoll file
  descriptor is readable (any of asyncpg's sockets has data) or its next timer is due, then
  takes a turn;
- a crossing creates the unit's asyncio task and takes the loop's turns at once, in the
  caller (the unit's query goes out without waiting for the driver); the task's done
  callback reschedules the waiting trio task directly;
- a crossing's deadline is kept by a watchdog task that looks a few times a second, not by
  a trio cancel scope per crossing, and the driver waits without a scope (it is woken
  through the loop's self-pipe): entering and closing those scopes was the largest part of
  what a lone crossing added to a DHCP commit. The loop's timers (an asyncpg pool arms one
  per released connection, minutes out) are kept by a third task, the clock, whose one
  scope's deadline moves only when an earlier timer is armed: the appliance always has one,
  and a scope entered and closed per wake had put that cost back on every commit's answer.

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
import logging
import math
import selectors
import threading
from asyncio import events
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, NoReturn, TypeVar

import outcome
import trio

T = TypeVar("T")
log = logging.getLogger("ipamd.db")

_current: contextvars.ContextVar[DrivenLoop] = contextvars.ContextVar("ipamd_asyncio_loop")

# Turns a crossing takes in its caller before leaving the rest to the driver: enough for a
# unit's first steps (acquire, send), bounded so a busy asyncio task cannot hold a caller.
INLINE_TURNS = 16
# How long leaving the loop waits for the tasks it cancels to finish (rollbacks, closes).
CLOSE_SECONDS = 5.0
# How often the watchdog looks for crossings past their deadline: a unit times out at most
# this much late (the database's unit timeout is a minute).
WATCH_SECONDS = 0.25


class LoopClosed(ConnectionError):
    """The asyncio loop was closed under a unit, or before it started (the process stops)."""


class _NeverBlocks(selectors.EpollSelector):
    """The loop's selector: trio does the waiting (on this selector's own epoll fd).
    ``skip``: this turn does not look for I/O (see DrivenLoop._turns)."""

    skip = False

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self.skip:
            return []
        return super().select(0)


class Crossing(Generic[T]):
    """One unit in flight, started (``DrivenLoop.start``): ``await crossing.result()``, once.

    It knows how trio asked the unit to stop, which trio task waits for it (None: none yet),
    and when it must have ended (trio time; the watchdog cancels it then)."""

    __slots__ = ("_driven", "deadline", "raise_cancel", "task", "then", "timed_out",
                 "timeout", "waiter")

    def __init__(self, driven: DrivenLoop, task: asyncio.Task[T], timeout: float | None,
                 then: Callable[[T], None] | None = None) -> None:
        self._driven = driven
        self.task = task
        self.then = then
        self.timeout = timeout
        self.deadline = math.inf if timeout is None else trio.current_time() + timeout
        self.timed_out = False
        self.raise_cancel: Callable[[], NoReturn] | None = None
        self.waiter: trio.lowlevel.Task | None = None
        if timeout is not None:
            driven._timed[self] = None
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[T]) -> None:
        # In a turn of the loop: the unit has ended; its caller, if it waits, goes on.
        self._driven._timed.pop(self, None)
        if self.then is not None and not task.cancelled() and task.exception() is None:
            try:
                self.then(task.result())
            except Exception:
                log.exception("what follows a finished unit of work failed")
        if self.waiter is not None:
            trio.lowlevel.reschedule(self.waiter, _result(self.task, self))

    async def result(self) -> T:
        """The unit's result (or its exception); trio's cancellation reaches the unit, and
        this returns only once the unit has ended."""
        task = self.task
        if task.done():  # no I/O to wait for (or it failed at once)
            self._driven._timed.pop(self, None)
            # Still a schedule point, as every trio async call is; shielded, so a unit that
            # has finished (a commit, say) is never reported as cancelled.
            await trio.lowlevel.cancel_shielded_checkpoint()
            return _result(task, self).unwrap()

        def abort(raise_cancel: Callable[[], NoReturn]) -> trio.lowlevel.Abort:
            # Not aborted yet: ``_finished`` wakes the caller once the task has ended.
            self.raise_cancel = raise_cancel
            task.cancel()
            self._driven._wake_driver()
            return trio.lowlevel.Abort.FAILED

        self.waiter = trio.lowlevel.current_task()
        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result


async def _awaited(fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> T:
    return await fn(*args)


def _result(task: asyncio.Task[T], crossing: Crossing[Any]) -> outcome.Outcome[T]:
    if task.cancelled():
        if crossing.raise_cancel is not None:
            return outcome.capture(crossing.raise_cancel)  # trio's Cancelled, as trio wants
        if crossing.timed_out:
            return outcome.Error(TimeoutError(
                f"the database did not finish a unit of work in {crossing.timeout:g} s"))
        return outcome.Error(LoopClosed("the database loop closed under this unit of work"))
    return outcome.capture(task.result)


class DrivenLoop:
    def __init__(self) -> None:
        self._selector = _NeverBlocks()
        self.loop = asyncio.SelectorEventLoop(self._selector)
        # ``_bare``: the driver waits for I/O (woken through the loop's self-pipe then).
        self._bare = False
        # The clock's wait for the loop's next timer (``keep_time``), and that timer's time
        # on the loop's clock (inf: none armed, or the clock is not waiting).
        self._clock: trio.CancelScope | None = None
        self._clock_when = math.inf
        self._timed: dict[Crossing[Any], None] = {}  # crossings with a deadline, in flight
        self._turning = False  # in _turns (see turn_now)
        self.closed = False

    # -- turns --------------------------------------------------------------------------

    def _turns(self, poll: bool) -> None:
        """Turns until nothing is ready, at most INLINE_TURNS: a reply from the database
        takes three (the read, the task's step, its done callback), and a trio round between
        each would cost more than the turns themselves.

        Only the first turn looks for I/O, and only when ``poll`` (the driver's turns, woken
        by it): the later ones run what the first made ready, and a caller's turns start its
        unit. What they leave unread keeps the epoll fd readable, so the driver wakes for it.
        """
        loop = self.loop
        selector = self._selector
        events._set_running_loop(loop)
        selector.skip = not poll
        self._turning = True
        try:
            for _ in range(INLINE_TURNS):
                loop._run_once()  # type: ignore[attr-defined]  # asyncio private (see above)
                selector.skip = True
                if not loop._ready:  # type: ignore[attr-defined]  # asyncio private (see above)
                    break
        finally:
            self._turning = False
            selector.skip = False
            events._set_running_loop(None)

    def _next_timer(self) -> float:
        """The trio time of the loop's next timer; inf without one."""
        # asyncio's private timer heap (see the module's docstring)
        scheduled: list[asyncio.TimerHandle] = self.loop._scheduled  # type: ignore[attr-defined]  # private
        if not scheduled:
            return math.inf
        return trio.current_time() + max(0.0, scheduled[0].when() - self.loop.time())

    def _wake_driver(self) -> None:
        if self._bare:
            self.loop._write_to_self()  # type: ignore[attr-defined]  # asyncio private (see above)

    def _timer_armed(self) -> None:
        """Bring the clock's deadline forward to the loop's next timer if that is earlier
        (it is never moved later: a wake for a cancelled timer only looks again). Compared
        on the loop's clock: this runs at every crossing, and trio re-registers a deadline
        on every set."""
        # asyncio's private timer heap (see the module's docstring)
        scheduled: list[asyncio.TimerHandle] = self.loop._scheduled  # type: ignore[attr-defined]  # private
        if scheduled and scheduled[0].when() < self._clock_when and self._clock is not None:
            self._clock_when = scheduled[0].when()
            self._clock.deadline = self._next_timer()

    def turn_now(self) -> None:
        """Take the loop's turns in the caller until nothing is ready; more than
        INLINE_TURNS are left to the driver. Inside a turn (a unit's ``then`` starts
        another) the turn under way goes on to what was made ready: a turn never nests."""
        if self._turning:
            return
        self._turns(False)
        if self.loop._ready:  # type: ignore[attr-defined]  # asyncio private (see above)
            self._wake_driver()
        # A timer armed in these turns (asyncpg's connect timeout) may be due before the
        # clock would otherwise look.
        self._timer_armed()

    async def drive(self) -> None:
        """Take a turn whenever the loop has I/O or ready callbacks (timers: ``keep_time``)."""
        loop = self.loop
        epoll_fd = loop._selector.fileno()  # type: ignore[attr-defined]  # asyncio private (see above)
        while True:
            self._turns(True)
            self._timer_armed()  # by what the I/O woke (a unit's asyncio.sleep after a read)
            if loop._ready:  # type: ignore[attr-defined]  # asyncio private (see above)
                await trio.lowlevel.checkpoint()  # trio's tasks run between busy turns
                continue
            self._bare = True
            try:
                await trio.lowlevel.wait_readable(epoll_fd)
            finally:
                self._bare = False

    async def keep_time(self) -> None:
        """Take the loop's turns when its next timer is due."""
        scheduled: list[asyncio.TimerHandle] = self.loop._scheduled  # type: ignore[attr-defined]  # private
        while True:
            with trio.CancelScope(deadline=self._next_timer()) as clock:
                self._clock = clock
                self._clock_when = scheduled[0].when() if scheduled else math.inf
                try:
                    await trio.sleep_forever()
                finally:
                    self._clock = None
                    self._clock_when = math.inf
            self.turn_now()  # runs the timers due (and what they make ready)

    async def watch(self) -> None:
        """Cancel the units past their deadline, every WATCH_SECONDS; their callers get a
        TimeoutError once the unit has ended (asyncpg cancels the statement first)."""
        while True:
            await trio.sleep(WATCH_SECONDS)
            if not self._timed:
                continue
            now = trio.current_time()
            late = [crossing for crossing in self._timed if crossing.deadline <= now]
            for crossing in late:
                del self._timed[crossing]
                crossing.timed_out = True
                crossing.task.cancel()
            if late:
                self.turn_now()

    def soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the loop at its next turn (taken now); nothing once the loop
        is closed."""
        if self.closed:
            return
        self.loop.call_soon(fn, *args)
        self.turn_now()

    # -- the crossing -------------------------------------------------------------------

    def start(self, fn: Callable[..., Awaitable[T]], *args: Any,
              timeout: float | None = None,
              then: Callable[[T], None] | None = None) -> Crossing[T]:
        """Start ``await fn(*args)`` as an asyncio task and take its first steps now, in the
        caller (synchronous: a unit's query goes out before this returns). Past ``timeout``
        seconds it is cancelled and its result is a TimeoutError. Every crossing started
        must be awaited (``Crossing.result``).

        ``then(value)``, if the unit succeeds, runs in the loop's turn that ends it, before
        its caller is woken (no trio round between a database's answer and what it allows:
        the DHCP committer's Acks). It must not wait, nor raise (what it raises is logged)."""
        if self.closed:
            raise LoopClosed("the database loop is closed")
        # The unit sees the caller's context variables, as if it ran in the caller.
        task = self.loop.create_task(_awaited(fn, args), context=contextvars.copy_context())
        crossing = Crossing(self, task, timeout, then)
        self.turn_now()
        return crossing

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any,
                   timeout: float | None = None) -> T:
        """``await fn(*args)`` as an asyncio task (see ``start``)."""
        return await self.start(fn, *args, timeout=timeout).result()

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
    driven.loop._thread_id = threading.get_ident()  # type: ignore[attr-defined]  # asyncio private (see above)
    reset = _current.set(driven)
    # Shielded: when the body is cancelled its clean-up still crosses (a pool closes, a
    # shielded "node stopped" write): the driver turns until the loop is closed.
    driving = trio.CancelScope(shield=True)

    async def drive() -> None:
        with driving:
            async with trio.open_nursery() as both:
                both.start_soon(driven.watch)
                both.start_soon(driven.keep_time)
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
        driven.loop._thread_id = None  # type: ignore[attr-defined]  # asyncio private (see above)
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
