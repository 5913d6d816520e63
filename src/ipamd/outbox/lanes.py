"""Keep-alive connections for the delivery client: one lane per outbox worker.

A lane holds at most one HTTP/1.1 connection (http11.py) and serves one request at a time,
so no request ever waits behind another on a connection and no pool bookkeeping runs per
request (httpcore's pool re-scans every connection a few times per request and, under
concurrency, hands one idle connection to several requests: encode/httpcore#1035, #1110).
A request takes a free lane, preferring one whose kept-alive connection already goes to
its origin; the lane's connection is reused while it stays open and unexpired, else
replaced. A request that fails before any reply on a kept-alive connection (the receiver
closed it as the request went out: its idle timeout) is sent once more, on a new one.
"""

from __future__ import annotations

import math
import ssl
import time
from dataclasses import dataclass

import httpx
import trio

from ipamd.outbox.backend import VettingBackend
from ipamd.outbox.http11 import Connection, ResponseHead

# What a dead kept-alive connection looks like when a request is written to it.
_STALE = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int


@dataclass(frozen=True)
class Timeouts:
    connect: float | None
    read: float | None
    write: float | None
    pool: float | None


class Lane:
    def __init__(self, pool: LanePool) -> None:
        self._pool = pool
        self.connection: Connection | None = None
        self.used = 0.0

    @property
    def origin(self) -> object:
        """Where its connection goes; None without one."""
        return None if self.connection is None else self.connection.origin

    async def receive_body(self, timeout: float | None) -> bytes:
        """The next piece of the current reply's body; b"" at its end."""
        assert self.connection is not None
        return await self.connection.receive_body(timeout)

    async def release(self) -> None:
        """Done with the reply: the connection stays for the next request if the reply was
        read to its end and the receiver keeps it, and the lane is free again."""
        try:
            if self.connection is not None:
                await self.connection.finish()
        finally:
            self._pool._give_back(self)

    async def _drop(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.aclose()


class LanePool:
    def __init__(self, lanes: int, backend: VettingBackend, ssl_context: ssl.SSLContext,
                 keepalive_expiry: float | None) -> None:
        self.backend = backend
        self.ssl_context = ssl_context
        self.keepalive_expiry = keepalive_expiry
        self._lanes = [Lane(self) for _ in range(lanes)]
        self._free = list(self._lanes)
        self._slots = trio.Semaphore(lanes)

    async def send(self, origin: Origin, head: bytes, body: bytes, timeouts: Timeouts
                   ) -> tuple[ResponseHead, Lane]:
        """The reply's head and the lane holding its connection: read the body from the
        lane, then release it (always: it is the lane's way back)."""
        try:
            self._slots.acquire_nowait()  # the usual case: a lane per worker
        except trio.WouldBlock:
            wait = timeouts.pool
            with trio.move_on_after(math.inf if wait is None else wait) as waited:
                await self._slots.acquire()
            if waited.cancelled_caught:
                raise httpx.PoolTimeout(f"no free connection within {wait:g} s") from None
        lane = self._take(origin)
        try:
            reused = (lane.origin == origin and lane.connection is not None
                      and lane.connection.reusable())
            connection = lane.connection if reused else await self._connect(lane, origin,
                                                                             timeouts)
            assert connection is not None
            try:
                reply = await connection.send(head, body, write_timeout=timeouts.write,
                                              read_timeout=timeouts.read)
            except _STALE:
                if not reused:
                    raise
                connection = await self._connect(lane, origin, timeouts)
                reply = await connection.send(head, body, write_timeout=timeouts.write,
                                              read_timeout=timeouts.read)
        except BaseException:
            self._give_back(lane)
            raise
        return reply, lane

    async def _connect(self, lane: Lane, origin: Origin, timeouts: Timeouts) -> Connection:
        await lane._drop()
        stream = await self.backend.connect(origin.scheme, origin.host, origin.port,
                                            self.ssl_context, timeouts.connect)
        lane.connection = Connection(stream, origin, self.keepalive_expiry)
        return lane.connection

    def _take(self, origin: Origin) -> Lane:
        # Free lanes are few (one per worker): a scan is cheaper than any index. The warmest
        # connection to this origin; else an unused lane; else the one idle the longest.
        same = [lane for lane in self._free if lane.origin == origin]
        if same:
            best = max(same, key=lambda lane: lane.used)
        else:
            best = next((lane for lane in self._free if lane.origin is None), None) or min(
                self._free, key=lambda lane: lane.used)
        self._free.remove(best)
        return best

    def _give_back(self, lane: Lane) -> None:
        lane.used = time.monotonic()
        if lane.connection is not None and lane.connection.closed:
            lane.connection = None
        self._free.append(lane)
        self._slots.release()

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane._drop()

    @property
    def connections(self) -> int:
        """Open connections (closed ones are dropped as lanes are given back)."""
        return sum(1 for lane in self._lanes
                   if lane.connection is not None and not lane.connection.closed)
