"""Services supervised: a crash after start-up is logged and the service restarted."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from ipamd import child
from ipamd.db.outage import is_connection_loss
from ipamd.state import AppState

log = logging.getLogger("ipamd")

# A long-running service: ``await service(state, task_status=...)``; it calls
# task_status.started() once ready and runs until cancelled.
Service = Callable[..., Awaitable[None]]

FIRST_DELAY_SECONDS = 0.5
LAST_DELAY_SECONDS = 30.0
# A service that ran this long starts again from the first delay.
SETTLED_SECONDS = 60.0


class _Readiness:
    """Forwards the first started() to the parent nursery and remembers that it happened."""

    def __init__(self, task_status: trio.TaskStatus[None]) -> None:
        self._task_status = task_status
        self.ready = False

    def started(self, value: None = None) -> None:
        if not self.ready:
            self.ready = True
            self._task_status.started(value)


async def supervise(
    name: str, service: Service, state: AppState | None, *,
    task_status: trio.TaskStatus[None],
) -> None:
    """Run a service; a crash after start-up is logged and the service restarted with backoff.

    A failure before it reports ready propagates: the appliance does not start half-built.
    A service that ran for a minute or more starts again from the shortest delay.
    """
    readiness = _Readiness(task_status)
    delay = FIRST_DELAY_SECONDS
    _mark(state, name, False)
    while True:
        began = trio.current_time()
        try:
            await _observed(name, service, state, readiness)
            log.warning("service %s returned; restarting", name)
        except Exception as error:
            if not readiness.ready:
                raise
            _log_crash(name, error, delay)
        if trio.current_time() - began >= SETTLED_SECONDS:
            delay = FIRST_DELAY_SECONDS
        await trio.sleep(delay)
        delay = min(delay * 2, LAST_DELAY_SECONDS)


def _log_crash(name: str, error: Exception, delay: float) -> None:
    if is_connection_loss(error):  # expected; the Database's Outage logged it once
        log.info("service %s stopped: database unreachable; restarting in %.1fs", name, delay)
    elif isinstance(error, child.ChildExited):  # its traceback was the child's own
        log.warning("service %s: %s; restarting in %.1fs", name, error, delay)
    else:
        log.exception("service %s crashed; restarting in %.1fs", name, delay)


async def _observed(name: str, service: Service, state: AppState | None,
                    readiness: _Readiness) -> None:
    """Run the service once; state.running_services[name] is True from its started() to its end."""

    class _Mark:
        def started(self, value: None = None) -> None:
            _mark(state, name, True)
            readiness.started(value)

    try:
        await service(state, task_status=_Mark())
    finally:
        _mark(state, name, False)


def _mark(state: AppState | None, name: str, running: bool) -> None:
    if state is not None:  # (unit tests supervise with no state)
        state.running_services[name] = running
