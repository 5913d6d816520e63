"""Full garbage collections wait out a lease storm.

CPython's cyclic collector runs a full (generation 2) collection whenever the objects that
survived since the last one reach a quarter of those before. A full collection walks every
object the process holds that the startup freeze did not cover — above all the lease cache,
which a storm grows by thousands of leases a second (three objects a lease) — and stops the
event loop meanwhile: 23 to 88 ms each in the appliance on the bench machine, up to 150,000
objects (gc.callbacks, lab runs at 4,000-5,000 DORA/s); a bare lease cache alone takes 31 ms
at 100,000 leases and 79 ms at 250,000. The DHCP server then answers the packets that
queued up meanwhile in one burst, which overflows relays' (and perfdhcp's) receive buffers.

So while the DHCP server is at its ceiling, or commits many lease changes a second below it
(``runtime.lease_churn``: at 8,000-9,000 DORA/s, under the ceiling, a full collection of
19-60 ms stopped the receive loop every few seconds and each overflowed perfdhcp's socket),
full collections are off (``workers/storm``: at most 60 s a storm); the young generations
still collect every cycle they find among new objects, and the full collection that fell
due runs as soon as the storm has passed.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable

import trio

from ipamd.state import AppState
from ipamd.workers.storm import STORM_LOOK_SECONDS, StormHold, never

log = logging.getLogger("ipamd.gc_pacer")

# The collector's thresholds as the process started (CPython's: 700, 10, 10).
_THRESHOLDS = gc.get_threshold()
# Generation 1 collections before a full one: never reached while a storm is held.
_FULL_OFF = 1 << 30


def set_full_collections(on: bool) -> None:
    young, middle, full = _THRESHOLDS
    gc.set_threshold(young, middle, full if on else _FULL_OFF)


async def run(state: AppState, *, task_status: trio.TaskStatus[None],
              at_ceiling: Callable[[], bool] = never) -> None:
    """The service; ``at_ceiling``: is this node's DHCP server in a storm (runtime gives it
    the ceiling or the churn of lease changes)."""
    del state  # a service's signature; the pacer needs only the storm signal
    storm = StormHold(at_ceiling)
    held = False
    task_status.started()
    try:
        while True:
            holding = storm.holding()
            if holding != held:
                set_full_collections(not holding)
                held = holding
                log.debug("full garbage collections %s", "held" if held else "on")
            await trio.sleep(STORM_LOOK_SECONDS)
    finally:
        if held:
            set_full_collections(True)
