"""Connections spread evenly over the API worker processes (runtime.api_in_main_process).

The workers accept from the same listening sockets, bound once by the main process. Left to
the kernel the spread is poor either way: on one shared socket the worker that waited last
wins nearly every accept, and with a socket per worker (SO_REUSEPORT) the kernel picks by a
hash of the client's address and port, so 8 keep-alive clients came out 4/4 in about a
quarter of runs and 6/2, 7/1 or 8/0 otherwise. A closed loop's figures follow the split:
with 8 clients at 1,000 requests/s, p50 3.9 ms at 4/4, 7.8 ms at 6/2, 13.4 ms at 8/0
(bench/bench_api.py on the 2-core VM), because one worker can use only one core.

So each worker counts its open connections in a slot of a small shared segment (a memfd the
main process makes and every worker inherits) and, through a BalancedListener around each
listening socket (api/serve.py, given the share), accepts only while it holds no more than
the least-loaded serving worker; one with more waits, re-checking every POLL_SECONDS, and
the next connection goes to another. A worker already waiting in accept when another's
connection closes stops waiting within POLL_SECONDS. A worker that holds no connection
cannot be over its share, so while it holds none it does not poll at all (an idle appliance's
two workers polled 50 times a second each, ~430 µs of CPU per wake-up measured on the 2-core
VM: ~4 % of a core between them, for nothing). A slot is -1 while its worker does not
serve (not yet started, stopped, or died: the main process marks it so when the process
ends), and such a slot is never waited for.
"""

from __future__ import annotations

import mmap
import os

import trio

# How soon a worker notices that its share changed (another's connection closed). A new
# connection never waits for it: the least-loaded worker is waiting in accept.
POLL_SECONDS = 0.02
NOT_SERVING = -1
_SLOT = 8  # bytes: one signed 64-bit count per worker


class ConnectionShare:
    """The shared counts: made by the main process, opened by each worker with its slot."""

    def __init__(self, fd: int, workers: int, slot: int | None = None) -> None:
        self.fd = fd
        self.workers = workers
        self.slot = slot
        self._map = mmap.mmap(fd, workers * _SLOT)
        self.counts = memoryview(self._map).cast("q")
        self._holding: trio.Event | None = None  # set when this worker takes a connection

    @classmethod
    def create(cls, workers: int) -> ConnectionShare:
        """The main process's segment, every slot not serving; ``fd`` goes to each worker."""
        fd = os.memfd_create("ipamd-api-connections")  # each worker gets it by pass_fds
        os.ftruncate(fd, workers * _SLOT)
        share = cls(fd, workers)
        for slot in range(workers):
            share.counts[slot] = NOT_SERVING
        return share

    def retire(self, slot: int) -> None:
        """A worker's process ended: its connections went with it; nobody waits for it."""
        self.counts[slot] = NOT_SERVING

    def close(self) -> None:
        self.counts.release()
        self._map.close()
        os.close(self.fd)

    # ------------------------------------------------------------------ a worker's side

    def start_serving(self) -> None:
        self.counts[self._own] = 0

    def stop_serving(self) -> None:
        self.counts[self._own] = NOT_SERVING

    @property
    def _own(self) -> int:
        assert self.slot is not None, "a worker's share has its slot"
        return self.slot

    def over_share(self) -> bool:
        """Does this worker hold more connections than some other serving worker?"""
        counts, own = self.counts, self._own
        mine = counts[own]
        return any(0 <= counts[i] < mine for i in range(self.workers) if i != own)

    async def my_turn(self) -> None:
        # Polled: the counts are other processes' (no trio.Event reaches across).
        while self.over_share():  # noqa: ASYNC110
            await trio.sleep(POLL_SECONDS)

    async def until_holding(self) -> None:
        """Until this worker holds a connection (at once when it does): before that, no
        other worker's count can put it over its share."""
        while self.counts[self._own] <= 0:
            if self._holding is None or self._holding.is_set():
                self._holding = trio.Event()
            await self._holding.wait()

    def opened(self) -> None:
        self.counts[self._own] += 1  # one writer per slot: this worker's one thread
        if self._holding is not None:
            self._holding.set()

    def closed(self) -> None:
        self.counts[self._own] -= 1


class CountedStream(trio.abc.HalfCloseableStream):
    """An accepted connection that gives its count back when closed (once)."""

    def __init__(self, stream: trio.SocketStream, share: ConnectionShare) -> None:
        self._stream = stream
        self._share: ConnectionShare | None = share
        self.socket = stream.socket  # api/http1.py and api/conncap.py read the peer from it

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self._stream.receive_some(max_bytes)

    async def aclose(self) -> None:
        share, self._share = self._share, None
        if share is not None:
            share.closed()
        await self._stream.aclose()


class BalancedListener(trio.abc.Listener[CountedStream]):
    """A listening socket this worker accepts from only while it is not over its share."""

    def __init__(self, inner: trio.SocketListener, share: ConnectionShare) -> None:
        self._inner = inner
        self._share = share
        self.socket = inner.socket

    async def accept(self) -> CountedStream:
        while True:
            await self._share.my_turn()
            stream: trio.SocketStream | None = None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._give_way, nursery.cancel_scope)
                stream = await self._inner.accept()
                nursery.cancel_scope.cancel()
            if stream is not None:
                self._share.opened()
                return CountedStream(stream, self._share)

    async def _give_way(self, accepting: trio.CancelScope) -> None:
        """Stop waiting in accept once this worker is over its share. (A connection the
        accept already took is kept: the cancel reaches only the wait.)"""
        share = self._share
        while not share.over_share():
            # Another process's count can only put this worker over its share while it
            # holds connections; it takes one in this process (another listener's accept).
            await share.until_holding()
            if not share.over_share():
                await trio.sleep(POLL_SECONDS)
        accepting.cancel()

    async def aclose(self) -> None:
        await self._inner.aclose()

