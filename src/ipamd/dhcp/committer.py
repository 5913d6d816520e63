"""Group commit: concurrent DHCP transactions share one database transaction.

Packets hand their ``Op`` to ``submit`` (no task, no channel: a list append). A few
worker tasks each take what has queued up — waiting a short window (a few hundred µs)
unless ``batch_max`` is already there — and commit the lot with one crossing into
asyncio (``allocator.commit``: one set statement per kind of change). Only after that
commit are the waiters' replies built and sent, so an Ack is never ahead of its lease.
With several workers, one batch is being built while another is in the database.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import asyncpg
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import allocator
from ipamd.dhcp.context import Tx

log = logging.getLogger("ipamd.dhcp.commit")

# Worth one more try: another transaction (another node) crossed ours.
_RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError)


class Committer:
    def __init__(
        self,
        db: Database,
        on_done: Callable[[Sequence[Tx], bool], None],
        *,
        batch_max: int,
        window_seconds: float,
        workers: int,
    ) -> None:
        self.db = db
        self.on_done = on_done
        self.batch_max = batch_max
        self.window = window_seconds
        self.workers = workers
        self.busy_seconds = 0.0  # time batches spent in the database (commit included)
        self._queue: list[Tx] = []
        self._lot = trio.lowlevel.ParkingLot()

    def submit(self, tx: Tx) -> None:
        self._queue.append(tx)
        if self._lot.statistics().tasks_waiting:
            self._lot.unpark()

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(self.workers):
                nursery.start_soon(self._worker)
            task_status.started()

    async def _worker(self) -> None:
        queue = self._queue
        while True:
            while not queue:
                await self._lot.park()
            if self.window and len(queue) < self.batch_max:
                await trio.sleep(self.window)
            batch = queue[: self.batch_max]
            del queue[: self.batch_max]
            if not batch:
                continue
            if queue and self._lot.statistics().tasks_waiting:
                self._lot.unpark()  # more than one batch waiting: let another worker start
            started = time.perf_counter()
            ok = await self._commit([tx.op for tx in batch])  # type: ignore[misc]
            self.busy_seconds += time.perf_counter() - started
            self.on_done(batch, ok)

    async def _commit(self, ops: list[allocator.Op]) -> bool:
        for attempt in (1, 2):
            try:
                await self.db.run(allocator.commit, ops)
                return True
            except _RETRYABLE as error:
                log.info("lease batch of %d hit %s (attempt %d)", len(ops),
                         error.__class__.__name__, attempt)
                for op in ops:
                    op.reset()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                log.warning("lease batch of %d failed: %s: %s", len(ops),
                            error.__class__.__name__, error)
                break
            except Exception:
                # A bug must cost this batch its answers, not the server its life.
                log.exception("lease batch of %d failed", len(ops))
                break
        for op in ops:
            op.reset()
        return False
