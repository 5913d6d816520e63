"""Figures of the DHCP benches (DHCPv4 and DHCPv6): perfdhcp's final report read, and what
perfdhcp does not print: DORA and SARR latency percentiles (from its per-exchange timestamps,
``-x t``), the CPU a server spent, and how perfdhcp itself fared on the shared cores (from
/proc).

Pure functions over perfdhcp's text and /proc, so the bench and its unit test share them.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from bench.machine import MachineMeter

_SECTION = re.compile(r"\*\*\*Statistics for: (\S+)\*\*\*")


def parse_perfdhcp(text: str) -> dict[str, Any]:
    """The figures of perfdhcp's final report: rate, and per exchange (``DISCOVER-OFFER``,
    ``REQUEST-ACK``; ``SOLICIT-ADVERTISE``, ``REQUEST-REPLY``) sent/received/drops/rejected
    leases/delay."""
    out: dict[str, Any] = {}
    rate = re.search(r"Rate: ([\d.]+) 4-way exchanges/second", text)
    out["rate"] = float(rate[1]) if rate else None
    pieces = _SECTION.split(text)
    for name, body in zip(pieces[1::2], pieces[2::2], strict=True):
        def num(label: str, body: str = body) -> float | None:
            found = re.search(rf"^{label}: ([\d.]+)", body, re.MULTILINE)
            return float(found[1]) if found else None

        out[name] = {
            "sent": int(num("sent packets") or 0),
            "received": int(num("received packets") or 0),
            "drops": int(num("drops") or 0),
            # answers perfdhcp refused: no address granted (e.g. NoAddrsAvail in a Reply)
            "rejected": int(num("rejected leases") or 0),
            "avg_ms": num("avg delay"),
            "max_ms": num("max delay"),
        }
    return out


_STAMPS = re.compile(r"\*\*\*Timestamps for packets: (\S+)\*\*\*\n((?:sent / received: .*\n?)*)")
_PAIR = re.compile(r"sent / received: ([\d.]+) / ([\d.]+)")


def exchange_stamps(text: str) -> dict[str, list[tuple[float, float]]]:
    """perfdhcp ``-x t``: (sent, received) in seconds for every completed exchange, by kind
    (``DISCOVER-OFFER``, ``REQUEST-ACK``; DHCPv6: ``SOLICIT-ADVERTISE``, ``REQUEST-REPLY``)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for kind, body in _STAMPS.findall(text):
        out[kind] = [(float(s), float(r)) for s, r in _PAIR.findall(body)]
    return out


def dora_latencies(text: str) -> list[float]:
    """Discover→Ack latency (ms) of every completed DORA (``four_way_latencies``)."""
    return four_way_latencies(text, "DISCOVER-OFFER", "REQUEST-ACK")


def four_way_latencies(text: str, first: str, second: str) -> list[float]:
    """First send → last answer latency (ms) of every completed four-way exchange: DORA
    (``DISCOVER-OFFER`` then ``REQUEST-ACK``) or SARR (``SOLICIT-ADVERTISE`` then
    ``REQUEST-REPLY``).

    perfdhcp does not say which Offer a Request answers, but it sends the Request as it reads
    the Offer (same loop, tens of µs later; ``-g single``), so each Request belongs to the
    latest Offer read at or before it was sent that no earlier Request took. Offers whose
    Request got no Ack take none, so they drop out. (Advertise and Reply alike.)
    """
    stamps = exchange_stamps(text)
    offers = sorted(stamps.get(first, []), key=lambda p: p[1])
    requests = sorted(stamps.get(second, []))
    received = [r for _, r in offers]
    taken = [False] * len(offers)
    out = []
    for sent, acked in requests:
        i = bisect.bisect_right(received, sent) - 1
        while i >= 0 and taken[i]:
            i -= 1
        if i < 0:
            continue
        taken[i] = True
        out.append((acked - offers[i][0]) * 1000)
    return out


