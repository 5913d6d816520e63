"""The lease journal's deriver holds off while the DHCP server is at its ceiling
(workers/storm.StormHold): until the storm ends, and never more than
STORM_HOLD_SECONDS a storm. The ceiling signal here is a flag the test sets (runtime's
runtime.dhcp_at_ceiling has its own test; a storm cannot be made to order in a unit test)."""

from __future__ import annotations

import trio
import trio.testing

from ipamd.workers.storm import STORM_HOLD_SECONDS, StormHold


class Signal:
    def __init__(self) -> None:
        self.busy = False

    def __call__(self) -> bool:
        return self.busy


async def _held_for(hold: StormHold) -> float:
    start = trio.current_time()
    await hold.wait()
    return trio.current_time() - start


async def test_no_storm_no_wait(autojump_clock: trio.testing.MockClock) -> None:
    assert await _held_for(StormHold(Signal())) == 0


async def test_held_until_the_storm_ends(autojump_clock: trio.testing.MockClock) -> None:
    signal = Signal()
    signal.busy = True
    hold = StormHold(signal)

    async def calm_after(seconds: float) -> None:
        await trio.sleep(seconds)
        signal.busy = False

    async with trio.open_nursery() as nursery:
        nursery.start_soon(calm_after, 7.0)
        held = await _held_for(hold)
    assert 7.0 <= held < 7.5


async def test_a_long_storm_is_held_once_for_at_most_the_limit(
        autojump_clock: trio.testing.MockClock) -> None:
    signal = Signal()
    signal.busy = True
    hold = StormHold(signal)
    held = await _held_for(hold)
    assert STORM_HOLD_SECONDS <= held < STORM_HOLD_SECONDS + 0.5
    # The same storm goes on: derived through as usual, not held again...
    assert await _held_for(hold) == 0
    await trio.sleep(30)
    assert await _held_for(hold) == 0
    # ...until it has ended: the next storm is held again.
    signal.busy = False
    assert await _held_for(hold) == 0
    signal.busy = True

    async def calm_after(seconds: float) -> None:
        await trio.sleep(seconds)
        signal.busy = False

    async with trio.open_nursery() as nursery:
        nursery.start_soon(calm_after, 3.0)
        assert 3.0 <= await _held_for(hold) < 3.5
