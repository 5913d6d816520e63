"""What the machine did during a run besides the work measured: the host's steal share of its
CPU time, and the share its cores sat idle.

This machine is a VM on a shared host. In slow phases the same work costs 15-100 % more CPU
and wall time, for Kea as much as for ipamd. The steal share (/proc/stat: time a virtual CPU
was ready but the host ran something else) is printed beside each run: high steal marks such
a phase. Not every slow phase shows as steal, so it is a hint, never a correction.

The idle share (both cores together) beside the load generator's wait for a core
(dhcp_figures.ClientMeter) tells a machine that was full from one whose processes queued on
one core while the other idled.
"""

from __future__ import annotations

from pathlib import Path

_STAT = Path("/proc/stat")


def _cpu_jiffies(stat: Path) -> tuple[int, int, int] | None:
    """(steal, idle, total) jiffies of all CPUs so far; None where /proc/stat has no steal."""
    try:
        first = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 9:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
    values = [int(v) for v in first[1:9]]
    return values[7], values[3], sum(values)


class MachineMeter:
    """``start()``, then ``steal_percent()`` and ``idle_percent()``: the shares of all CPU
    time between the two that the host took and that the cores sat idle."""

    def __init__(self, stat: Path = _STAT) -> None:
        self._stat = stat
        self._at: tuple[int, int, int] | None = None
        self._until: tuple[int, int, int] | None = None

    def start(self) -> MachineMeter:
        self._at = _cpu_jiffies(self._stat)
        self._until = None
        return self

    def stop(self) -> MachineMeter:
        """End the span (else each share is read up to the moment it is asked for)."""
        self._until = _cpu_jiffies(self._stat)
        return self

    def _share(self, index: int) -> float | None:
        now = self._until or _cpu_jiffies(self._stat)
        if self._at is None or now is None or now[2] <= self._at[2]:
            return None
        return round(100 * (now[index] - self._at[index]) / (now[2] - self._at[2]), 1)

    def steal_percent(self) -> float | None:
        return self._share(0)

    def idle_percent(self) -> float | None:
        return self._share(1)
