"""Sliding-window rate limits per client IP; loopback is never limited (docs/security.md,
"Rate limits")."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 60.0


class SlidingWindow:
    """At most ``limit`` events per client in any 60 s window.

    Keeps one timestamp per accepted event, so memory is bounded by limit times clients;
    idle clients are swept out.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._last_sweep = clock()

    def hit(self, client: str, limit: int) -> float | None:
        """Record one event; returns None when allowed, else seconds until one is."""
        now = self._clock()
        horizon = now - WINDOW_SECONDS
        events = self._events.setdefault(client, deque())
        while events and events[0] <= horizon:
            events.popleft()
        if len(events) >= limit:
            return max(events[0] - horizon, 0.001)
        events.append(now)
        self._sweep(now)
        return None

    def _sweep(self, now: float) -> None:
        if now - self._last_sweep < WINDOW_SECONDS:
            return
        self._last_sweep = now
        horizon = now - WINDOW_SECONDS
        for client in [c for c, ev in self._events.items() if not ev or ev[-1] <= horizon]:
            del self._events[client]


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
