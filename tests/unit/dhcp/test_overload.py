"""Overload without sockets or database: Discovers are shed while packets wait too long,
Requests are committed first, and ops that waited past the stale bound are never written."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import asyncpg
import pytest
import trio
import trio.testing

from ipamd.core.histogram import FINE_SECONDS_BUCKETS, Histogram
from ipamd.dhcp import dispatch as dispatch_mod
from ipamd.dhcp import options as o
from ipamd.dhcp import pacing as pacing_mod
from ipamd.dhcp.committer import CAREFUL_SECONDS, OVERLAP_MAX, Committer
from ipamd.dhcp.context import Exchange
from ipamd.dhcp.engine import DhcpReply
from ipamd.dhcp.leasecache import Lease
from ipamd.dhcp.pacing import REPLY_BURST
from ipamd.dhcp.sockets import ancillary
from tests.unit.dhcp.envs import RELAY, SERVER, SUBNET
from tests.unit.dhcp.packets import ip, mac_bytes, request
from tests.unit.dhcp.test_server_packets import make_server


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(dispatch_mod, "_monotonic", fake)
    monkeypatch.setattr(pacing_mod, "_monotonic", fake)
    return fake


def _discover(n: int) -> bytes:
    return request(o.DISCOVER, mac_bytes(n), giaddr=RELAY).to_bytes()


def _select(n: int) -> bytes:
    """A new client's Request for a free address: it becomes a grant op (an insert)."""
    return request(o.REQUEST, mac_bytes(n), giaddr=RELAY, requested=f"10.77.1.{100 + n}",
                   server_id=SERVER).to_bytes()


def _renew(server: Any, n: int, address: str) -> bytes:
    """A renewing client's Request; its lease is in the cache, so it becomes an Ack op."""
    key = b"\x01" + mac_bytes(n)
    server.cache.put(Lease(uuid.uuid4(), SUBNET, ip(address), "active", key, 4e9))
    return request(o.REQUEST, mac_bytes(n), giaddr=RELAY, ciaddr=address).to_bytes()


def test_discovers_are_shed_while_commits_wait_and_requests_still_queue(clock: Clock) -> None:
    server, ep = make_server()
    server.dispatch.overload_seconds = 0.5
    server.on_datagram(_select(1), RELAY, 67, ep)
    assert server.committer.queued == 1
    clock.now += 0.4  # the queued op has waited 0.4 s: not yet overloaded
    server.on_datagram(_discover(2), RELAY, 67, ep)
    assert server.counters.sent[o.OFFER] == 1 and server.counters.drops["overload"] == 0
    clock.now += 0.2  # the oldest has waited 0.6 s
    server.on_datagram(_discover(3), RELAY, 67, ep)
    assert server.counters.drops["overload"] == 1
    assert server.counters.received[o.DISCOVER] == 2
    server.on_datagram(_renew(server, 4, "10.77.1.108"), RELAY, 67, ep)
    server.on_datagram(_select(5), RELAY, 67, ep)
    assert server.committer.queued == 3  # the Requests are served
    # Option 53 not first: recognised after parsing, shed all the same.
    head = _discover(6)[:240]
    data = (head + bytes((o.HOSTNAME, 3)) + b"pc6" + bytes((53, 1, o.DISCOVER, 255))).ljust(300,
                                                                                      b"\0")
    server.on_datagram(data, RELAY, 67, ep)
    assert server.counters.drops["overload"] == 2 and server.counters.sent[o.OFFER] == 1


def test_a_long_socket_queue_sheds_discovers(clock: Clock) -> None:
    server, ep = make_server()
    server.dispatch.overload_seconds = 0.5
    ep.queue_age = 0.8  # what the receive loop last sampled
    server.on_datagram(_discover(1), RELAY, 67, ep)
    assert server.counters.drops["overload"] == 1 and not ep.sock.sent
    ep.queue_age = 0.0  # drained
    server.on_datagram(_discover(1), RELAY, 67, ep)
    assert server.counters.sent[o.OFFER] == 1


def test_stale_ops_give_back_their_address_and_client(clock: Clock) -> None:
    server, ep = make_server()
    server.on_datagram(_select(1), RELAY, 67, ep)
    (tx,) = server.committer._take()
    assert len(server.env.pending_in(SUBNET)) == 1 and len(server.dispatch.busy) == 1
    server._stale([tx])
    assert server.counters.drops["stale"] == 1
    assert not server.env.pending_in(SUBNET) and not server.dispatch.busy
    # The client's retransmission is served as new.
    server.on_datagram(_select(1), RELAY, 67, ep)
    assert server.committer.queued == 1 and server.counters.drops["client_busy"] == 0


