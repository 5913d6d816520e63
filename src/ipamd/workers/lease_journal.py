"""The lease journal's deriver: history rows and outbox events for the leases changed.

Every lease change writes a ``lease_journal`` row in its own transaction
(``core.lease_events``); this service, on every node, moves them into ``lease_events``
(the occupancy history folds them) and ``events`` (webhooks, DNS updates, alerts), in
batches. It derives when told: by this process's writers (the DHCP committer after each
batch, the expiry worker; ``AppState.lease_journal``), by a NOTIFY from other processes
(the API's force-release), and every few seconds regardless (rows another node left behind
when it stopped). It waits ``GATHER_SECONDS`` first, so that many commits are derived by
one statement.

While this node's DHCP server is at its ceiling (a lease storm: ``runtime.dhcp_at_ceiling``,
the signal that holds DNS delivery back too), or commits lease changes fast
(``runtime.lease_churn`` at ``DERIVE_CHURN_PER_SECOND``: a storm it keeps up with), it holds
off (``workers/storm``, at most 60 s a storm): deriving costs the database about as much
CPU per lease as the lease's own commit, and in a storm that CPU answers clients instead.
The rows wait durably in the journal; the storm's events, DNS updates and history rows
follow it (the metrics show the journal's rows and its oldest row's age). A history
question asked meanwhile still derives first. A storm longer than the hold is derived
through as usual, so nothing waits much longer than that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from ipamd.core.lease_events import DERIVE_BATCH, JOURNAL_CHANNEL, derive
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.state import AppState
from ipamd.workers.storm import StormHold, never

log = logging.getLogger("ipamd.lease_journal")

# Changes wait about this long for their webhooks, DNS updates and history rows (a history
# question does not wait: it derives first). A derive statement's fixed cost is 1 to 2 ms of
# PostgreSQL CPU at light load; at 200 leases a second it then carries ~10 changes (20 ms:
# ~4, and the deriver cost ~425 µs of database CPU per DORA, measured).
GATHER_SECONDS = 0.05
BACKSTOP_SECONDS = 5.0  # look even when nobody said so
RETRY_SECONDS = 1.0  # after a failed derive (the database is down, say)
LISTEN_RETRY_SECONDS = 2.0


async def derive_pending(state: AppState, holding: Callable[[], bool] = never) -> int:
    """Derive until the journal is empty (as far as this statement sees it), or until a
    storm begins (``holding``, StormHold.holding): a derivation that started in a lull must
    not go on for seconds beside the storm (the rest follows once it is held no more)."""
    total = 0
    while True:
        moved = await state.db.run(derive, DERIVE_BATCH)
        total += moved
        if moved < DERIVE_BATCH:
            return total
        if holding():
            state.lease_journal.written()  # more is waiting: the next round takes it
            return total
        await trio.lowlevel.checkpoint()


async def _listen(state: AppState, throttle: Throttle) -> None:
    """Wake the deriver on every NOTIFY; LISTEN again after a lost connection."""
    while True:
        try:
            notifications = await state.db.listen(JOURNAL_CHANNEL)
            try:
                state.lease_journal.written()  # what was notified while not listening
                async for _payload in notifications:
                    state.lease_journal.written()
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(5):
                    await notifications.release()
        except DB_ERRORS as error:
            log_failure(throttle, error, "lease journal listener lost (%s); retrying",
                        error.__class__.__name__)
        await trio.sleep(LISTEN_RETRY_SECONDS)


async def run(state: AppState, *, task_status: trio.TaskStatus[None],
              at_ceiling: Callable[[], bool] = never) -> None:
    """The service; ``at_ceiling``: is this node's DHCP server in a storm (see StormHold)."""
    throttle = Throttle(log)
    storm = StormHold(at_ceiling)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_listen, state, throttle)
        task_status.started()
        state.lease_journal.written()  # rows left from before this start
        while True:
            with trio.move_on_after(BACKSTOP_SECONDS):
                await state.lease_journal.wait()
            await trio.sleep(GATHER_SECONDS)
            await storm.wait()
            try:
                await derive_pending(state, storm.holding)
            except DB_ERRORS as error:
                log_failure(throttle, error, "lease journal derive failed: %s: %s",
                            error.__class__.__name__, error)
                await trio.sleep(RETRY_SECONDS)
                state.lease_journal.written()  # try again
