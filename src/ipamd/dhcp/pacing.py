"""The answers of committed batches, sent paced: a relay's receive buffer never overflows.

Both servers use one ``Pacer`` (DHCPv4's ``dispatch``, DHCPv6's ``dhcp6.dispatch``): the
answers a committed batch releases are queued (``queued``), then ``send_queued`` sends them
at once when few, else wakes ``run`` (a task of the server's nursery), which sends them
paced. Hundreds sent back to back overflow the receive buffer of a relay with the default
size (212 kB on Debian): measured with perfdhcp on 2 busy cores, ~1,100 of 8,000 DHCPv4
answers a second were lost so, and DHCPv6 Replies alike (bench/README.md).

The pacer sends REPLY_BURST first, then at PACE_FACTOR times the rate at which requests that
need a commit come in (at least PACE_MIN a second): a backlog — the clients that waited
through a slow disk flush — drains soon after, without the relay getting much more than its
usual stream. Each turn sends what the time since the last one allows (at most
PACE_MAX_SECONDS of it), so a busy event loop that stretches the pacer's gaps does not slow
the pacing down: it must never become the bottleneck (at 16 a gap regardless of the gap, it
did, and answers piled up for seconds). Measured (bench/README.md): a commit stalled for
0.5 s at 7,000 DORA/s, when the backlog went out an eighth of it a gap, overflowed
perfdhcp's socket by ~1,000 answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

import trio

T = TypeVar("T")

REPLY_BURST = 32
PACE_FACTOR = 2.5
PACE_MIN = 10_000.0  # answers a second
PACE_MAX_SECONDS = 0.01
# How often the arrival rate of requests that need a commit is measured again.
RATE_WINDOW_SECONDS = 0.1
GAP_SECONDS = 0.001  # the pacer's wait between its turns

_monotonic = time.monotonic
_pause = trio.sleep


class Pacer(Generic[T]):
    """Answers waiting to be sent (``queued``), and how fast they may go.

    ``send`` queues one answer in the server's ``Outgoing``; ``flush`` sends what is queued
    there. The server counts each request it submits for a commit (``submitted``) and calls
    ``measure_rate`` after each committed batch: the rate keeps its value through a stalled
    commit, when the answers pile up."""

    def __init__(self, send: Callable[[T], None], flush: Callable[[], None]) -> None:
        self._send = send
        self._flush = flush
        self.queued: list[T] = []  # committed, waiting to be sent
        self.pacing = False  # the pacer is sending: new answers queue behind it
        self.submitted = 0
        self.request_rate = 0.0
        self._rate_since = _monotonic()
        self._rate_count = 0
        self._credit = 0.0  # answers the pacer may send now
        self._paced_at = 0.0
        self._wake = trio.Event()

    def measure_rate(self) -> None:
        now = _monotonic()
        elapsed = now - self._rate_since
        if elapsed >= RATE_WINDOW_SECONDS:
            self.request_rate = (self.submitted - self._rate_count) / elapsed
            self._rate_since, self._rate_count = now, self.submitted

    def send_queued(self) -> None:
        """Send the answers queued: at once when few, else paced (by ``run``)."""
        queued = self.queued
        if not self.pacing and len(queued) <= REPLY_BURST:
            send = self._send
            for item in queued:
                send(item)
            queued.clear()
            self._flush()
        elif queued:
            self._wake.set()

    def pace_rate(self) -> float:
        """Answers a second the pacer sends while a backlog waits."""
        return max(PACE_MIN, PACE_FACTOR * self.request_rate)

    def start(self) -> None:
        """The pacer begins: its first turn sends REPLY_BURST answers."""
        self.pacing = True
        self._credit = float(REPLY_BURST)
        self._paced_at = _monotonic()

    def send_burst(self) -> bool:
        """The pacer's turn: send what the pace allows since its last turn; True while more
        answers wait."""
        queued = self.queued
        now = _monotonic()
        rate = self.pace_rate()
        credit = self._credit + (now - self._paced_at) * rate
        credit = min(credit, max(float(REPLY_BURST), rate * PACE_MAX_SECONDS))
        self._paced_at = now
        burst = min(len(queued), max(1, int(credit)))
        send = self._send
        for item in queued[:burst]:
            send(item)
        del queued[:burst]
        self._flush()
        self._credit = max(0.0, credit - burst) if queued else 0.0
        return bool(queued)

    async def run(self) -> None:
        """Forever (a task of the server's nursery): when woken, send the queue paced."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            self.start()
            try:
                while self.send_burst():
                    await _pause(GAP_SECONDS)
            finally:
                self.pacing = False
