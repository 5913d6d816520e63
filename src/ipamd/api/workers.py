"""The API served by worker processes (runtime.api_in_main_process): what they share.

One Python process gives the API about one core. With more workers, each a child process of
the runtime (child.py) serving the same listening sockets, what the API shares across
requests stays in one place:

- the database holds the tokens (each worker's token cache follows their NOTIFY), the
  loopback bootstrap's "is there a token yet" and the Idempotency-Keys;
- the main process holds the per-client-IP rate limits (one sliding window for the node:
  a client gets its limit, not one per worker), the DHCP server (``state.dhcp`` in a worker
  is ``MainDhcp``, which forwards to it) and the metrics (a worker's /metrics is rendered by
  the main process, with every worker's request latency).

The worker's side: ``MainLimits``, ``MainDhcp``, ``apply_push``. The main process's side:
``answer`` (a worker's calls) and ``push`` (what every worker is sent each second).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

from ipamd.api.ratelimit import SlidingWindow
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
    the main process per request (issue 48: a flood of refused requests)."""

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
        wait = await self.main.call("rate_limit", {"client": client, "limit": limit})
        if wait is None:
            return None
        if len(self.refused_until) >= MAX_REMEMBERED:
            self.refused_until = {c: t for c, t in self.refused_until.items() if t > now}
        if len(self.refused_until) < MAX_REMEMBERED:
            self.refused_until[client] = now + float(wait)
        return float(wait)


class MainDhcp:
    """The main process's DHCP server, as a worker sees it (a DhcpControl): calls go there,
    figures are the ones it pushed last (at most PUSH_SECONDS old)."""

    def __init__(self, main: MainProcess, pushed: dict[str, Any]) -> None:
        self.main = main
        self.pushed = pushed

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [(str(host), int(port)) for host, port in self.pushed.get("addresses", [])]

    def forget(self, ended: Iterable[tuple[uuid.UUID, uuid.UUID, str | None]]) -> None:
        self.main.tell("dhcp_forget", [[str(lease), str(subnet), event]
                                       for lease, subnet, event in ended])

    async def reload_plan(self) -> None:
        await self.main.call("dhcp_reload_plan")

    def saturated_seconds(self) -> float:
        return float(self.pushed.get("saturated_seconds", 0.0))

    def receiving_seconds(self) -> float:
        return float(self.pushed.get("receiving_seconds", 0.0))

    def counters_snapshot(self) -> dict[str, Any]:
        return dict(self.pushed.get("counters") or {})


# ------------------------------------------------------------------ the worker's side


def apply_push(state: AppState, main: MainProcess, value: Any) -> None:
    """Take what the main process pushed: its start time and its DHCP server's figures."""
    if not isinstance(value, dict):
        return
    if isinstance(value.get("started_at"), (int, float)):
        state.started_at = float(value["started_at"])
    # With DHCP enabled the worker always forwards: the server may start (or restart) in
    # the main process after this push, and the main process knows whether it runs now.
    dhcp = value.get("dhcp")
    figures = dhcp if isinstance(dhcp, dict) else {}
    if not state.config.dhcp.enabled:
        state.dhcp = None
    elif isinstance(state.dhcp, MainDhcp):
        state.dhcp.pushed = figures
    else:
        state.dhcp = MainDhcp(main, figures)


# ------------------------------------------------------------------ the main process's side


def push(state: AppState) -> dict[str, Any]:
    """What every worker is sent at its start and every PUSH_SECONDS."""
    dhcp = state.dhcp
    return {"started_at": state.started_at,
            "dhcp": None if dhcp is None else {
                "addresses": [list(a) for a in dhcp.addresses],
                "saturated_seconds": dhcp.saturated_seconds(),
                "receiving_seconds": dhcp.receiving_seconds(),
                "counters": dhcp.counters_snapshot()}}


def _ended(args: Any) -> list[tuple[uuid.UUID, uuid.UUID, str | None]]:
    return [(uuid.UUID(lease), uuid.UUID(subnet), None if event is None else str(event))
            for lease, subnet, event in args]


async def answer(state: AppState, limits: LocalLimits, worker: str, call: str,
                 args: Any) -> Any:
    """A worker's call, answered in the main process."""
    if call == "rate_limit":
        return await limits.hit(str(args["client"]), int(args["limit"]))
    if call == "dhcp_forget":
        for server in (state.dhcp, state.dhcp6):  # one lease table: either may hold it
            if server is not None:
                server.forget(_ended(args))
        return None
    if call == "dhcp_reload_plan":
        if state.dhcp is not None:
            await state.dhcp.reload_plan()
        return None
    if call == "dhcp_counters":  # the dashboard's figures as they are now
        return None if state.dhcp is None else state.dhcp.counters_snapshot()
    if call == "metrics":
        return await _metrics(state, worker, args)
    raise ValueError(f"no such call: {call!r}")


async def _metrics(state: AppState, worker: str, args: Any) -> str:
    """The node's metrics: the caller's request latency as it sent it, the other workers'
    as of their last report (each second)."""
    latency = metrics.ApiLatency()
    own = state.counters.get("api_latency")
    if isinstance(own, metrics.ApiLatency):
        latency.add_report(own.report())
    for name, report in state.children.items():
        if name != worker and "api_latency" in report:
            latency.add_report(report["api_latency"])
    latency.add_report(args.get("api_latency") if isinstance(args, dict) else None)
    data = await state.db.run(metrics.gather, state.config.ops.node_down_seconds)
    return metrics.render(state, data, latency).decode()