def _tx(mtype: int, born: float) -> Exchange:
    return SimpleNamespace(mtype=mtype, born=born, op=None)  # type: ignore[return-value]


def _committer(stale: float = 0.0) -> tuple[Committer, list[Sequence[Exchange]]]:
    dropped: list[Sequence[Exchange]] = []
    committer = Committer(None, lambda batch, ok: None, batch_max=3,  # type: ignore[arg-type]
                          window_seconds=0.0, workers=1, stale_seconds=stale,
                          on_stale=dropped.append)
    return committer, dropped


def test_ops_go_into_batches_first_come_first_served() -> None:
    committer, _ = _committer()  # (only Requests, Releases, Declines: Offers need no write)
    r1, r2, r3, r4 = (_tx(o.REQUEST, 1.0), _tx(o.RELEASE, 2.0), _tx(o.REQUEST, 3.0),
                      _tx(o.DECLINE, 4.0))
    for tx in (r1, r2, r3, r4):
        committer.submit(tx)
    assert committer.overloaded(10.0, 8.9) and not committer.overloaded(10.0, 9.0)  # r1 9 s
    assert committer._take() == [r1, r2, r3]  # batch_max
    assert committer._take() == [r4]
    assert committer.queued == 0 and not committer.overloaded(10.0, 0.0)


