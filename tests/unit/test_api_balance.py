"""The API workers' connection share (api/balance.py): who may accept next."""

from __future__ import annotations

import trio

from ipamd.api.balance import NOT_SERVING, ConnectionShare


def _worker(main: ConnectionShare, slot: int) -> ConnectionShare:
    # As a worker process opens it: the same memfd, its own slot.
    share = ConnectionShare(main.fd, main.workers, slot)
    share.start_serving()
    return share


def test_the_least_loaded_worker_accepts_and_ties_both_may() -> None:
    main = ConnectionShare.create(3)
    try:
        a, b, c = (_worker(main, n) for n in range(3))
        assert not any(w.over_share() for w in (a, b, c))  # 0/0/0: anyone
        a.opened()
        assert a.over_share() and not b.over_share() and not c.over_share()
        b.opened()
        c.opened()
        assert not any(w.over_share() for w in (a, b, c))  # 1/1/1
        a.closed()
        assert b.over_share() and c.over_share() and not a.over_share()
    finally:
        main.close()


def test_a_worker_that_does_not_serve_is_never_waited_for() -> None:
    main = ConnectionShare.create(2)
    try:
        a = _worker(main, 0)
        a.opened()
        assert main.counts[1] == NOT_SERVING  # not started yet
        assert not a.over_share()
        b = _worker(main, 1)
        assert a.over_share()  # b serves now, with none
        b.opened()
        b.opened()
        main.retire(1)  # b's process ended: its connections went with it
        assert not a.over_share()
    finally:
        main.close()


async def test_a_worker_over_its_share_waits_until_it_is_not() -> None:
    main = ConnectionShare.create(2)
    try:
        a, b = _worker(main, 0), _worker(main, 1)
        a.opened()
        turn = trio.Event()

        async def wait_turn() -> None:
            await a.my_turn()
            turn.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_turn)
            await trio.sleep(0.05)
            assert not turn.is_set()  # 1 against 0
            b.opened()
            with trio.fail_after(2):
                await turn.wait()
    finally:
        main.close()


async def test_a_worker_holding_none_waits_without_polling_until_it_takes_one() -> None:
    main = ConnectionShare.create(2)
    try:
        a, b = _worker(main, 0), _worker(main, 1)
        b.opened()
        b.opened()
        holding = trio.Event()

        async def wait_holding() -> None:
            await a.until_holding()
            holding.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_holding)
            # Whatever the others' counts do, a worker with none is never over its share:
            # nothing wakes it (an idle appliance's workers sleep).
            b.closed()
            b.closed()
            await trio.sleep(0.05)
            assert not holding.is_set() and not a.over_share()
            a.opened()  # another listener's accept took one in this process
            with trio.fail_after(2):
                await holding.wait()
        with trio.fail_after(1):
            await a.until_holding()  # holds one: at once
    finally:
        main.close()
