"""Full garbage collections are off while the DHCP server is at its ceiling
(workers/gc_pacer), for at most STORM_HOLD_SECONDS a storm, and back on after it or when the
pacer stops. The ceiling signal is a flag the test sets (runtime.dhcp_at_ceiling has its own
test); the collector's real thresholds are what is checked."""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from ipamd.workers import gc_pacer
from ipamd.workers.storm import STORM_HOLD_SECONDS, STORM_LOOK_SECONDS


class Signal:
    def __init__(self) -> None:
        self.busy = False

    def __call__(self) -> bool:
        return self.busy


@pytest.fixture(autouse=True)
def _thresholds_restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def _full_collections_on() -> bool:
    return gc.get_threshold()[2] == gc_pacer._THRESHOLDS[2]


async def _pacer(nursery: trio.Nursery, busy: bool) -> Signal:
    """A pacer running on a signal set to ``busy``; the signal, to change."""
    signal = Signal()
    signal.busy = busy
    await nursery.start(functools.partial(gc_pacer.run, None, at_ceiling=signal))
    return signal


async def test_full_collections_wait_out_a_storm(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        signal = await _pacer(nursery, busy=False)
        await trio.sleep(1)
        assert _full_collections_on()
        signal.busy = True
        await trio.sleep(2 * STORM_LOOK_SECONDS)
        assert not _full_collections_on()
        assert gc.get_threshold()[:2] == gc_pacer._THRESHOLDS[:2]  # the young still collect
        signal.busy = False
        await trio.sleep(2 * STORM_LOOK_SECONDS)
        assert _full_collections_on()
        nursery.cancel_scope.cancel()


async def test_a_long_storm_is_held_at_most_the_limit(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        await _pacer(nursery, busy=True)
        await trio.sleep(STORM_HOLD_SECONDS - 1)
        assert not _full_collections_on()
        await trio.sleep(2)
        assert _full_collections_on()  # the storm goes on, the collector as usual
        await trio.sleep(30)
        assert _full_collections_on()
        nursery.cancel_scope.cancel()


async def test_stopping_the_pacer_turns_them_back_on(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        await _pacer(nursery, busy=True)
        await trio.sleep(1)
        assert not _full_collections_on()
        nursery.cancel_scope.cancel()
    assert _full_collections_on()
