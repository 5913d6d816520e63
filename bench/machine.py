"""What the machine did during a run besides the work measured: the host's steal share of its
CPU time, and the share its cores sat idle.

This machine is a VM on a shared host. In slow phases the same work costs 15-100 % more CPU
and wall time, for Kea as much as for ipamd. The steal share (/proc/stat: time a virtual CPU
was ready but the host ran something else) is printed beside each run: high steal marks such
a phase. Not every slow phase shows as steal, so it is a hint, never a correction.

The idle share (both cores together) beside the load generator's wait for a core
(dhcp_figures.ClientMeter) tells a machine that was full from one whose processes queued on
one core while the other idled.

What waking another process costs (``wake_cost``) differs from host to host far more than
the CPU's speed does, and every DORA wakes several (the client, the server, PostgreSQL's
backend): a UDP round trip between two processes on two cores and on one, printed at the
top of a bench so that runs on different hosts can be told apart.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class WakeCost:
    """A UDP round trip on loopback between two processes: its wall time and the CPU both
    spent on it (µs), with the two on different cores (``cross``) and on one (``same``)."""

    cross_rtt_us: float | None
    cross_cpu_us: float | None
    same_rtt_us: float
    same_cpu_us: float

    def line(self) -> str:
        cross = (f"{self.cross_rtt_us:.0f} µs on two cores ({self.cross_cpu_us:.0f} µs of CPU), "
                 if self.cross_rtt_us is not None else "")
        return (f"a UDP round trip between two processes {cross}"
                f"{self.same_rtt_us:.0f} µs on one ({self.same_cpu_us:.0f} µs)")


_PAYLOAD = b"w" * 64


def _round_trips(count: int, parent_cpu: int, child_cpu: int) -> tuple[float, float]:
    """(wall µs, CPU µs of both processes) a round trip: this process pinned to
    ``parent_cpu`` sends ``count`` datagrams one at a time to a forked echo pinned to
    ``child_cpu``, which reports its own CPU time at the end. Every wait is bounded."""
    ours = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    theirs = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    affinity = os.sched_getaffinity(0)
    try:
        ours.bind(("127.0.0.1", 0))
        theirs.bind(("127.0.0.1", 0))
        ours.settimeout(2.0)
        theirs.settimeout(2.0)
        pid = os.fork()
        if pid == 0:  # the echo: never returns into the caller's code
            code = 1
            try:
                os.sched_setaffinity(0, {child_cpu})
                for _ in range(count):
                    data, peer = theirs.recvfrom(128)
                    theirs.sendto(data, peer)
                theirs.sendto(repr(time.process_time()).encode(), ours.getsockname())
                code = 0
            finally:
                os._exit(code)
        try:
            os.sched_setaffinity(0, {parent_cpu})
            target = theirs.getsockname()
            cpu_before, started = time.thread_time(), time.perf_counter()
            for _ in range(count):
                ours.sendto(_PAYLOAD, target)
                ours.recvfrom(128)
            wall = time.perf_counter() - started
            cpu = time.thread_time() - cpu_before
            child_cpu_s = float(ours.recvfrom(128)[0])
        finally:
            os.sched_setaffinity(0, affinity)
            os.waitpid(pid, 0)
    finally:
        ours.close()
        theirs.close()
    return 1e6 * wall / count, 1e6 * (cpu + child_cpu_s) / count


def wake_cost(count: int = 5000) -> WakeCost:
    """Measure it (about a second at the default count). The echo's CPU includes its start,
    a few hundred µs in all: small beside ``count`` round trips."""
    cpus = sorted(os.sched_getaffinity(0))
    same = _round_trips(count, cpus[0], cpus[0])
    cross = _round_trips(count, cpus[0], cpus[1]) if len(cpus) > 1 else (None, None)
    return WakeCost(cross[0], cross[1], same[0], same[1])


if __name__ == "__main__":
    print(wake_cost().line())
