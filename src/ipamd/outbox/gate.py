"""Holds a scheduler's claims back while the appliance is busy with something more urgent.

The DNS delivery process has one: its parent says ``busy`` while the DHCP server runs at its
ceiling (a lease storm). Then rows are claimed one at a time, at most ``trickle_per_second``,
so the storm keeps the machine and the updates still never starve for good; once the parent
says ``idle`` the scheduler claims freely again and the backlog drains.

A storm's first DHCP commit is also what wakes the scheduler, a sample or two before the
parent can say ``busy``: so each claim round starts ``wake_delay`` after its wake-up. The
word arrives first, and a burst's changes are claimed together, not one round per commit.
"""

from __future__ import annotations

import math

import trio

# Longer than the parent needs to notice a storm and say so (two 20 ms samples, see
# runtime.dhcp_at_ceiling), short beside what a DNS change may take to show.
WAKE_DELAY_SECONDS = 0.1


class Gate:
    def __init__(self, trickle_per_second: float, *, busy: bool = False,
                 wake_delay: float = WAKE_DELAY_SECONDS) -> None:
        self.busy = busy
        self.interval = 1.0 / trickle_per_second if trickle_per_second > 0 else math.inf
        self.wake_delay = wake_delay
        self._changed = trio.Event()

    async def after_wake(self) -> None:
        """Called when a claim round is about to start: wait until the busy word would have
        come, had this wake-up been a storm's first commit."""
        await trio.sleep(self.wake_delay)

    def set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self._changed.set()
            self._changed = trio.Event()

    async def allowance(self) -> int | None:
        """How many rows the next claim may take: None (no limit) when idle; while busy, 1
        after the trickle interval (or None as soon as the appliance is idle again)."""
        if not self.busy:
            return None
        changed = self._changed
        with trio.move_on_after(self.interval):
            while self.busy:
                await changed.wait()
                changed = self._changed
        return 1 if self.busy else None
