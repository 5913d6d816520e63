"""A fixed-bucket histogram kept in memory (plain floats, no locks: one trio thread).

The rooms that measure (dhcp, outbox, api) observe into these; ``ops.metrics`` turns them
into Prometheus histograms at scrape time, so only ops knows the exposition format.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

SECONDS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# For waits that matter below a millisecond (a DHCP Request's way to its commit at light load).
FINE_SECONDS_BUCKETS = (0.00005, 0.0001, 0.00025, *SECONDS_BUCKETS)


@dataclass
class Histogram:
    buckets: tuple[float, ...] = SECONDS_BUCKETS
    counts: list[int] = field(default_factory=list)  # per bucket, non-cumulative; last is +Inf
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """(upper bound, cumulative count) pairs ending with +Inf, as Prometheus wants them."""
        out: list[tuple[str, int]] = []
        running = 0
        for bound, n in zip((*self.buckets, float("inf")), self.counts, strict=True):
            running += n
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return out


class ApiLatency:
    """API request latency by (method, route template, status class): a bounded label set.
    ``ops.metrics`` reports it between processes and renders it."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str, str], Histogram] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, f"{status // 100}xx")
        found = self.by_key.get(key)
        if found is None:
            found = self.by_key[key] = Histogram()
        found.observe(seconds)
