"""When a failed delivery is tried again: exponential backoff with jitter, or Retry-After.

With the defaults (base 10 s, multiplier 3, cap 5 h, 12 attempts) the eleven waits are
10 s, 30 s, 90 s, 4.5 min, 13.5 min, 40.5 min, ~2 h, then 5 h four times: ~23 h in all.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from dataclasses import dataclass

from ipamd.config import OutboxConfig

# Retry-After is honoured on these statuses (RFC 9110 §10.2.3).
RETRY_AFTER_STATUSES = frozenset({429, 503})
# A receiver asking for less is asked to wait this long anyway.
MIN_RETRY_AFTER_SECONDS = 1.0


@dataclass(frozen=True)
class Backoff:
    base: float
    multiplier: float
    cap: float
    jitter: float  # fraction: each wait is scaled by a uniform factor in [1-jitter, 1+jitter]

    @classmethod
    def from_config(cls, config: OutboxConfig) -> Backoff:
        return cls(
            base=config.backoff_base_seconds,
            multiplier=config.backoff_multiplier,
            cap=config.backoff_max_seconds,
            jitter=config.backoff_jitter,
        )

    def nominal(self, attempt: int) -> float:
        """The wait after failed attempt number `attempt` (1-based), before jitter."""
        exponent = max(attempt, 1) - 1
        # Bound the exponent: the cap is reached long before a float overflows.
        delay = self.base * self.multiplier ** min(exponent, 64)
        return min(delay, self.cap)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        nominal = self.nominal(attempt)
        if self.jitter <= 0:
            return nominal
        factor = (rng or random).uniform(1 - self.jitter, 1 + self.jitter)
        return min(nominal * factor, self.cap)

    def schedule(self, max_attempts: int) -> list[float]:
        """The nominal waits between `max_attempts` attempts (documentation and tests)."""
        return [self.nominal(n) for n in range(1, max_attempts)]


def parse_retry_after(value: str | None, now: dt.datetime | None = None) -> float | None:
    """Seconds from a Retry-After value (delta-seconds or an HTTP date); None if unusable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)  # raises on a bad date since 3.10
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    current = now or dt.datetime.now(dt.UTC)
    return max((when - current).total_seconds(), 0.0)


def next_delay(
    backoff: Backoff, attempt: int, status: int | None, retry_after: str | None,
    rng: random.Random | None = None,
) -> float:
    """The wait before the next attempt; a receiver's Retry-After wins on 429/503, capped."""
    if status in RETRY_AFTER_STATUSES:
        asked = parse_retry_after(retry_after)
        if asked is not None:
            return min(max(asked, MIN_RETRY_AFTER_SECONDS), backoff.cap)
    return backoff.delay(attempt, rng)