def test_the_time_a_commit_stalled_is_not_counted_as_overload(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One slow WAL flush holds every queued op back without the server being past its
    ceiling: that time is not counted, for at most half the stale bound. Ops that waited
    while batches landed in good time are overload."""
    clock = [100.0]
    monkeypatch.setattr("ipamd.dhcp.committer.time.monotonic", lambda: clock[0])
    committer, _ = _committer(stale=2.0)  # a stall is ridden out for at most 1 s
    committer._flight_since.append(100.0)  # a batch went in at 100.0 and stays there
    committer.submit(_tx(o.REQUEST, 100.01))
    assert not committer.overloaded(100.6, 0.5)  # 0.59 s waited, all of it behind the stall
    clock[0] = 100.7
    committer._landed(100.0)  # it lands: its stall still counts for the ops behind it
    assert committer._stalls == [(100.0, 100.7)]
    assert not committer.overloaded(101.0, 0.5)  # 0.99 s waited, 0.69 of it stalled
    assert committer.overloaded(101.3, 0.5)  # 0.6 s not stalled
    committer._take()
    committer._flight_since.append(101.39)  # the next batch: in and out in 10 ms
    clock[0] = 101.4
    committer._landed(101.39)
    assert committer._stalls == []  # no queued op saw it: forgotten

    # A stall is ridden out for at most half the stale bound.
    committer._flight_since.append(200.0)
    committer.submit(_tx(o.REQUEST, 200.0))
    assert not committer.overloaded(201.4, 0.5)  # 1.4 s waited, 1.0 of it forgiven
    assert committer.overloaded(201.6, 0.5)
    committer._flight_since.clear()
    committer._take()

    # A commit in good time is no stall, even a slow one of a big batch on a busy machine
    # (80 ms): a queue that waits behind such commits is overload.
    committer._flight_since.append(299.92)
    committer.submit(_tx(o.REQUEST, 299.45))
    assert committer.stalled(299.45, 300.0) == 0.0
    assert committer.overloaded(300.0, 0.5)
    # Two stalls that overlap (two batches held by one flush) count once.
    committer._flight_since.clear()
    committer._stalls = [(299.5, 299.8), (299.6, 299.9)]
    assert committer.stalled(299.45, 300.0) == pytest.approx(0.4)
    assert not committer.overloaded(300.0, 0.5)  # 0.55 s waited, 0.4 stalled


def test_a_lone_op_is_committed_at_once_a_burst_is_gathered() -> None:
    committer = Committer(None, lambda batch, ok: None, batch_max=3,  # type: ignore[arg-type]
                          window_seconds=0.001, workers=2)
    committer.submit(_tx(o.REQUEST, 10.0))
    assert not committer.gathers()  # light load: the window would only delay the answer
    committer.submit(_tx(o.REQUEST, 10.0005))  # half a window later: a burst
    assert committer.gathers()
    committer.submit(_tx(o.REQUEST, 10.0006))
    assert not committer.gathers()  # batch_max is there already: nothing to wait for
    committer._take()
    committer.submit(_tx(o.REQUEST, 11.0))  # a second later: sparse again
    assert not committer.gathers()
    committer.submit(_tx(o.REQUEST, 12.0))  # sparse, but two wait already: a burst too
    assert committer.gathers()
    committer._take()
    committer.submit(_tx(o.REQUEST, 13.0))
    committer.in_flight = 1  # ... unless another batch is in the database meanwhile
    assert committer.gathers()


def test_saturated_means_every_worker_busy_and_ops_waiting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The "at its ceiling" figure (runtime.dhcp_at_ceiling): busy workers alone are no
    ceiling (a free worker commits a lone op at once); ops waiting for one are."""
    now = [100.0]
    monkeypatch.setattr("ipamd.dhcp.committer.time.perf_counter", lambda: now[0])
    committer = Committer(None, lambda batch, ok: None, batch_max=3,  # type: ignore[arg-type]
                          window_seconds=0.0, workers=2)
    committer.in_flight = 2  # (as two workers' batches in the database)
    committer._mark()
    now[0] += 1.0
    assert committer.saturated_seconds() == 0.0  # both busy, nobody waiting
    committer.submit(_tx(o.REQUEST, 101.0))
    now[0] += 0.5
    assert committer.saturated_seconds() == 0.5  # an op waits for a worker: the stretch so far
    committer.in_flight = 1  # a worker is back...
    committer._take()  # ...and takes it
    now[0] += 2.0
    assert committer.saturated_seconds() == 0.5
    committer.submit(_tx(o.REQUEST, 103.0))  # a free worker: no waiting, no ceiling
    now[0] += 1.0
    assert committer.saturated_seconds() == 0.5


def test_a_batch_goes_in_beside_a_small_one_not_beside_a_big_one() -> None:
    committer = Committer(None, lambda batch, ok: None, batch_max=8,  # type: ignore[arg-type]
                          window_seconds=0.0, workers=2)
    assert committer.may_start()  # the database is idle
    committer.in_flight, committer._flight_ops = 1, OVERLAP_MAX
    assert committer.may_start()  # light load: a lone commit is mostly its WAL flush
    committer._flight_ops = OVERLAP_MAX + 1
    assert not committer.may_start()  # under load: the ops wait for that batch to land
    for k in range(8):
        committer.submit(_tx(o.REQUEST, 10.0 + k))
    assert committer.may_start()  # a full batch waits already: waiting cannot fill it more
    committer.in_flight = 2
    assert not committer.may_start()  # no free worker


class _Sessions:
    """The commit sessions, each statement as slow as the test says: ``landed[k].set()``
    ends the k-th. ``started`` counts the statements started (sent at once, as the committer sends
    every first attempt); ``run`` is its retry."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.landed: list[trio.Event] = []
        self.started = 0

    def _sent(self, ops: list[Any]) -> trio.Event:
        self.sizes.append(len(ops))
        self.landed.append(trio.Event())
        return self.landed[-1]

    def start(self, fn: Any, ops: list[Any], trusting: bool, then: Any = None) -> Any:
        self.started += 1
        landed = self._sent(ops)

        class Started:  # ``then`` runs before the waiter goes on, as in db.bridge
            async def result(self) -> bool:
                await landed.wait()
                if then is not None:
                    then(False)
                return False

        return Started()

    async def run(self, fn: Any, ops: list[Any], trusting: bool) -> bool:
        await self._sent(ops).wait()
        return False


async def test_under_load_the_batches_go_in_one_at_a_time() -> None:
    committer = Committer(None, lambda batch, ok: None, batch_max=64,  # type: ignore[arg-type]
                          window_seconds=0.0, workers=2)
    sessions = committer._sessions = _Sessions()  # type: ignore[assignment]
    sizes, landed = sessions.sizes, sessions.landed
    async with trio.open_nursery() as nursery:
        for _ in range(2):
            nursery.start_soon(committer._worker)
        await trio.testing.wait_all_tasks_blocked()
        committer.submit(_tx(o.REQUEST, 1.0))
        await trio.testing.wait_all_tasks_blocked()
        committer.submit(_tx(o.REQUEST, 2.0))
        await trio.testing.wait_all_tasks_blocked()
        assert sizes == [1, 1]  # the second did not wait for the first: both in flight
        for event in landed:
            event.set()
        await trio.testing.wait_all_tasks_blocked()
        for k in range(OVERLAP_MAX + 1):
            committer.submit(_tx(o.REQUEST, 3.0 + k))
        await trio.testing.wait_all_tasks_blocked()
        assert sizes == [1, 1, OVERLAP_MAX + 1] and committer.in_flight == 1
        for k in range(3):  # they come while a big batch is in the database...
            committer.submit(_tx(o.REQUEST, 9.0 + k))
            await trio.testing.wait_all_tasks_blocked()
        assert sizes == [1, 1, OVERLAP_MAX + 1] and committer.queued == 3  # ...and wait
        landed[-1].set()
        await trio.testing.wait_all_tasks_blocked()
        assert sizes == [1, 1, OVERLAP_MAX + 1, 3]  # one batch, once the last one landed
        landed[-1].set()
        await trio.testing.wait_all_tasks_blocked()
        assert committer.queued == 0 and committer.in_flight == 0
        nursery.cancel_scope.cancel()


async def test_the_receive_loop_starts_the_batch_of_the_worker_it_woke() -> None:
    done: list[int] = []
    committer = Committer(None, lambda batch, ok: done.append(len(batch)),  # type: ignore[arg-type]
                          batch_max=64, window_seconds=0.0, workers=2)
    sessions = committer._sessions = _Sessions()  # type: ignore[assignment]
    async with trio.open_nursery() as nursery:
        for _ in range(2):
            nursery.start_soon(committer._worker)
        await trio.testing.wait_all_tasks_blocked()
        committer.kick()  # nothing queued: nothing to start
        assert sessions.sizes == []
        for k in range(3):  # one pass of the receive loop read three Requests
            committer.submit(_tx(o.REQUEST, 1.0 + k))
        assert sessions.sizes == []  # a worker was woken; it has not run yet
        committer.kick()
        assert sessions.sizes == [3] and sessions.started == 1  # sent before it runs
        assert committer.in_flight == 1 and committer.queued == 0
        committer.kick()  # once: the woken worker has its batch
        committer.submit(_tx(o.REQUEST, 5.0))  # comes before the worker ran: waits for it
        await trio.testing.wait_all_tasks_blocked()
        # The worker took the started batch; the op waits (the batch in is not a lone op).
        assert sessions.sizes == [3] and sessions.started == 1 and committer.queued == 1
        sessions.landed[0].set()
        await trio.testing.wait_all_tasks_blocked()
        assert sessions.sizes == [3, 1] and sessions.started == 2
        sessions.landed[1].set()
        await trio.testing.wait_all_tasks_blocked()
        assert done == [3, 1] and committer.in_flight == 0
        nursery.cancel_scope.cancel()


async def test_after_a_refused_grant_batches_are_written_careful_for_a_while(
        monkeypatch: pytest.MonkeyPatch) -> None:
    committer = Committer(None, lambda batch, ok: None, batch_max=8,  # type: ignore[arg-type]
                          window_seconds=0.0, workers=1)
    now = [100.0]
    monkeypatch.setattr("ipamd.dhcp.committer.time.monotonic", lambda: now[0])
    trusted: list[bool] = []
    refuse = [False]

    class Sessions:  # leasestore.commit's answer: did a unique index refuse an insert
        async def run(self, fn: Any, ops: list[Any], trusting: bool) -> bool:
            trusted.append(trusting)
            return refuse[0]

    committer._sessions = Sessions()  # type: ignore[assignment]
    assert await committer._commit([]) and trusted == [True]
    refuse[0] = True  # another node got there first
    assert await committer._commit([]) and trusted == [True, True]
    refuse[0] = False
    now[0] += CAREFUL_SECONDS - 0.1
    assert await committer._commit([]) and trusted[-1] is False
    now[0] += 0.2
    assert await committer._commit([]) and trusted[-1] is True


def test_ops_past_the_stale_bound_are_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    committer, dropped = _committer(stale=2.0)
    monkeypatch.setattr("ipamd.dhcp.committer.time.monotonic", lambda: 100.0)
    old, fresh, retried = _tx(o.DISCOVER, 97.0), _tx(o.REQUEST, 99.0), _tx(o.DISCOVER, 90.0)
    assert committer._fresh([fresh, old, retried]) == [fresh]
    assert dropped == [[old, retried]]
    assert committer._fresh([fresh]) == [fresh] and len(dropped) == 1


def test_ancillary_reads_the_local_address_and_the_arrival_time() -> None:
    # in_pktinfo: ifindex, ipi_spec_dst (the local address), ipi_addr (the header destination)
    pktinfo = struct.pack("@i4s4s", 2, socket.inet_aton(SERVER), socket.inet_aton("10.77.255.255"))
    stamp = struct.pack("@qq", 1_700_000_000, 250_000_000)
    local, arrived = ancillary([(socket.IPPROTO_IP, 8, pktinfo), (socket.SOL_SOCKET, 35, stamp)])
    assert local == ip(SERVER)
    assert arrived == pytest.approx(1_700_000_000.25)
    assert ancillary([]) == (0, 0.0)


def _committed_replies(ep: Any, count: int) -> list[Any]:
    """``count`` Offers as a committed batch would leave them for sending."""
    txs = []
    for n in range(count):
        tx = Exchange(request(o.DISCOVER, mac_bytes(n), giaddr=RELAY), o.DISCOVER, ip(RELAY), 67, ep)
        txs.append((tx, DhcpReply(bytes([n % 256]) * 300, o.OFFER, (ip(RELAY), 67))))
    return txs


# A gap of 1/1024 s keeps the fake clock's sums exact; at 8,192 requests a second the pace is
# 2.5 times that, 20,480 answers a second: 20 a gap.
GAP = 1 / 1024
RATE = 8192.0


def _pacer(server: Any, ep: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch,
           gaps: Sequence[float] = ()) -> list[int]:
    """Run the pacer with the fake clock: each pause moves it on by the next of ``gaps``
    (then GAP); returns how many answers had left at each pause."""
    seen: list[int] = []
    later = list(gaps)

    async def pause(seconds: float) -> None:
        assert seconds == pacing_mod.GAP_SECONDS
        seen.append(len(ep.sock.sent))
        clock.now += later.pop(0) if later else GAP
        await trio.sleep(0)

    monkeypatch.setattr(pacing_mod, "_pause", pause)
    return seen


async def test_a_small_batch_is_answered_at_once_a_big_one_at_the_pace(
        nursery: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    server, ep = make_server()
    server.dispatch.pacer.request_rate = RATE
    assert server.dispatch.pacer.pace_rate() == 20_480
    server.dispatch.pacer.queued.extend(_committed_replies(ep, 5))
    server.dispatch.pacer.send_queued()
    assert len(ep.sock.sent) == 5 and not server.dispatch.pacer.queued
    assert ep.sock.segmented_sends == 1  # one relay, one size: one send for the five
    seen = _pacer(server, ep, clock, monkeypatch)
    nursery.start_soon(server.dispatch.pacer.run)
    server.dispatch.pacer.queued.extend(_committed_replies(ep, 100))
    server.dispatch.pacer.send_queued()
    assert len(ep.sock.sent) == 5  # left to the pacer
    with trio.fail_after(5):
        while len(ep.sock.sent) < 105:
            await trio.sleep(0)
    # REPLY_BURST first, then what each gap allows at the pace; the last 8 with no pause
    # after them.
    assert seen == [5 + REPLY_BURST, 5 + REPLY_BURST + 20, 5 + REPLY_BURST + 40,
                    5 + REPLY_BURST + 60]
    assert server.counters.sent[o.OFFER] == 105


async def test_a_backlog_drains_at_the_pace_and_a_long_gap_does_not_slow_it(
        nursery: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    server, ep = make_server()
    server.dispatch.pacer.request_rate = RATE
    # A busy event loop stretched the second gap to 4 of them, and the fourth to 64 (62 ms):
    # the pacer sends what the time allows, up to PACE_MAX_SECONDS of it.
    seen = _pacer(server, ep, clock, monkeypatch, gaps=[GAP, 4 * GAP, GAP, 64 * GAP])
    nursery.start_soon(server.dispatch.pacer.run)
    server.dispatch.pacer.queued.extend(_committed_replies(ep, 2000))
    server.dispatch.pacer.send_queued()
    with trio.fail_after(5):
        while len(ep.sock.sent) < 2000:
            await trio.sleep(0)
    steps = [b - a for a, b in zip([0, *seen], seen, strict=False)]
    capped = int(20_480 * pacing_mod.PACE_MAX_SECONDS)
    assert steps[:5] == [REPLY_BURST, 20, 80, 20, capped]
    assert set(steps[5:]) == {20}  # never a burst of a quarter of the backlog
    assert sum(steps) + (2000 - seen[-1]) == 2000


def test_the_pace_follows_the_rate_of_requests_with_a_floor(clock: Clock) -> None:
    server, ep = make_server()
    dispatch = server.dispatch
    pacer = dispatch.pacer
    assert pacer.pace_rate() == pacing_mod.PACE_MIN  # nothing has come in yet
    for n in range(10):
        server.on_datagram(_select(n), RELAY, 67, ep)
    assert pacer.submitted == 10 == server.committer.queued
    clock.now += 0.01
    dispatch.committed([], True)  # the window is not over: the rate stands
    assert pacer.request_rate == 0
    clock.now += 0.09
    dispatch.committed([], True)
    assert pacer.request_rate == pytest.approx(100)  # 10 in 0.1 s
    assert pacer.pace_rate() == pacing_mod.PACE_MIN
    # A stalled commit: no batch finishes for half a second while requests keep coming, and
    # the first batch after it measures them all, not the stall.
    pacer.submitted += 5000  # (as _handle counts each request it submits)
    clock.now += 0.5
    dispatch.committed([], True)
    assert pacer.request_rate == pytest.approx(10_000)
    assert pacer.pace_rate() == pytest.approx(pacing_mod.PACE_FACTOR * 10_000)


class _Op:
    def reset(self) -> None:
        pass


@pytest.mark.parametrize("retry_commits", [True, False], ids=["retried", "failed"])
async def test_a_batch_whose_first_attempt_fails_is_answered_once_by_its_worker(
        retry_commits: bool) -> None:
    answers: list[tuple[int, bool]] = []
    committer = Committer(None, lambda batch, ok: answers.append((len(batch), ok)),  # type: ignore[arg-type]
                          batch_max=8, window_seconds=0.0, workers=1)
    retries: list[int] = []

    class Sessions:
        def start(self, fn: Any, ops: list[Any], trusting: bool, then: Any = None) -> Any:
            class Crossed:  # another transaction crossed this one: ``then`` is not called
                async def result(self) -> bool:
                    await trio.lowlevel.checkpoint()
                    raise asyncpg.DeadlockDetectedError("deadlock detected")
            return Crossed()

        async def run(self, fn: Any, ops: list[Any], trusting: bool) -> bool:
            retries.append(len(ops))
            if not retry_commits:
                raise asyncpg.DeadlockDetectedError("deadlock detected")
            return False

    committer._sessions = Sessions()  # type: ignore[assignment]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(committer._worker)
        await trio.testing.wait_all_tasks_blocked()
        for k in range(2):
            tx = _tx(o.REQUEST, 1.0 + k)
            tx.op = _Op()  # type: ignore[assignment]
            committer.submit(tx)
        committer.kick()
        await trio.testing.wait_all_tasks_blocked()
        assert retries == [2]  # one retry, by the worker
        assert answers == [(2, retry_commits)]  # answered once either way
        assert committer.in_flight == 0 and committer._flight_ops == 0
        nursery.cancel_scope.cancel()


def test_each_batch_records_how_long_its_oldest_op_waited_to_go_in() -> None:
    """dhcp.commit_wait (/metrics' ipamd_dhcp_commit_wait_seconds): from the oldest op's
    packet (its ``born``, time.monotonic) to its batch's statement, once per batch."""
    waits = Histogram(FINE_SECONDS_BUCKETS)
    committer = Committer(None, lambda batch, ok: None, batch_max=3,  # type: ignore[arg-type]
                          window_seconds=0.0, workers=2, waits=waits)
    now = time.monotonic()
    # A retried pick goes to the back with its first time: the oldest need not be first.
    for born in (now - 1.0, now - 10.0, now - 2.0):
        committer.submit(_tx(o.REQUEST, born))
    committer._went_in(committer._take())
    assert waits.count == 1
    assert 10.0 <= waits.total < 11.0  # the oldest op's wait, not the first's (1 s)
    assert waits.counts[-1] == 1  # beyond the largest bucket (10 s)
    unobserved = Committer(None, lambda batch, ok: None, batch_max=3,  # type: ignore[arg-type]
                           window_seconds=0.0, workers=2)  # (DHCPv6's: no histogram)
    unobserved.submit(_tx(o.REQUEST, now))
    unobserved._went_in(unobserved._take())
    assert unobserved.in_flight == 1
