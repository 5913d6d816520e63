"""The API served by worker processes (runtime.api_in_main_process): what they share.

One Python process gives the API about one core. With more workers, each a child process of
the runtime (ipamd/child) serving the same listening sockets, what the API shares across
requests stays in one place:

- the database holds the tokens (each worker's token cache follows their NOTIFY), the
  loopback bootstrap's "is there a token yet" and the Idempotency-Keys;
- the main process holds the per-client-IP rate limits (one sliding window for the node:
  a client gets its limit, not one per worker), the DHCP server (``state.dhcp`` in a worker
  is ``MainDhcp``, which forwards to it) and the metrics (a worker's /metrics is rendered by
  the main process, with every worker's request latency).

The worker's side: ``MainLimits``, ``MainDhcp``, ``apply_push``. The main process's side:
``Answers`` (a worker's calls, typed requests of ipamd/messages.py) and ``push`` (what every
worker is sent each second).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from pydantic import JsonValue

from ipamd.api.ratelimit import SlidingWindow
from ipamd.core.histogram import ApiLatency
from ipamd.messages import (
    DhcpCounters,
    DhcpFigures,
    DhcpForget,
    DhcpReloadPlan,
    EndedLease,
    Message,
    Push,
    RateLimit,
    RenderMetrics,
    Request,
)
from ipamd.ops import metrics
from ipamd.state import AppState, MainProcess

# Refusals a worker remembers (MainLimits), one per client and limit: a bound on its memory.
MAX_REMEMBERED = 10_000


class Limiter(Protocol):
    async def hit(self, client: str, limit: int) -> float | None:
        """Record one request of ``client``; None when allowed, else seconds until one is."""
        ...


class LocalLimits:
    """The limits of the process that owns them (api.workers = 1, or the main process)."""

    def __init__(self, window: SlidingWindow | None = None) -> None:
        self.window = window or SlidingWindow()

    async def hit(self, client: str, limit: int) -> float | None:
        return self.window.hit(client, limit)


class MainLimits:
    """A worker's limits: the main process's window, one for every worker.

    A refusal is remembered until it ends: a window that is full stays full until its oldest
    request leaves it (refused requests are not counted, and no worker can add one), so a
    client refused for ``wait`` seconds is refused here meanwhile without a round trip to
    the main process per request (a flood of refused requests costs the main process nothing)."""

    def __init__(self, main: MainProcess) -> None:
        self.main = main
        self.refused_until: dict[str, float] = {}

    async def hit(self, client: str, limit: int) -> float | None:
        now = time.monotonic()
        until = self.refused_until.get(client)
        if until is not None:
            if now < until:
                return until - now
            del self.refused_until[client]
        wait = await self.main.call(RateLimit(client=client, limit=limit))
        if not isinstance(wait, (int, float)):  # None: allowed
            return None
        if len(self.refused_until) >= MAX_REMEMBERED:
            self.refused_until = {c: t for c, t in self.refused_until.items() if t > now}
        if len(self.refused_until) < MAX_REMEMBERED:
            self.refused_until[client] = now + float(wait)
        return float(wait)


class MainDhcp:
    """The main process's DHCP server, as a worker sees it (a DhcpControl): calls go there,
    figures are the ones it pushed last (at most PUSH_SECONDS old)."""

    def __init__(self, main: MainProcess, pushed: DhcpFigures | None) -> None:
        self.main = main
        self.pushed = pushed

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [] if self.pushed is None else list(self.pushed.addresses)

    def forget(self, ended: Iterable[tuple[uuid.UUID, uuid.UUID, str | None]]) -> None:
        self.main.tell(DhcpForget(ended=[
            EndedLease(lease_id=lease, subnet_id=subnet, event=event)
            for lease, subnet, event in ended]))

    async def reload_plan(self) -> None:
        await self.main.call(DhcpReloadPlan())

    def saturated_seconds(self) -> float:
        return 0.0 if self.pushed is None else self.pushed.saturated_seconds

    def receiving_seconds(self) -> float:
        return 0.0 if self.pushed is None else self.pushed.receiving_seconds

    def lease_changes(self) -> int:
        return 0  # (only the main process's storm signals ask; a worker has none)

    def counters_snapshot(self) -> dict[str, Any]:
        return {} if self.pushed is None else dict(self.pushed.counters)


# ------------------------------------------------------------------ the worker's side


def apply_push(state: AppState, main: MainProcess, push: Push) -> None:
    """Take what the main process pushed: its start time and its DHCP server's figures."""
    state.started_at = push.started_at
    # With DHCP enabled the worker always forwards: the server may start (or restart) in
    # the main process after this push, and the main process knows whether it runs now.
    if not state.config.dhcp.enabled:
        state.dhcp = None
    elif isinstance(state.dhcp, MainDhcp):
        state.dhcp.pushed = push.dhcp
    else:
        state.dhcp = MainDhcp(main, push.dhcp)


# ------------------------------------------------------------------ the main process's side


def push(state: AppState) -> Push:
    """What every worker is sent at its start and every PUSH_SECONDS."""
    dhcp = state.dhcp
    return Push(started_at=state.started_at, dhcp=None if dhcp is None else DhcpFigures(
        addresses=dhcp.addresses, saturated_seconds=dhcp.saturated_seconds(),
        receiving_seconds=dhcp.receiving_seconds(), counters=dhcp.counters_snapshot()))


class Answers:
    """The main process's answers to its workers' calls: one handler per request type."""

    def __init__(self, state: AppState, limits: LocalLimits) -> None:
        self.state, self.limits = state, limits
        self._handlers: dict[type[Message], Callable[[str, Any], Awaitable[JsonValue]]] = {
            RateLimit: self._rate_limit, DhcpForget: self._forget,
            DhcpReloadPlan: self._reload_plan, DhcpCounters: self._counters,
            RenderMetrics: self._metrics}

    async def __call__(self, worker: str, request: Request) -> JsonValue:
        return await self._handlers[type(request)](worker, request)

    async def _rate_limit(self, worker: str, request: RateLimit) -> JsonValue:
        return await self.limits.hit(request.client, request.limit)

    async def _forget(self, worker: str, request: DhcpForget) -> JsonValue:
        ended = [(e.lease_id, e.subnet_id, e.event) for e in request.ended]
        for server in (self.state.dhcp, self.state.dhcp6):  # one lease table: either may hold it
            if server is not None:
                server.forget(ended)
        return None

    async def _reload_plan(self, worker: str, request: DhcpReloadPlan) -> JsonValue:
        if self.state.dhcp is not None:
            await self.state.dhcp.reload_plan()
        return None

    async def _counters(self, worker: str, request: DhcpCounters) -> JsonValue:
        """The dashboard's figures as they are now."""
        return None if self.state.dhcp is None else self.state.dhcp.counters_snapshot()

    async def _metrics(self, worker: str, request: RenderMetrics) -> JsonValue:
        """The node's metrics: the caller's request latency as it sent it, the other
        workers' as of their last report (each second)."""
        state = self.state
        latency = ApiLatency()
        metrics.add_latency_report(latency, metrics.latency_report(state.counters.api_latency))
        for name, report in state.children.items():
            if name != worker:
                metrics.add_latency_report(latency, report.api_latency)
        metrics.add_latency_report(latency, request.api_latency)
        data = await state.db.run(metrics.gather, state.config.ops.node_down_seconds)
        return metrics.render(state, data, latency).decode()
