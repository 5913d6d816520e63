"""Builds the Outcome of one delivery attempt (timing, backoff) for any kind of delivery."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

from ipamd.outbox.backoff import Backoff, next_delay
from ipamd.outbox.queue import Job, Outcome


@dataclass
class Attempt:
    job: Job
    backoff: Backoff
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    clock: float = field(default_factory=time.perf_counter)

    def _outcome(
        self, ok: bool, *, status: int | None = None, error: str | None = None,
        response: str | None = None, delay_seconds: float | None = None, final: bool = False,
    ) -> Outcome:
        return Outcome(
            job_id=self.job.id, claim=self.job.claim, attempt=self.job.attempt, ok=ok,
            started=self.started, duration_ms=(time.perf_counter() - self.clock) * 1000,
            status=status, error=error, response=response, delay_seconds=delay_seconds,
            final=final,
        )

    def delivered(self, status: int | None = None, response: str | None = None) -> Outcome:
        return self._outcome(True, status=status, response=response)

    def retry(
        self, error: str, status: int | None = None, response: str | None = None,
        retry_after: str | None = None,
    ) -> Outcome:
        """A failure: tried again after the backoff (or the receiver's Retry-After)."""
        delay = next_delay(self.backoff, self.job.attempt, status, retry_after)
        return self._outcome(
            False, status=status, error=error, response=response, delay_seconds=delay
        )

    def final(self, error: str) -> Outcome:
        """A failure no retry can fix (the target is gone): failed at once; Replay remains."""
        return self._outcome(False, error=error, final=True)
