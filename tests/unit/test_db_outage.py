"""A lost database connection is classified once and logged once."""

from __future__ import annotations

import logging
import sys

import asyncpg
import pytest

from ipamd.db import outage
from ipamd.db.outage import Outage, Throttle, is_connection_loss, log_failure

LOSSES = [
    asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    asyncpg.AdminShutdownError("terminating connection due to administrator command"),
    asyncpg.CannotConnectNowError("the database system is starting up"),
    asyncpg.CrashShutdownError("crash"),
    asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
    asyncpg.InterfaceError("cannot call Connection.fetch(): connection is closed"),
    ConnectionRefusedError(111, "Connection refused"),
    ConnectionResetError(104, "reset"),
    TimeoutError(),
    OSError(2, "No such file or directory"),  # the unix socket gone during a restart
]
NOT_LOSSES = [
    asyncpg.UniqueViolationError("duplicate key"),
    asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
    asyncpg.SerializationError("could not serialize"),
    asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
    asyncpg.InternalClientError("something else"),
    ValueError("a bug"),
    KeyError("a bug"),
]


@pytest.mark.parametrize("error", LOSSES, ids=lambda e: type(e).__name__)
def test_connection_losses_are_recognised(error: BaseException) -> None:
    assert is_connection_loss(error)


@pytest.mark.parametrize("error", NOT_LOSSES, ids=lambda e: type(e).__name__)
def test_other_errors_are_not_connection_losses(error: BaseException) -> None:
    assert not is_connection_loss(error)


def test_an_outage_logs_one_warning_and_one_summary(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ipamd.db")
    watch = Outage()
    watch.reached()  # reachable all along: nothing to say
    for error in LOSSES * 20:
        watch.lost(error)
    assert watch.down and watch.failures == len(LOSSES) * 20
    watch.reached()
    watch.reached()
    records = [r for r in caplog.records if r.name == "ipamd.db"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO]
    assert "unreachable (ConnectionDoesNotExistError)" in records[0].getMessage()
    assert f"{len(LOSSES) * 20} attempts failed" in records[1].getMessage()
    assert not any(r.exc_info for r in records)
    assert not watch.down and watch.outages == 1
    watch.lost(LOSSES[0])  # a second outage is announced again
    assert watch.outages == 2


def test_throttle_holds_repeats_back_and_counts_them(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [100.0]
    monkeypatch.setattr(outage.time, "monotonic", lambda: now[0])
    logger = logging.getLogger("ipamd.test.throttle")
    caplog.set_level(logging.INFO, logger=logger.name)
    throttle = Throttle(logger, every=10)
    results = [throttle.warning("k", "failed: %s", n) for n in range(50)]
    assert results.count(True) == 1
    now[0] += 11
    assert throttle.warning("k", "failed: %s", "again")
    assert throttle.warning("other", "another kind")  # keys are throttled separately
    messages = [r.getMessage() for r in caplog.records if r.name == logger.name]
    assert messages == ["failed: 0", "failed: again (49 similar held back)", "another kind"]


def test_throttled_exception_keeps_the_traceback_for_bugs(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("ipamd.test.bug")
    throttle = Throttle(logger)
    try:
        raise ValueError("a bug")
    except ValueError:
        throttle.exception("bug", "batch failed")
        throttle.exception("bug", "batch failed")
    records = [r for r in caplog.records if r.name == logger.name]
    assert len(records) == 1 and records[0].exc_info and records[0].levelno == logging.ERROR


def test_log_failure_is_silent_for_connection_loss(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("ipamd.test.sites")
    throttle = Throttle(logger)
    for error in LOSSES:
        log_failure(throttle, error, "expiry failed: %s", type(error).__name__)
    assert not [r for r in caplog.records if r.name == logger.name]
    log_failure(throttle, asyncpg.UniqueViolationError("dup"), "expiry failed: %s", "dup")
    assert [r.getMessage() for r in caplog.records if r.name == logger.name] == [
        "expiry failed: dup"]


def test_asyncpg_pool_reconnect_tracebacks_are_filtered(caplog: pytest.LogCaptureFixture) -> None:
    outage.quiet_pool_logs()
    outage.quiet_pool_logs()  # idempotent
    pool_log = logging.getLogger("asyncpg.pool")
    assert sum(isinstance(f, outage._PoolRestoreFilter) for f in pool_log.filters) == 1
    for error in (asyncpg.CannotConnectNowError("shutting down"), ValueError("a real bug")):
        try:
            raise error
        except Exception:
            pool_log.warning("Failed to restore the pool connection floor; retrying",
                             exc_info=sys.exc_info())
    kept = [r for r in caplog.records if r.name == "asyncpg.pool"]
    assert len(kept) == 1 and isinstance(kept[0].exc_info[1], ValueError)  # type: ignore[index]
