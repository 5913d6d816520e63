"""Group commit: concurrent DHCP transactions share one database transaction.

Packets hand their ``Op`` to ``submit`` (no task, no channel: a list append). A few
worker tasks each take what has queued up and commit the lot with one crossing into
asyncio (``leasestore.commit``: one statement per batch). Only after that commit are the
waiters' replies built and sent, so an Ack is never ahead of its lease.

A worker that finds the database idle commits at once when ops arrive sparsely: at light
load a window would only add its length to every answer. The receive loop calls ``kick``
when it has read what was waiting: the batch the woken worker would take once that loop
parks goes into the database at once, started in the loop's task and handed to the worker,
so its statement does not wait for the loop to park and trio to switch tasks. A batch that
commits is answered in the asyncio turn that reads the database's answer
(``Database.start``'s ``then``), not after trio has switched back to its worker; failures
and the one retry stay with the worker.

A second batch goes into the database beside one already there only while that one is
a lone op (``OVERLAP_MAX``: light load, where a commit is mostly its WAL flush and two in
flight share it, so an op that comes meanwhile need not wait a whole commit) or while a
full batch waits already; under load the batches go one at a time, each taking what queued
while the last was committed.

While another batch is in the database, or while ops arrive closer together than the window
(a burst: the last two came less than a window apart, or several are waiting already), the
worker waits the window (``dhcp.commit_window_us``, 0 by default: never), and another while
ops keep coming (at most four), unless ``batch_max`` is already there. Ops that come while a
woken worker has not yet taken the queue join its batch rather than wake another worker.
The batches run on the committer's own sessions (``sessions``), not the shared pool.

Discovers never come here: an Offer is answered from this node's memory (engine.py), so
every queued op is a client's Request, Release or Decline, taken first come, first
served. Ops that waited longer than ``stale_seconds``
when their batch is formed are not written but handed to ``on_stale``: their clients have
retransmitted or given up, and the database time goes to requests that can still be
answered in time.

``overloaded`` tells the server when to shed new Discovers: the oldest queued op has waited
longer than ``dhcp.overload_wait_ms``, not counting the time a commit stalled. A batch that
stays in the database longer than ``STALL_SECONDS`` is a stall (a slow WAL flush: the disk
here took up to 0.5 s now and then, at 200 DORA/s as at 6,000), not a server past its
ceiling: every op queued behind it waits, and the queue it leaves drains in a few batches.
Shedding then only sent new clients into their retransmission timers (25 Discovers shed at
200 DORA/s, 3,681 at 6,000, in bench runs with no socket overflow). A stall is ridden out
for at most half ``stale_seconds``: longer, and the Requests queued behind it would go
stale, so new clients are turned away again.

Both servers use it (docs/DEVELOPING.md, the room map: `dhcp6` shares it): what a batch is and
how it is written are the caller's — ``commit``/``warm`` default to DHCPv4's
``leasestore.commit``/``leasestore.warm``, and ``dhcp6`` passes its own lease store entry
points. A queued item is anything with a ``born`` time and an ``op`` that can ``reset()``.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import asyncpg
import trio

from ipamd.core.histogram import Histogram
from ipamd.db.bridge import Database, Unit
from ipamd.db.outage import Throttle, is_connection_loss
from ipamd.dhcp import leasestore
from ipamd.dhcp.sessions import Warm, open_commit_db

log = logging.getLogger("ipamd.dhcp.commit")

# A burst is gathered a window at a time while it lasts, at most this many windows.
_GATHER_WINDOWS = 4
# The largest batch in the database that another may overlap (see the module docstring).
# Two in flight under load commit half-size batches: twice the statements, crossings and
# WAL flushes, and two transactions contending for the same index pages and subnet rows.
# Lab, 6,000 DORA/s offered, one worker against two: ~13 % less CPU per DORA (server and
# its PostgreSQL backends), p50 35-90 ms against 150-190 ms. Only a lone op is overlapped:
# with 4, on a host where a commit takes a millisecond or more (2026-12-07), the batch in
# flight was often that small at 6,000-8,000/s, and the overlapping batches, as small,
# cost each DORA a full commit's share again (four interleaved rounds at 8,000/s: 195, 196,
# 195 µs of CPU a DORA against 218, 198, 228, and 1,553-4,185 answers lost against
# 4,894-9,203, leaving out a round with 4-9 % steal). At 1,000/s nearly every batch is one
# op, so light-load commits still overlap as before.
OVERLAP_MAX = 1
# A batch in the database longer than this is a stall (see the module docstring): a commit
# under load takes 1-35 ms here (a batch of 256 on a contended machine), a slow WAL flush
# 0.1-0.5 s. Half the default overload bound: a shorter stall cannot shed on its own, and a
# server past its ceiling, whose batches merely grow slow, is not mistaken for a stalled one.
STALL_SECONDS = 0.1
# After a unique index refused a grant (another node got there first), batches are written
# careful (leasestore4._main) for this long: while nodes race for addresses, a trusting
# statement would fail and run twice.
CAREFUL_SECONDS = 10.0
# Worth one more try: another transaction (another node) crossed ours.
_RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError)


class Queued(Protocol):
    """What the committer queues: ``dhcp.context.Exchange``, or a DHCPv6 server's message.
    Its ``op`` is what ``commit`` writes and has a ``reset()`` (typed Any: an Exchange's is
    optional until the engine sets it)."""

    @property
    def born(self) -> float: ...

    @property
    def op(self) -> Any: ...


Q = TypeVar("Q", bound=Queued)
# The batch's writer: (connection, the batch's ops, trusting) -> a unique index refused an
# insert (leasestore.commit's contract).
CommitFn = Callable[[asyncpg.Connection, list[Any], bool], Awaitable[bool]]


class _InFlight:
    """A batch in the database: its exchanges, when it went in (perf_counter for its commit
    time, monotonic as Exchange.born), and whether it has been answered."""

    __slots__ = ("answered", "batch", "started", "went_in")

    def __init__(self, batch: list[Any]) -> None:
        self.batch = batch
        self.started = time.perf_counter()
        self.went_in = time.monotonic()
        self.answered = False


class Committer(Generic[Q]):
    def __init__(
        self,
        db: Database,
        on_done: Callable[[Sequence[Q], bool], None],
        *,
        batch_max: int,
        window_seconds: float,
        workers: int,
        stale_seconds: float = 0.0,
        on_stale: Callable[[Sequence[Q]], None] | None = None,
        commit: CommitFn = leasestore.commit,
        warm: Warm = leasestore.warm,
        waits: Histogram | None = None,
    ) -> None:
        self.db = db
        # Each batch's oldest op's wait until its statement went out (``_went_in``).
        self.waits = waits
        self._commit_fn = commit
        self._warm = warm
        self.on_done = on_done
        self.on_stale = on_stale
        self.stale = stale_seconds
        self.batch_max = batch_max
        self.window = window_seconds
        self.workers = workers
        self.busy_seconds = 0.0  # time batches spent in the database (commit included)
        self.in_flight = 0  # batches in the database now
        self._flight_ops = 0  # the ops of those batches
        self.last_seconds = 0.0  # the batch just committed (on_done reads it)
        # Time every worker had a batch in the database (new ops had to queue): how long
        # the DHCP server ran at its ceiling. Other work of the node yields to it.
        self._saturated_seconds = 0.0
        self._saturated_from = 0.0
        self._sessions: Database | None = None
        self._queue: list[Q] = []
        # When each batch now in the database went in, and the stalls of recent batches
        # ((went in, landed), time.monotonic as Exchange.born): what overloaded() discounts.
        self._flight_since: list[float] = []
        self._stalls: list[tuple[float, float]] = []
        self._stall_cap = stale_seconds / 2
        self._submitted = -math.inf  # when the last op came (monotonic, as Exchange.born)
        self._dense = False  # the last two ops came less than a window apart
        self._lot = trio.lowlevel.ParkingLot()
        # A worker was woken for the queue and has not taken it yet: the ops that come
        # meanwhile join its batch instead of waking another worker for a batch of one.
        self._waking = False
        self._log = Throttle(log)
        self._careful_until = -math.inf  # (monotonic) see CAREFUL_SECONDS
        # A batch started by ``kick`` for the worker woken for it, with its first attempt
        # (None: it could not start).
        self._started: tuple[_InFlight, Unit[bool] | None] | None = None

    def submit(self, tx: Q) -> None:
        self._dense = tx.born - self._submitted < self.window
        self._submitted = tx.born
        self._queue.append(tx)
        if not self._wake_one() and self.in_flight == self.workers and not self._saturated_from:
            self._saturated_from = time.perf_counter()

    def kick(self) -> None:
        """Start now the batch that the worker woken for the queue would take when it runs
        (the caller has read what was waiting), and hand it to that worker. Not while a
        window gathers ops, nor when the loop is closing (the worker then takes it)."""
        if not self._waking or self._started is not None or self._sessions is None:
            return
        if not self._queue or self.gathers():
            return
        batch = self._take()
        if self.stale:
            batch = self._fresh(batch)
            if not batch:
                return
        flight = self._went_in(batch)
        self._started = (flight, self._start(flight))

    def _trusting(self) -> bool:
        return time.monotonic() >= self._careful_until

    def _went_in(self, batch: list[Q]) -> _InFlight:
        """Count a batch in the database from now."""
        flight = _InFlight(batch)
        if self.waits is not None:
            # born and went_in are both time.monotonic(); a retried pick keeps its first born.
            self.waits.observe(flight.went_in - min(tx.born for tx in batch))
        self._flight_since.append(flight.went_in)
        self.in_flight += 1
        self._flight_ops += len(batch)
        self._mark()
        return flight

    def _start(self, flight: _InFlight) -> Unit[bool] | None:
        """Send the batch's statement now; if it commits, it is answered from the turn that
        reads the answer (``_committed``). None when the loop is closing (the worker's own
        attempt then fails and says so)."""
        try:
            return self._sessions.start(  # type: ignore[union-attr]  # open() set it
                self._commit_fn, [tx.op for tx in flight.batch], self._trusting(),
                then=functools.partial(self._committed, flight))
        except ConnectionError:
            return None

    def _committed(self, flight: _InFlight, refused: bool) -> None:
        """The batch's first attempt committed: answer it now."""
        flight.answered = True
        if refused:  # before on_done: a pick retried there is written careful
            self._careful_until = time.monotonic() + CAREFUL_SECONDS
        self._out_of_database(flight)
        self.on_done(flight.batch, True)

    def _out_of_database(self, flight: _InFlight) -> None:
        self.in_flight -= 1
        self._flight_ops -= len(flight.batch)
        self._landed(flight.went_in)
        self._mark()
        self.last_seconds = time.perf_counter() - flight.started  # read by on_done
        self.busy_seconds += self.last_seconds

    def _mark(self) -> None:
        """After the queue or the busy workers changed: saturated or not from now on."""
        full = self.in_flight == self.workers and bool(self._queue)
        if full and not self._saturated_from:
            self._saturated_from = time.perf_counter()
        elif not full and self._saturated_from:
            self._saturated_seconds += time.perf_counter() - self._saturated_from
            self._saturated_from = 0.0

    def may_start(self) -> bool:
        """May a worker take a batch now: none is in the database, or a free worker may
        overlap the ones there (they are small, or a full batch waits already: waiting would
        not make it bigger)."""
        if not self.in_flight:
            return True
        return self.in_flight < self.workers and (
            self._flight_ops <= OVERLAP_MAX or len(self._queue) >= self.batch_max)

    def _wake_one(self) -> bool:
        """Unpark a worker (len: cheaper than statistics()) when one is parked, none is
        being woken already, and it may start a batch now; True if one was."""
        if self._lot and not self._waking and self.may_start():
            self._waking = True
            self._lot.unpark()
            return True
        return False

    @property
    def queued(self) -> int:
        return len(self._queue)

    def overloaded(self, now: float, limit: float) -> bool:
        """Has the oldest queued op waited longer than ``limit`` (s, by ``Exchange.born``),
        the time commits stalled meanwhile not counted (at most half ``stale_seconds``)?"""
        if not self._queue:
            return False
        born = self._queue[0].born
        waited = now - born
        if waited <= limit:  # the common case, per Discover: nothing more to look at
            return False
        return waited - min(self.stalled(born, now), self._stall_cap) > limit

    def stalled(self, since: float, now: float) -> float:
        """Seconds between ``since`` and ``now`` a batch was stalled in the database (the
        stalls of landed batches and the one of a batch still there, overlaps counted once)."""
        spans = [(max(start, since), end) for start, end in self._stalls if end > since]
        if self._flight_since and now - self._flight_since[0] > STALL_SECONDS:
            spans.append((max(self._flight_since[0], since), now))
        total = 0.0
        reached = since
        for start, end in sorted(spans):
            if end > reached:
                total += end - max(start, reached)
                reached = end
        return total

    def _landed(self, went_in: float) -> None:
        """A batch left the database: remember its stall, forget stalls no queued op saw."""
        self._flight_since.remove(went_in)
        now = time.monotonic()
        if now - went_in > STALL_SECONDS:
            self._stalls.append((went_in, now))
        if self._stalls:
            oldest = self._queue[0].born if self._queue else now
            self._stalls = [span for span in self._stalls if span[1] > oldest]

    def saturated_seconds(self) -> float:
        """Seconds so far with every commit worker busy and ops waiting for one, the current
        stretch included."""
        since = self._saturated_from
        return self._saturated_seconds + (time.perf_counter() - since if since else 0.0)

    def gathers(self) -> bool:
        """Wait a window before taking a batch: another batch is in the database or ops come
        in a burst (the last two less than a window apart, or more than one waiting already),
        and the batch is not full yet."""
        queued = self.queued
        return (bool(self.window) and (self.in_flight > 0 or self._dense or queued > 1)
                and queued < self.batch_max)

    async def _gather(self) -> None:
        """Wait a window, and more while ops keep coming (a burst), at most _GATHER_WINDOWS."""
        for _ in range(_GATHER_WINDOWS):
            before = self.queued
            await trio.sleep(self.window)
            if self.queued == before or self.queued >= self.batch_max:
                return

    def _take(self) -> list[Q]:
        batch = self._queue[:self.batch_max]
        del self._queue[:self.batch_max]
        self._mark()
        return batch

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._sessions = await open_commit_db(self.db, self.workers, self._warm)
        try:
            async with trio.open_nursery() as nursery:
                for _ in range(self.workers):
                    nursery.start_soon(self._worker)
                task_status.started()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await self._sessions.close()

    async def _worker(self) -> None:
        while True:
            # (Woken for ops another worker took, or while a big batch went in: the worker
            # that committed it takes the queue next.)
            while self._started is None and (not self.queued or not self.may_start()):
                self._waking = False
                await self._lot.park()
            if self._started is not None:  # started by the receive loop (kick)
                flight, first = self._started
                self._started = None
                self._waking = False
            else:
                if self.gathers():
                    await self._gather()
                batch = self._take()
                self._waking = False
                if self.stale and batch:
                    batch = self._fresh(batch)
                if not batch:
                    continue
                flight = self._went_in(batch)
                first = self._start(flight)
            if self.queued:
                self._wake_one()  # more ops waiting that may go in beside this batch
            try:
                ok = await self._commit([tx.op for tx in flight.batch], first)
            finally:
                if not flight.answered:
                    self._out_of_database(flight)
            if not flight.answered:  # failed, or committed on the retry
                self.on_done(flight.batch, ok)

    def _fresh(self, batch: list[Q]) -> list[Q]:
        # Every op is checked: a retried pick goes to the back with its first time.
        limit = time.monotonic() - self.stale
        fresh = [tx for tx in batch if tx.born >= limit]
        if len(fresh) < len(batch) and self.on_stale is not None:
            self.on_stale([tx for tx in batch if tx.born < limit])
        return fresh

    async def _commit(self, ops: list[Any], first: Unit[bool] | None = None) -> bool:
        """True when the batch is committed; False: nothing of it is, and no op is Acked.
        ``first``: its first attempt, started already."""
        for attempt in (1, 2):
            try:
                if first is not None:
                    attempt_unit, first = first, None  # a retry starts anew
                    refused = await attempt_unit.result()
                else:
                    refused = await self._sessions.run(  # type: ignore[union-attr]  # open() set it
                        self._commit_fn, ops, self._trusting())
                if refused:
                    self._careful_until = time.monotonic() + CAREFUL_SECONDS
                return True
            except _RETRYABLE as error:
                log.info("lease batch of %d hit %s (attempt %d)", len(ops),
                         error.__class__.__name__, attempt)
                for op in ops:
                    op.reset()
            except Exception as error:
                if is_connection_loss(error):
                    pass  # expected (a restart, a failover): the Database's outage logged it
                elif isinstance(error, (asyncpg.PostgresError, asyncpg.InterfaceError)):
                    self._log.warning(error.__class__.__name__, "lease batch of %d failed: %s: %s",
                                      len(ops), error.__class__.__name__, error)
                else:
                    # A bug must cost this batch its answers, not the server its life.
                    self._log.exception("bug", "lease batch of %d failed", len(ops))
                break
        for op in ops:
            op.reset()
        return False
