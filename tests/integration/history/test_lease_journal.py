"""The lease journal's deriver as a service: lease changes reach lease_events, the history
and the events table without anyone asking, whichever way the deriver is told."""

from __future__ import annotations

import functools
import uuid
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import leasestore
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.state import AppState
from ipamd.workers import lease_journal
from ipamd.workers import storm as storm_module
from tests.conftest import make_config
from tests.integration.dhcp.harness import seed_subnet
from tests.unit.dhcp.packets import ip

DEADLINE = 10.0  # far beyond GATHER_SECONDS; only a deriver that never runs reaches it


async def _subnet(db: Database) -> uuid.UUID:
    async def seed(conn) -> Any:
        return (await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.50")]))["subnet_id"]

    return await db.transaction(seed)


async def _grant(db: Database, subnet: uuid.UUID, address: str, key: bytes) -> Op:
    op = Op(OpKind.INSERT, subnet, ip(address), key, 600)
    await db.run(leasestore.commit, [op])
    assert op.ok
    return op


async def _counts(db: Database) -> dict[str, int]:
    async def read(conn) -> Any:
        return dict(await conn.fetchrow(
            """SELECT (SELECT count(*) FROM lease_journal) AS journal,
                      (SELECT count(*) FROM lease_events) AS history,
                      (SELECT count(*) FROM lease_intervals) AS intervals,
                      (SELECT count(*) FROM events WHERE topic LIKE 'lease.%') AS events"""))

    return await db.run(read)


async def _until_derived(db: Database, rows: int) -> dict[str, int]:
    with trio.fail_after(DEADLINE):
        while (counts := await _counts(db))["history"] < rows:
            await trio.sleep(0.02)
    return counts


async def test_deriver_takes_rows_left_before_it_started_and_those_it_is_told_of(
        db: Database, dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only being told can wake it within the test's deadline: not its periodic look.
    monkeypatch.setattr(lease_journal, "BACKSTOP_SECONDS", 10 * DEADLINE)
    subnet = await _subnet(db)
    await _grant(db, subnet, "127.77.1.10", b"left")  # journaled while no deriver ran
    assert (await _counts(db))["journal"] == 1
    state = AppState(config=make_config(dsn), db=db)
    async with trio.open_nursery() as nursery:
        await nursery.start(lease_journal.run, state)
        assert await _until_derived(db, 1) == {"journal": 0, "history": 1, "intervals": 1,
                                               "events": 1}
        # This process's writer tells it directly (as the DHCP committer does).
        await _grant(db, subnet, "127.77.1.11", b"told")
        state.lease_journal.written()
        assert await _until_derived(db, 2) == {"journal": 0, "history": 2, "intervals": 2,
                                               "events": 2}
        # A force-release (the API, maybe another process) is heard by its NOTIFY.
        op = await _grant(db, subnet, "127.77.1.12", b"heard")
        state.lease_journal.written()
        await _until_derived(db, 3)

        async def release(conn) -> None:
            async with conn.transaction():
                await leasestore.force_release(conn, op.lease_id, True)

        await db.run(release)
        counts = await _until_derived(db, 4)
        assert counts == {"journal": 0, "history": 4, "intervals": 3, "events": 4}
        nursery.cancel_scope.cancel()


async def test_deriver_holds_off_while_dhcp_is_at_its_ceiling(
        db: Database, dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The ceiling signal is a flag here (runtime.dhcp_at_ceiling, which the appliance passes,
    # is tested on its own): what matters is that the deriver obeys it, and not for ever.
    monkeypatch.setattr(lease_journal, "BACKSTOP_SECONDS", 0.2)  # it looks often regardless
    storm = {"on": True}
    subnet = await _subnet(db)
    state = AppState(config=make_config(dsn), db=db)
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(lease_journal.run, state,
                                              at_ceiling=lambda: storm["on"]))
        await _grant(db, subnet, "127.77.1.20", b"storm-1")
        state.lease_journal.written()
        await trio.sleep(1.0)  # 20 gathers, 5 backstop looks: held all along
        assert (await _counts(db))["journal"] == 1
        storm["on"] = False
        assert (await _until_derived(db, 1))["journal"] == 0
        # A storm that outlasts the hold is derived through.
        monkeypatch.setattr(storm_module, "STORM_HOLD_SECONDS", 0.5)
        storm["on"] = True
        await _grant(db, subnet, "127.77.1.21", b"storm-2")
        state.lease_journal.written()
        assert (await _until_derived(db, 2))["journal"] == 0
        assert storm["on"]
        nursery.cancel_scope.cancel()


async def test_a_derivation_begun_in_a_lull_stops_at_the_next_statement_once_a_storm_is_on(
        db: Database, dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease_journal, "DERIVE_BATCH", 2)  # rows per derive statement
    subnet = await _subnet(db)
    for n in range(5):
        await _grant(db, subnet, f"127.77.1.{20 + n}", b"lull-%d" % n)
    state = AppState(config=make_config(dsn), db=db)
    looks: list[bool] = []

    def storm_on() -> bool:  # a storm began while the first statement ran
        looks.append(True)
        return True

    assert await lease_journal.derive_pending(state, storm_on) == 2
    assert looks == [True]  # asked once, after the first full statement
    assert (await _counts(db))["journal"] == 3
    with trio.fail_after(1):
        await state.lease_journal.wait()  # the rest is left marked as waiting
    # Calm again: the rest goes, two a statement, without asking whether to stop at the end.
    assert await lease_journal.derive_pending(state, lambda: False) == 3
    assert await _counts(db) == {"journal": 0, "history": 5, "intervals": 5, "events": 5}
