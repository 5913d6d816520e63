"""The crossing from trio to asyncpg's asyncio loop, which trio drives (db/aio_loop.py)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest
import trio
import trio.testing

from ipamd.db import aio_loop

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")


async def _where(value: int) -> tuple[int, str, bool]:
    await asyncio.sleep(0)
    return value * 2, threading.current_thread().name, asyncio.get_running_loop().is_running()


async def test_a_unit_runs_on_the_loop_in_trios_thread_and_returns_its_value() -> None:
    async with aio_loop.open_loop():
        value, thread, running = await aio_loop.call(_where, 21)
    assert (value, thread, running) == (42, threading.current_thread().name, True)
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # only inside the loop's turns


async def _now() -> str:
    return "at once"


async def test_a_unit_without_io_returns_at_once() -> None:
    async with aio_loop.open_loop():
        assert await aio_loop.call(_now) == "at once"


async def test_the_loops_timers_fire_without_other_io() -> None:
    async def nap() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(0.05)
        return loop.time() - start

    async with aio_loop.open_loop():
        with trio.fail_after(5):
            slept = await aio_loop.call(nap)
    assert 0.04 <= slept < 2


async def test_a_nearer_timer_armed_beside_a_far_one_fires_on_time() -> None:
    # An asyncpg pool keeps a timer minutes out per released connection: the clock waits
    # for that one, and a nearer timer armed by a later unit must bring its deadline forward
    # (fails with the clock left at the hour).
    async def nap() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(0.05)
        return loop.time() - start

    async def arm() -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(3600, lambda: None)

    async with aio_loop.open_loop() as driven:
        await trio.testing.wait_all_tasks_blocked()  # the clock waits, with no timer yet
        far = await aio_loop.call(arm)
        assert driven._clock_when == far.when()  # now for the hour's timer
        with trio.fail_after(5):
            slept = await aio_loop.call(nap)
        far.cancel()
    assert 0.04 <= slept < 2


async def test_a_timer_armed_in_a_turn_the_driver_took_fires() -> None:
    # The unit resumes in a turn woken by I/O (the executor's answer through the self-pipe)
    # and then arms a timer: the clock must hear of it (fails by hanging without).
    async def read_then_nap() -> str:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, time.sleep, 0.01)
        await asyncio.sleep(0.05)
        return "slept"

    async with aio_loop.open_loop():
        with trio.fail_after(5):
            assert await aio_loop.call(read_then_nap) == "slept"


async def test_work_finished_on_another_thread_wakes_the_loop() -> None:
    # asyncpg resolves host names in the default executor: the answer comes back through
    # call_soon_threadsafe (the loop's self-pipe, one of its epoll's descriptors).
    async def in_executor() -> str:
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0.05)
        return "back"

    async with aio_loop.open_loop():
        with trio.fail_after(5):
            assert await aio_loop.call(in_executor) == "back"


async def _fail() -> None:
    await asyncio.sleep(0)
    raise KeyError("no such row")


async def test_a_units_exception_reaches_the_caller_as_it_was() -> None:
    async with aio_loop.open_loop():
        with pytest.raises(KeyError, match="no such row"):
            await aio_loop.call(_fail)


async def _read_request_id() -> str:
    return request_id.get("unset")


async def test_the_unit_sees_the_callers_context_variables() -> None:
    async with aio_loop.open_loop():
        request_id.set("req-7")
        assert await aio_loop.call(_read_request_id) == "req-7"


async def test_a_cancelled_crossing_returns_only_after_the_unit_has_ended() -> None:
    ended = threading.Event()
    started = threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.05)  # a rollback's round trip, say
            ended.set()

    async with aio_loop.open_loop():
        with trio.move_on_after(0.2) as scope:
            await aio_loop.call(slow)
        assert scope.cancelled_caught
        assert started.is_set()
        assert ended.is_set()  # not merely asked to stop: done with its connection


async def test_a_unit_that_finishes_despite_the_cancel_still_gives_its_result() -> None:
    async def finishes() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "kept"  # e.g. a commit that had already gone out
        return "slept"

    async with aio_loop.open_loop():
        with trio.CancelScope() as scope:
            scope.deadline = trio.current_time() + 0.1
            result = await aio_loop.call(finishes)
        assert result == "kept"


async def test_units_run_concurrently_on_the_one_loop() -> None:
    gate = asyncio.Event()
    results: list[str] = []

    async def waiter() -> None:
        await gate.wait()
        results.append("waiter")

    async def opener() -> None:
        gate.set()
        results.append("opener")

    async with aio_loop.open_loop(), trio.open_nursery() as nursery:
        nursery.start_soon(aio_loop.call, waiter)
        await trio.sleep(0.05)
        nursery.start_soon(aio_loop.call, opener)
    assert sorted(results) == ["opener", "waiter"]


async def test_leaving_the_loop_cancels_what_is_still_running_on_it() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async with aio_loop.open_loop() as driven:
        driven.soon(lambda: driven.loop.create_task(forever()))
        await trio.sleep(0.05)
    assert cancelled.is_set()
    assert driven.loop.is_closed()


async def test_a_crossing_after_the_loop_closed_fails_clearly() -> None:
    async with aio_loop.open_loop() as driven:
        pass
    with pytest.raises(aio_loop.LoopClosed):
        await driven.call(_now)


async def test_a_crossing_without_an_open_loop_says_so() -> None:
    with pytest.raises(RuntimeError, match="no asyncio loop is open"):
        await aio_loop.call(_where, 1)


async def test_clean_up_crosses_after_the_body_was_cancelled() -> None:
    # The appliance's services close their pools in shielded finally blocks while the whole
    # run is being cancelled: the loop must still turn for them.
    async def tidy() -> str:
        await asyncio.sleep(0.02)  # a Terminate message and the server's goodbye
        return "closed"

    tidied: list[str] = []
    with trio.CancelScope() as outer:
        async with aio_loop.open_loop():
            try:
                outer.cancel()
                await trio.sleep(1)
            finally:
                with trio.CancelScope(shield=True), trio.fail_after(5):
                    tidied.append(await aio_loop.call(tidy))
    assert tidied == ["closed"]


async def test_a_started_unit_takes_its_first_steps_before_start_returns() -> None:
    # What the DHCP committer relies on: a batch's statement is sent from synchronous code.
    steps: list[str] = []

    async def unit() -> str:
        steps.append("first")
        await asyncio.sleep(0.01)
        steps.append("after")
        return "done"

    async with aio_loop.open_loop() as driven:
        crossing = driven.start(unit)
        assert steps == ["first"]
        with trio.fail_after(5):
            assert await crossing.result() == "done"
    assert steps == ["first", "after"]


@pytest.mark.parametrize("armed", [True, False], ids=["on-a-timer", "on-a-future"])
async def test_a_unit_past_its_timeout_is_cancelled_and_fails_with_a_timeout_error(
        armed: bool) -> None:
    # Waiting on a timer, the clock waits with a deadline; on a bare future, nothing does.
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            if armed:
                await asyncio.sleep(3600)
            else:
                await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async with aio_loop.open_loop() as driven:
        with trio.fail_after(5):
            started = trio.current_time()
            with pytest.raises(TimeoutError, match=r"did not finish a unit of work in 0\.3 s"):
                await driven.call(forever, timeout=0.3)
            assert 0.3 <= trio.current_time() - started < 0.3 + 2 * aio_loop.WATCH_SECONDS
        assert cancelled == [True]
        assert not driven._timed  # nothing left for the watchdog
        assert await driven.call(_now, timeout=0.3) == "at once"
