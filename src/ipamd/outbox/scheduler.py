"""The outbox service: wake on NOTIFY (or poll), claim due rows, deliver, record outcomes.

    LISTEN ipamd_outbox ─┐
    poll interval ───────┴─> claimer ──jobs──> workers (HTTP, no transaction) ──outcomes──>
                             (SKIP LOCKED,                                     recorder
                              in batches)                                      (batched)

A claim holds a row for claim_timeout_seconds; if this process dies the row comes back and
another worker or node delivers it (at least once). On a clean stop the claims of unfinished
jobs are handed back at once. The DHCP path never waits on any of this: it only inserts
event rows, and the fan-out trigger adds the delivery rows in the same statement batch.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Collection

import asyncpg
import trio

from ipamd.config import OutboxConfig
from ipamd.core.histogram import Histogram
from ipamd.db.outage import DB_ERRORS, Throttle, is_connection_loss, log_failure
from ipamd.outbox import alert_delivery, queue
from ipamd.outbox import client as http_client
from ipamd.outbox.alert_delivery import AlertDeliverer
from ipamd.outbox.attempt import Attempt
from ipamd.outbox.backoff import Backoff
from ipamd.outbox.gate import Gate
from ipamd.outbox.queue import Job, Outcome
from ipamd.outbox.urlguard import Resolver
from ipamd.outbox.webhook_delivery import WebhookDeliverer
from ipamd.state import AppState

log = logging.getLogger("ipamd.outbox")

Handler = Callable[[Job], Awaitable[Outcome]]

CLAIM_BATCH_MAX = 100
RECORD_BATCH_MAX = 500
RECORD_TRIES = 5
RECORD_LINGER_SECONDS = 0.05
PURGE_INTERVAL_SECONDS = 3600.0
SHUTDOWN_GRACE_SECONDS = 2.0
LISTEN_RETRY_SECONDS = 0.5


def node_name(state: AppState) -> str:
    return f"{state.config.node_name or socket.gethostname()}:{os.getpid()}"


async def _release_claims(conn: asyncpg.Connection, ids: list[uuid.UUID],
                          claims: list[uuid.UUID]) -> int:
    # A clean stop: the attempt never finished, so it does not count.
    result = await conn.execute(
        """UPDATE outbox o SET claim = NULL, claimed_by = NULL, next_attempt_at = now(),
               attempts = greatest(o.attempts - 1, 0), updated_at = now()
           FROM unnest($1::uuid[], $2::uuid[]) AS r(id, claim)
           WHERE o.id = r.id AND o.claim = r.claim""",
        ids, claims,
    )
    return int(result.split()[-1])


def prefetch_factor(config: OutboxConfig) -> int:
    """Jobs claimed per worker: at most 4, and 1 when the claim timeout leaves no room."""
    rounds = int(config.claim_timeout_seconds // config.request_timeout_seconds) - 1
    return max(1, min(4, rounds))


# Before a claim that finds too few rows: make more rows of staged changes (the asyncio-side
# unit, in the claim's transaction) and say how many; the argument is how many staged
# entries it may take. DNS stages its lease changes so (dns/delivery.py).
Stage = Callable[[asyncpg.Connection, int], Awaitable[int]]
STAGE_MAX = 20  # staged entries (each a DHCP commit batch of changes) per claim when idle


class Scheduler:
    def __init__(self, state: AppState, handlers: dict[str, Handler],
                 gate: Gate | None = None, stage: Stage | None = None) -> None:
        self.state = state
        self.gate = gate
        self.stage = stage
        self.config = state.config.outbox
        self.handlers = handlers
        self.kinds = sorted(handlers)
        self.node = node_name(state)
        self.backoff = Backoff.from_config(self.config)
        self._db_log = Throttle(log)
        # Claimed jobs in this process (running or waiting for a worker): a few per worker,
        # so claims come in batches under load instead of one row per freed worker. Bounded
        # so a claimed job still starts well within the claim timeout when every request
        # ahead of it runs to its full timeout.
        self.capacity = self.config.workers * prefetch_factor(self.config)
        self.free = self.capacity
        self._freed = trio.Event()
        self._kick_send, self._kick_recv = trio.open_memory_channel[None](1)
        self._jobs_send, self._jobs_recv = trio.open_memory_channel[Job](self.capacity)
        self._done_send, self._done_recv = trio.open_memory_channel[Outcome](math.inf)
        self.in_flight: dict[uuid.UUID, Job] = {}
        self.latency = state.counters.outbox.latency
        self.counters = state.counters.outbox.outcomes

    def kick(self) -> None:
        """Ask the claimer to look for due rows now (coalesced: one pending kick at most)."""
        with contextlib.suppress(trio.WouldBlock):
            self._kick_send.send_nowait(None)

    async def listen(self) -> None:
        """LISTEN for new rows; after a lost connection (restart, failover) LISTEN again on
        whichever server is the primary now, and look once: what was notified meanwhile
        was not heard. A lost listener never stops the scheduler (the poll goes on)."""
        while True:
            try:
                notifications = await self.state.db.listen(queue.CHANNEL)
                try:
                    self.kick()
                    async for payload in notifications:
                        # The payload is the new rows' kind: rows another process
                        # delivers (dns, in its child) are no reason to claim here.
                        if payload in self.kinds or payload not in queue.KINDS:
                            self.kick()
                finally:
                    with trio.CancelScope(shield=True), trio.move_on_after(
                            SHUTDOWN_GRACE_SECONDS):
                        await notifications.release()
            except DB_ERRORS as error:
                log_failure(self._db_log, error, "outbox listener lost (%s); retrying",
                            error.__class__.__name__)
            await trio.sleep(LISTEN_RETRY_SECONDS)

    async def claimer(self) -> None:
        while True:
            with trio.move_on_after(self.config.poll_interval_seconds):
                await self._kick_recv.receive()
            if self.gate is not None:
                await self.gate.after_wake()
            try:
                await self.claim_until_dry()
            except DB_ERRORS as error:
                # No primary right now: nothing was claimed. Look again soon rather than a
                # whole poll interval later, so deliveries resume promptly once it is back.
                log_failure(self._db_log, error, "outbox claim failed (%s); retrying",
                            error.__class__.__name__)
                await trio.sleep(LISTEN_RETRY_SECONDS)
                self.kick()

    async def claim_until_dry(self) -> None:
        want = 1  # idle: claim as soon as one job fits, for latency
        while True:
            while self.free < want:
                await self._freed.wait()
            allowed = None if self.gate is None else await self.gate.allowance()
            taken = min(self.free, CLAIM_BATCH_MAX, allowed or CLAIM_BATCH_MAX)
            self.free -= taken
            try:
                jobs = await self.state.db.transaction(self._claim, taken, allowed is not None)
            except BaseException:
                self.free += taken
                raise
            self.free += taken - len(jobs)
            self.counters["claimed"] += len(jobs)
            for job in jobs:
                self.in_flight[job.id] = job
                self._jobs_send.send_nowait(job)  # the buffer holds the whole capacity
            if len(jobs) < taken:
                return
            # More is waiting: let half the capacity free up, then claim it in one go.
            want = max(1, self.capacity // 2)

    async def _claim(self, conn: asyncpg.Connection, limit: int, busy: bool) -> list[Job]:
        """(asyncio side, one transaction) Claim; when too few rows are due, stage more."""
        timeout = self.config.claim_timeout_seconds
        jobs = await queue.claim(conn, self.kinds, limit, timeout, self.node)
        if len(jobs) < limit and self.stage is not None and await self.stage(
                conn, 1 if busy else STAGE_MAX):
            jobs += await queue.claim(conn, self.kinds, limit - len(jobs), timeout, self.node)
        return jobs

    def _release_slot(self) -> None:
        self.free += 1
        self._freed.set()
        self._freed = trio.Event()

    async def worker(self) -> None:
        async for job in self._jobs_recv:
            try:
                outcome = await self.handle(job)
                self._done_send.send_nowait(outcome)
            finally:
                self._release_slot()

    async def handle(self, job: Job) -> Outcome:
        handler = self.handlers[job.kind]
        try:
            return await handler(job)
        except Exception as error:
            # A bug in one delivery must not stop the others: the row is retried. A lost
            # database is no bug: the Database's Outage says so once for everyone.
            if not is_connection_loss(error):
                log.exception("outbox %s delivery %s failed unexpectedly", job.kind, job.id)
            return Attempt(job, self.backoff).retry(f"internal error: {type(error).__name__}")

    async def recorder(self) -> None:
        while True:
            batch = [await self._done_recv.receive()]
            # When busy, linger briefly so the queue is recorded in a few large transactions
            # rather than one per delivery (the receivers already have their requests).
            # When nothing else is in flight, record at once.
            linger = RECORD_LINGER_SECONDS if self.free < self.capacity else 0
            with trio.move_on_after(linger):
                while len(batch) < self.capacity // 2:
                    batch.append(await self._done_recv.receive())
            while len(batch) < RECORD_BATCH_MAX:
                try:
                    batch.append(self._done_recv.receive_nowait())
                except trio.WouldBlock:
                    break
            await self.record(batch, tries=None)

    async def record(self, batch: list[Outcome], tries: int | None = RECORD_TRIES) -> None:
        """Record outcomes, retrying ``tries`` times (None: until it works — the recorder,
        which must not die with a lost database and would otherwise deliver again)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                states = await self.state.db.transaction(
                    queue.record_outcomes, batch, self.config.max_attempts, self.node
                )
                break
            except DB_ERRORS as error:
                # Unrecorded outcomes are not lost work: their rows come back after the
                # claim timeout and are delivered again (at least once).
                if tries is not None and attempt >= tries:
                    raise
                log_failure(self._db_log, error, "outbox could not record %d outcomes (%s); "
                            "retrying", len(batch), error)
                await trio.sleep(0.5)
        for outcome in batch:
            job = self.in_flight.pop(outcome.job_id, None)
            if job is not None:  # delivery latency by kind, for the metrics
                self.latency.setdefault(job.kind, Histogram()).observe(outcome.duration_ms / 1e3)
            state = states.get(outcome.job_id)
            if state is None:
                self.counters["stale"] += 1  # another worker took the row over meanwhile
                continue
            self.counters[state] += 1
            if state == "failed":
                log.warning("outbox row %s failed for good: %s", outcome.job_id, outcome.error)

    async def purger(self) -> None:
        while True:
            try:
                removed = await self.state.db.run(queue.purge, self.config.retention_days)
                if removed:
                    log.info("outbox retention removed %d rows", removed)
            except DB_ERRORS as error:
                log_failure(self._db_log, error, "outbox retention sweep failed: %s", error)
            await trio.sleep(PURGE_INTERVAL_SECONDS)

    async def wind_down(self) -> None:
        """On a clean stop: record finished outcomes, hand unfinished claims back."""
        with trio.CancelScope(shield=True), trio.move_on_after(SHUTDOWN_GRACE_SECONDS):
            done: list[Outcome] = []
            while True:
                try:
                    done.append(self._done_recv.receive_nowait())
                except trio.WouldBlock:
                    break
            try:
                if done:
                    await self.record(done)
                if self.in_flight:
                    jobs = list(self.in_flight.values())
                    await self.state.db.run(
                        _release_claims, [j.id for j in jobs], [j.claim for j in jobs]
                    )
            except Exception as error:  # the rows come back after the claim timeout anyway
                log.warning("outbox could not hand back its claims: %s", error)


