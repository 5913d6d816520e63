"""How a committed batch's answers are spread out: at the rate they were committed.

A batch of a few hundred Requests commits in 10-30 ms under load; sent back to back (or 32
a millisecond, as before), its Acks reach the relay far faster than the Requests came, and
a relay's receive buffer overflows. perfdhcp's, relaying 7,000 DORA/s on this 2-core
machine, holds 166 datagrams: its overflows followed, within 60 ms, the pacer starting on
100-256 waiting answers (lab, 2026-11-28), and were all of ipamd's losses from 6,000 to
12,000 DORA/s in the bench.

So the answers waiting go out evenly over about as long as the next batch takes to commit
(the last one's duration, within ``MIN_SPREAD``..``MAX_SPREAD``): the Acks leave at the rate
their Requests were committed. Answers that join meanwhile (the next batch landed) push the
end out again. What is due is counted by the clock, not per turn: a busy event loop that
stretches the pacer's pause sends more at its next turn, so the pacing never falls behind
the commits.
"""

from __future__ import annotations

import math

# Spread over no less than this: a batch committed in a millisecond still goes out over a
# couple of the pacer's turns rather than at once.
MIN_SPREAD = 0.002
# ...and no more: after a commit stalled for a second, its answers are late already.
MAX_SPREAD = 0.2


def spread_for(commit_seconds: float) -> float:
    """How long the answers of a batch committed in ``commit_seconds`` are spread over."""
    return min(max(commit_seconds, MIN_SPREAD), MAX_SPREAD)


class Spreading:
    """The pacer's arithmetic (no clock, no sockets: the caller passes both in)."""

    __slots__ = ("_last", "_left", "_until")

    def __init__(self, now: float, spread: float, waiting: int) -> None:
        self._last = now  # the last turn
        self._until = now + spread  # when every answer waiting should have left
        self._left = waiting  # answers waiting after the last turn

    def due(self, now: float, waiting: int, spread: float) -> int:
        """How many of the ``waiting`` answers to send at this turn (``now``); ``spread``:
        what a batch's answers are spread over now (``spread_for``)."""
        if waiting > self._left:  # another batch's answers joined
            self._until = max(self._until, now + spread)
        elapsed = now - self._last
        window = self._until - self._last
        self._last = now
        if window <= elapsed:
            count = waiting
        else:
            # (Less a hair: clock differences carry float noise, 25.000000001 is 25.)
            count = min(waiting, math.ceil(waiting * elapsed / window - 1e-9))
        self._left = waiting - count
        return count
