"""A lost database connection is an expected event, not a bug: classify it once, log it once.

``is_connection_loss`` is the one place that decides whether an exception means "the
database went away" (a restart, a failover, a killed backend, a refused connect).
``Outage`` is kept by each ``Database`` (shared with the DHCP committer's sessions): the
first loss logs ONE warning, further losses are only counted, and the first success after
logs ONE info line with how long it lasted and how many units of work failed. Callers
that catch such an error therefore log nothing more for it; anything else they log goes
through a ``Throttle`` so that no failure, however frequent, floods the log.
"""

from __future__ import annotations

import logging
import time

import asyncpg

log = logging.getLogger("ipamd.db")

# What a unit of database work raises when the database (not the unit) is the problem:
# the sites that retry such work catch these and call ``log_failure``.
DB_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError,
)

# Server-side: the connection is gone (class 08) or the server is going/coming (57P01-3).
_LOST_SERVER = (
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
)
# asyncpg's client-side words for a connection that died under an operation.
_LOST_WORDS = ("connection is closed", "connection was closed", "cannot switch to state",
               "connection lost", "underlying connection")


def is_connection_loss(error: BaseException) -> bool:
    """Whether ``error`` means the database connection was lost or could not be made.

    A group (several tasks of one nursery failed together) is a loss when all of it is."""
    if isinstance(error, BaseExceptionGroup):
        return all(is_connection_loss(e) for e in error.exceptions)
    if isinstance(error, _LOST_SERVER):
        return True
    if isinstance(error, (OSError, EOFError)):  # refused, reset, timed out, socket gone
        return True
    if isinstance(error, (asyncpg.InterfaceError, asyncpg.InternalClientError)):
        text = str(error)
        return any(words in text for words in _LOST_WORDS)
    return False


class Outage:
    """Reachability of one database as its users see it; logs edges, counts the rest."""

    def __init__(self, what: str = "database") -> None:
        self.what = what
        self.since: float | None = None  # monotonic time of the first loss; None: reachable
        self.failures = 0  # units of work lost during the current outage
        self.outages = 0  # outages seen since start (for tests and counters)

    @property
    def down(self) -> bool:
        return self.since is not None

    def lost(self, error: BaseException) -> None:
        if self.since is None:
            self.since = time.monotonic()
            self.failures = 1
            self.outages += 1
            log.warning(
                "%s unreachable (%s); work that needs it fails until it is back "
                "(DHCP clients retransmit; nothing unacknowledged is lost)",
                self.what, error.__class__.__name__,
            )
        else:
            self.failures += 1

    def reached(self) -> None:
        if self.since is None:
            return
        lasted = time.monotonic() - self.since
        log.info("%s reachable again after %.1fs; %d attempts failed meanwhile",
                 self.what, lasted, self.failures)
        self.since = None
        self.failures = 0


class Throttle:
    """At most one log line per ``every`` seconds per key; the next one says how many were
    held back. For failures that are not connection losses but may repeat quickly."""

    def __init__(self, logger: logging.Logger, every: float = 10.0) -> None:
        self.logger = logger
        self.every = every
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, key: str, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``key`` was logged less than ``every`` s ago."""
        return self._emit(logging.WARNING, key, message, args, False)

    def exception(self, key: str, message: str, *args: object) -> bool:
        """As ``warning``, at ERROR with the current exception's traceback (for bugs)."""
        return self._emit(logging.ERROR, key, message, args, True)

    def _emit(self, level: int, key: str, message: str, args: tuple[object, ...],
              exc_info: bool) -> bool:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self.every:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        self._last[key] = now
        if held:
            message += " (%d similar held back)"
            args = (*args, held)
        self.logger.log(level, message, *args, exc_info=exc_info)
        return True


def log_failure(throttle: Throttle, error: BaseException, message: str, *args: object) -> None:
    """Log a failed unit of database work that will be retried.

    A connection loss is not logged here: the Database's ``Outage`` logged it once for all
    its users. Anything else is logged, at most once per ``throttle.every`` per message.
    """
    if not is_connection_loss(error):
        throttle.warning(message, message, *args)


class _PoolRestoreFilter(logging.Filter):
    """asyncpg's pool logs a warning with a traceback each time it fails to reopen its
    minimum connections; during an outage that is the Outage's one warning again, many
    times over. Other asyncpg pool records pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or not is_connection_loss(error)


def quiet_pool_logs() -> None:
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, _PoolRestoreFilter) for f in pool_log.filters):
        pool_log.addFilter(_PoolRestoreFilter())
