"""Work that waits out a lease storm, for a bounded time.

While this node's DHCP server is in a storm (at its ceiling, ``runtime.dhcp_at_ceiling``, or
committing lease changes fast, ``runtime.lease_churn``; passed in as ``at_ceiling``), work
that can wait does: the lease journal's derivation
(``workers/lease_journal``) and full garbage collections (``workers/gc_pacer``). Each holds
back at most ``STORM_HOLD_SECONDS`` a storm, then goes on as usual until the storm ends,
so nothing waits much longer than that.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

STORM_HOLD_SECONDS = 60.0
# How often a holder looks at the DHCP server again.
STORM_LOOK_SECONDS = 0.25


def never() -> bool:
    """No DHCP server here: never a storm."""
    return False


class StormHold:
    """Holds while ``at_ceiling()`` says a storm is on, at most STORM_HOLD_SECONDS a storm."""

    def __init__(self, at_ceiling: Callable[[], bool]) -> None:
        self.at_ceiling = at_ceiling
        self._since: float | None = None  # when holding for the current storm began

    def holding(self) -> bool:
        """Is a storm on that has not been held back for STORM_HOLD_SECONDS yet?"""
        if not self.at_ceiling():
            self._since = None  # calm: the next storm may be held again
            return False
        now = trio.current_time()
        if self._since is None:
            self._since = now
        return now - self._since < STORM_HOLD_SECONDS

    async def wait(self) -> None:
        """Until calm, or held long enough (then at once until the storm has ended)."""
        # Polled: the ceiling is a figure sampled over time, not an event to wait on.
        while self.holding():  # noqa: ASYNC110
            await trio.sleep(STORM_LOOK_SECONDS)