def late_offer_spans(offers: list[tuple[float, float]], late_ms: float = 10.0,
                     step: float = 0.1) -> list[tuple[float, float, float]]:
    """Stretches of a run in which Offers came back late: (from, to, worst ms), in seconds
    since perfdhcp began, by when the Discover was sent.

    Both servers answer a Discover from memory, without waiting for a commit, so an Offer
    ``late_ms`` late means the answering loop, the client or the machine stalled then.
    The run is cut into ``step`` long slices; slices with a late Offer that touch are one
    stretch. It places a run's lost answers in time: a stretch of a few hundred ms amid a
    quiet run, or late Offers throughout it.
    """
    worst: dict[int, float] = {}
    for sent, received in offers:
        late = (received - sent) * 1000
        if late > late_ms:
            k = int(sent / step)
            worst[k] = max(worst.get(k, 0.0), late)
    spans: list[tuple[float, float, float]] = []
    for k in sorted(worst):
        start, end = k * step, (k + 1) * step
        if spans and math.isclose(spans[-1][1], start):
            first, _, top = spans[-1]
            spans[-1] = (first, end, max(top, worst[k]))
        else:
            spans.append((start, end, worst[k]))
    return [(round(a, 3), round(b, 3), round(w, 1)) for a, b, w in spans]


def spans_text(spans: list[tuple[float, float, float]], most: int = 3) -> str:
    """``7.2-9.0 s (36 ms)`` for the longest ``most`` stretches, in time order, and how many
    shorter ones there were."""
    if not spans:
        return ""
    longest = sorted(spans, key=lambda s: s[0] - s[1])[:most]
    shown = ", ".join(f"{a:.1f}-{b:.1f} s ({w:.0f} ms)" for a, b, w in sorted(longest))
    rest = len(spans) - len(longest)
    return shown + (f" and {rest} shorter" if rest else "")


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by the nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered))))
    return ordered[rank - 1]


_TICK = os.sysconf("SC_CLK_TCK")


def server_figures(metrics: str, drops_metric: str = "ipamd_dhcp_drops_total",
                   ) -> tuple[dict[str, int], float | None]:
    """From ipamd's /metrics text: the packets it dropped by reason (nonzero only; DHCPv6's
    counter is ``ipamd_dhcp6_drops_total``), and the upper bound of its slowest group commit
    (the smallest histogram bucket holding all of them; inf when one took longer than the
    largest bucket; None without commits)."""
    pattern = re.compile(rf'^({re.escape(drops_metric)}|ipamd_dhcp_commit_duration_seconds_bucket)'
                         r'\{(?:reason|le)="([^"]+)"\} ([0-9.e+-]+)$', re.MULTILINE)
    drops: dict[str, int] = {}
    buckets: list[tuple[float, float]] = []
    for name, label, value in pattern.findall(metrics):
        if name == drops_metric:
            if float(value):
                drops[label] = int(float(value))
        else:
            buckets.append((math.inf if label == "+Inf" else float(label), float(value)))
    buckets.sort()
    total = buckets[-1][1] if buckets else 0.0
    slowest = next((le for le, count in buckets if count >= total), None) if total else None
    return drops, slowest