# Handlers of kinds delivered by other rooms (dns): given the state, the shared HTTP client
# and the backoff, they return {kind: handler}. The runtime passes them in, so the outbox
# never imports the rooms that deliver through it.
ExtraHandlers = Callable[[AppState, http_client.Client, Backoff], dict[str, Handler]]


def build_handlers(
    state: AppState, client: http_client.Client, extra: ExtraHandlers | None = None
) -> dict[str, Handler]:
    """Delivery handler per row kind: rows of kinds without a handler are never claimed."""
    config = state.config.outbox
    webhooks = WebhookDeliverer(client, config, Backoff.from_config(config))
    alerts = AlertDeliverer(  # alert destinations (docs/operations-monitoring.md)
        client, config, Backoff.from_config(config),
        functools.partial(state.db.run, alert_delivery.fetch_destination),
        Resolver(config.hosts_file))
    handlers: dict[str, Handler] = {"webhook": webhooks.deliver, "alert": alerts.deliver}
    if extra is not None:
        handlers.update(extra(state, client, Backoff.from_config(config)))
    return handlers


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None],
    extra_handlers: ExtraHandlers | None = None,
    kinds: Collection[str] | None = None,
    purge: bool = True,
    gate: Gate | None = None,
    stage: Stage | None = None,
) -> None:
    """The scheduler for the row ``kinds`` given (default: every kind with a handler); one
    process per appliance runs with ``purge`` (retention covers every kind)."""
    config = state.config.outbox
    # One client for the scheduler's life: one SSLContext, one keep-alive pool, one
    # connection per worker at most.
    client = http_client.Client(
        Resolver(config.hosts_file), http_client.ssl_context(config.ca_file),
        connections=config.workers, timeout=config.request_timeout_seconds,
    )
    async with client:
        handlers = build_handlers(state, client, extra_handlers)
        if kinds is not None:
            handlers = {kind: handlers[kind] for kind in kinds}
        scheduler = Scheduler(state, handlers, gate, stage)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(scheduler.listen)
                nursery.start_soon(scheduler.recorder)
                for _ in range(config.workers):
                    nursery.start_soon(scheduler.worker)
                if purge:
                    nursery.start_soon(scheduler.purger)
                nursery.start_soon(scheduler.claimer)
                scheduler.kick()  # rows that became due while no scheduler ran
                log.info("outbox scheduler %s ready with %d workers for %s", scheduler.node,
                         config.workers, ", ".join(scheduler.kinds))
                task_status.started()
        finally:
            await scheduler.wind_down()
