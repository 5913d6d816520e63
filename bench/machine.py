"""What the host took from this machine during a run: the steal share of its CPU time.

This machine is a VM on a shared host. In slow phases the same work costs 15-100 % more CPU
and wall time, for Kea as much as for ipamd. The steal share (/proc/stat: time a virtual CPU
was ready but the host ran something else) is printed beside each run: high steal marks such
a phase. Not every slow phase shows as steal, so it is a hint, never a correction.
"""

from __future__ import annotations

from pathlib import Path

_STAT = Path("/proc/stat")


def _cpu_jiffies(stat: Path) -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs so far; None where /proc/stat has no steal."""
    try:
        first = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 9:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
    values = [int(v) for v in first[1:9]]
    return values[7], sum(values)


class StealMeter:
    """``start()`` then ``percent()``: the steal share of all CPU time between the two."""

    def __init__(self, stat: Path = _STAT) -> None:
        self._stat = stat
        self._at: tuple[int, int] | None = None

    def start(self) -> StealMeter:
        self._at = _cpu_jiffies(self._stat)
        return self

    def percent(self) -> float | None:
        now = _cpu_jiffies(self._stat)
        if self._at is None or now is None or now[1] <= self._at[1]:
            return None
        return round(100 * (now[0] - self._at[0]) / (now[1] - self._at[1]), 1)
