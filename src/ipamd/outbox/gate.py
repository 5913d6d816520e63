"""Holds a scheduler's claims back while the appliance is busy with something more urgent.

The DNS delivery process has one: its parent says ``busy`` while the DHCP server runs at its
ceiling (a lease storm). Then rows are claimed one at a time, at most ``trickle_per_second``,
so the storm keeps the machine and the updates still never starve for good; once the parent
says ``idle`` the scheduler claims freely again and the backlog drains.
"""

from __future__ import annotations

import math

import trio


class Gate:
    def __init__(self, trickle_per_second: float, *, busy: bool = False) -> None:
        self.busy = busy
        self.interval = 1.0 / trickle_per_second if trickle_per_second > 0 else math.inf
        self._changed = trio.Event()

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
