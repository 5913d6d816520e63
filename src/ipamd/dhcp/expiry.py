"""The lease expiry worker: ends leases whose time is up, in batches (``leasestore.expire_batch``).

* active -> expired, with its journal row (its history row and ``lease.expired`` event
  follow, workers/lease_journal.py);
* declined -> expired once the probation is over, with its ``expired`` event: that
  closes the quarantine in the occupancy history;
* offered (an Offer hold an earlier version wrote; this one holds Offers in the DHCP
  server's memory, where they lapse by themselves) -> deleted: it never was a lease, so
  no history.

Leases come up by ``sweep_at``, which renewals leave alone (a renewal then rewrites no index
entry: migration 0014); one renewed since comes up again at its expiry.

``FOR UPDATE SKIP LOCKED`` lets every node run the worker against one database.
"""

from __future__ import annotations

import logging

import trio

from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp.leasestore import expire_batch
from ipamd.state import AppState

log = logging.getLogger("ipamd.dhcp.expiry")

_MAX_ROUNDS = 50  # batches per tick; the rest waits for the next tick


async def sweep(state: AppState) -> int:
    """Expire everything due (bounded by rounds); tell this node's DHCP server. Returns count."""
    batch = state.config.dhcp.expiry_batch
    total = 0
    for _ in range(_MAX_ROUNDS):
        ended, looked = await state.db.transaction(expire_batch, batch)
        for server in (state.dhcp, state.dhcp6):  # one table: either's leases end here
            if server is not None and ended:
                server.forget(ended)
        total += len(ended)
        if looked < batch:
            break
    if total:
        state.lease_journal.written()
    return total


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    task_status.started()
    interval = state.config.dhcp.expiry_interval_seconds
    throttle = Throttle(log)
    while True:
        try:
            count = await sweep(state)
            if count:
                log.debug("expired %d leases", count)
        except DB_ERRORS as error:
            log_failure(throttle, error, "lease expiry failed: %s", error.__class__.__name__)
        await trio.sleep(interval)
