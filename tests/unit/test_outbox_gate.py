"""The gate a scheduler's claims pass (outbox/gate.py): free while idle; one row per trickle
interval while busy, none at all with no trickle; free again the moment it is idle."""

from __future__ import annotations

import trio
import trio.testing

from ipamd.outbox.gate import Gate


async def _claim(gate: Gate, results: list[int | None]) -> None:
    """A claimer asking the gate, as the scheduler does before each claim."""
    results.append(await gate.allowance())


async def test_idle_gate_never_waits() -> None:
    gate = Gate(trickle_per_second=10)
    with trio.fail_after(0.001):  # (virtual time: the autojump clock would jump, not wait)
        assert await gate.allowance() is None


async def test_busy_gate_lets_one_row_through_per_interval(autojump_clock: trio.testing.MockClock
                                                           ) -> None:
    gate = Gate(trickle_per_second=4)
    gate.set_busy(True)
    began = trio.current_time()
    assert [await gate.allowance() for _ in range(3)] == [1, 1, 1]
    assert trio.current_time() - began == 0.75


async def test_busy_gate_without_trickle_waits_until_idle(autojump_clock: trio.testing.MockClock
                                                          ) -> None:
    gate = Gate(trickle_per_second=0)
    gate.set_busy(True)
    results: list[int | None] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_claim, gate, results)
        await trio.sleep(3600)
        assert results == []  # an hour of storm: nothing
        gate.set_busy(False)
    assert results == [None]  # idle: the claim goes at once, unlimited


async def test_a_busy_flap_does_not_release_a_waiting_claim(autojump_clock: trio.testing.MockClock
                                                            ) -> None:
    gate = Gate(trickle_per_second=1)
    gate.set_busy(True)
    results: list[int | None] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_claim, gate, results)
        await trio.sleep(0.5)
        gate.set_busy(True)  # told busy again: no change
        await trio.sleep(0.4)
        assert results == []
    assert results == [1]


async def test_a_storm_noticed_within_the_wake_delay_holds_back_the_first_claim(
        autojump_clock: trio.testing.MockClock) -> None:
    """The commit that wakes the scheduler may be a storm's first; the parent says busy a
    sample or two later. The round waits out the wake delay, so its claim is trickled."""
    gate = Gate(trickle_per_second=5, wake_delay=0.1)
    began = trio.current_time()
    results: list[tuple[int | None, float]] = []

    async def claim_round() -> None:
        await gate.after_wake()
        results.append((await gate.allowance(), trio.current_time() - began))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(claim_round)
        await trio.sleep(0.04)
        gate.set_busy(True)
    assert results == [(1, 0.1 + 0.2)]


async def test_a_calm_wake_up_claims_freely_after_the_delay(
        autojump_clock: trio.testing.MockClock) -> None:
    gate = Gate(trickle_per_second=5, wake_delay=0.1)
    began = trio.current_time()
    await gate.after_wake()
    assert await gate.allowance() is None
    assert trio.current_time() - began == 0.1