def commit_means(metrics: str) -> tuple[float | None, float | None]:
    """From ipamd's /metrics text, in ms: the mean wait of a group commit's oldest Request
    from its packet to the batch's statement (``ipamd_dhcp_commit_wait_seconds``), and the
    mean time a batch then spent in the database (``ipamd_dhcp_commit_duration_seconds``);
    None for a histogram with no batches (or not there)."""
    values = dict(re.findall(r"^(ipamd_dhcp_commit_(?:wait|duration)_seconds_(?:sum|count)) "
                             r"([0-9.e+-]+)$", metrics, re.MULTILINE))

    def mean(name: str) -> float | None:
        count = float(values.get(f"{name}_count", 0))
        return round(1000 * float(values[f"{name}_sum"]) / count, 3) if count else None

    return mean("ipamd_dhcp_commit_wait_seconds"), mean("ipamd_dhcp_commit_duration_seconds")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # the name may hold spaces and parentheses


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of one process, its reaped children included."""
    fields = _stat(pid)
    if fields is None:
        return None
    # After the name: state ppid ... utime(12) stime(13) cutime(14) cstime(15), 0-based.
    return sum(int(fields[k]) for k in (11, 12, 13, 14)) / _TICK


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def descendants(pid: int) -> set[int]:
    """``pid`` and every live process below it."""
    parents: dict[int, int] = {}
    for other in _all_pids():
        fields = _stat(other)
        if fields is not None:
            parents[other] = int(fields[1])
    found = {pid}
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in found and child not in found:
                found.add(child)
                grew = True
    return found


def backends_of(database: str, user: str) -> set[int]:
    """PostgreSQL backends serving ``database`` (their title: ``postgres: USER DB ...``)."""
    prefix = f"postgres: {user} {database} ".encode()
    found = set()
    for pid in _all_pids():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(prefix):
                found.add(pid)
        except OSError:
            continue
    return found


class CpuMeter:
    """CPU seconds spent by a server between ``start()`` and ``stop()``: its process tree and,
    for a PostgreSQL-backed one, the backends of its database (not the cluster's shared
    processes: WAL writer, checkpointer, background writer). A process that exits meanwhile
    is counted up to the last sample."""

    def __init__(self, pid: int, database: str | None, user: str) -> None:
        self.pid = pid
        self.database = database
        self.user = user
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}

    def _pids(self) -> set[int]:
        pids = descendants(self.pid)
        if self.database:
            pids |= backends_of(self.database, self.user)
        return pids

    def start(self) -> None:
        self._first = {pid: cpu for pid in self._pids()
                       if (cpu := process_cpu(pid)) is not None}
        self._last = dict(self._first)

    def sample(self) -> None:
        for pid in self._pids():
            cpu = process_cpu(pid)
            if cpu is not None:
                self._last[pid] = cpu

    def seconds(self) -> tuple[float, float]:
        """CPU seconds since ``start()`` (a process started since then counts from zero):
        (the server's process tree, its database backends)."""
        self.sample()
        backends = backends_of(self.database, self.user) if self.database else set()
        spent = {pid: self._last[pid] - self._first.get(pid, 0.0) for pid in self._last}
        server = sum(v for pid, v in spent.items() if pid not in backends)
        return server, sum(v for pid, v in spent.items() if pid in backends)


def core_times(pid: int) -> tuple[float, float] | None:
    """Seconds the threads of ``pid`` have run on a core, and waited runnable for one
    (/proc/PID/task/*/schedstat: run ns, wait ns); None when the process is gone. Only live
    threads count: one that ended takes its time with it (perfdhcp's live as long as it)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    run = wait = 0
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # a thread that ended meanwhile
        run += int(fields[0])
        wait += int(fields[1])
    return run / 1e9, wait / 1e9


class ClientMeter:
    """How the load generator fared on the cores it shares with the server while it sends:
    seconds a second it ran and waited for a core (``core_times``), from when it appears below
    ``parent`` (a process named ``name``) for ``seconds`` (perfdhcp's ``-p``: its sending, not
    its drain and the printing after). perfdhcp needs about a core at 10,000 DORA/s on this
    machine; a server tree that leaves it less makes it fall behind and then send and read in
    bursts, which overflow its socket: this tells that apart from a server that answered late
    on its own. ``cores`` spans the same window: how much of the machine sat idle meanwhile."""

    _POLL = 0.05  # looking for the process (it appears within a poll of start())
    _SAMPLE = 0.25  # the last sample in the window is the figure if the process ends early

    def __init__(self, name: str, seconds: float, parent: int | None = None,
                 find_within: float = 10.0) -> None:
        self.name = name
        self.seconds = seconds
        self.parent = os.getpid() if parent is None else parent
        self.find_within = find_within
        self.figures: tuple[float, float] | None = None  # (ran, waited) seconds a second
        self.cores = MachineMeter()
        self._thread = threading.Thread(target=self._watch, name="client-meter", daemon=True)

    def start(self) -> ClientMeter:
        self._thread.start()
        return self

    def result(self, timeout: float = 30.0) -> tuple[float, float] | None:
        """(ran, waited for a core), seconds a second; None when the client was not seen."""
        self._thread.join(timeout)
        return self.figures

    def _find(self) -> int | None:
        for pid in sorted(descendants(self.parent) - {self.parent}):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == self.name:
                    return pid
            except OSError:
                continue
        return None

    def _watch(self) -> None:
        deadline = time.monotonic() + self.find_within
        pid = self._find()
        while pid is None and time.monotonic() < deadline:
            time.sleep(self._POLL)
            pid = self._find()
        first = core_times(pid) if pid is not None else None
        if pid is None or first is None:
            return
        self.cores.start().stop()
        start = last_at = time.monotonic()
        last = first
        end = start + self.seconds
        while (now := time.monotonic()) < end:
            time.sleep(min(self._SAMPLE, end - now))
            sample = core_times(pid)
            if sample is None:
                break
            last, last_at = sample, time.monotonic()
            self.cores.stop()
        if last_at > start:
            span = last_at - start
            self.figures = ((last[0] - first[0]) / span, (last[1] - first[1]) / span)
