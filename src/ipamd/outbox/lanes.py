"""Keep-alive connections for the delivery client: one lane per outbox worker.

A lane holds at most one httpcore HTTP/1.1 connection and serves one request at a time.
httpcore's AsyncConnectionPool re-scans every connection (and every queued request) a few
times per request, with a quadratic keep-alive check, a poll() per idle connection and a
shielded close scope, and under concurrency hands one idle connection to several requests
that then retry (encode/httpcore#1035, #1110); measured here that bookkeeping cost more CPU
than the request. With a lane per worker none of it is needed: a request takes a free lane,
preferring one whose kept-alive connection already goes to its origin, and the lane's
connection is reused while it stays open and unexpired, else replaced.

A request that fails before any reply on a kept-alive connection (the receiver closed it as
the request went out: its idle timeout) is sent once more, on a new connection.
"""

from __future__ import annotations

import math
import ssl
import time
from collections.abc import Callable

import httpcore
import trio

OriginKey = tuple[bytes, bytes, int]
Release = Callable[[], None]
# What a dead kept-alive connection looks like when a request is written to it.
_STALE = (httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError)


def _key(origin: httpcore.Origin) -> OriginKey:
    return (origin.scheme, origin.host, origin.port)


class _Lane:
    def __init__(self) -> None:
        self.connection: httpcore.AsyncHTTP11Connection | None = None
        self.origin: OriginKey | None = None  # where its connection goes, if any
        self.used = 0.0

    def reusable_for(self, origin: httpcore.Origin) -> bool:
        c = self.connection
        return (c is not None and c.can_handle_request(origin) and c.is_idle()
                and not c.has_expired())

    async def drop(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.aclose()


class LanePool:
    def __init__(self, lanes: int, backend: httpcore.AsyncNetworkBackend,
                 ssl_context: ssl.SSLContext, keepalive_expiry: float | None) -> None:
        self.backend = backend
        self.ssl_context = ssl_context
        self.keepalive_expiry = keepalive_expiry
        self._lanes = [_Lane() for _ in range(lanes)]
        self._free = list(self._lanes)
        self._slots = trio.Semaphore(lanes)

    async def send(self, request: httpcore.Request) -> tuple[httpcore.Response, Release]:
        """The response (its body not read yet) and the call that gives the lane back: make
        it once the body is closed; until then the connection belongs to this request."""
        timeouts = request.extensions.get("timeout", {})
        try:
            self._slots.acquire_nowait()  # the usual case: a lane per worker
        except trio.WouldBlock:
            wait = timeouts.get("pool")
            with trio.move_on_after(math.inf if wait is None else wait) as waited:
                await self._slots.acquire()
            if waited.cancelled_caught:
                raise httpcore.PoolTimeout(f"no free connection within {wait:g} s") from None
        origin = request.url.origin
        lane = self._take(_key(origin))
        try:
            reused = lane.reusable_for(origin)
            connection = lane.connection if reused else await self._connect(lane, request)
            assert connection is not None
            try:
                response = await connection.handle_async_request(request)
            except _STALE:
                if not reused:
                    raise
                connection = await self._connect(lane, request)
                response = await connection.handle_async_request(request)
        except BaseException:
            self._give_back(lane)
            raise
        return response, lambda: self._give_back(lane)

    async def _connect(self, lane: _Lane, request: httpcore.Request
                       ) -> httpcore.AsyncHTTP11Connection:
        await lane.drop()
        url, timeouts = request.url, request.extensions.get("timeout", {})
        host = url.host.decode("ascii")
        port = url.port or (443 if url.scheme == b"https" else 80)
        stream = await self.backend.connect_tcp(host, port, timeout=timeouts.get("connect"))
        if url.scheme == b"https":
            # SNI and the certificate check use the URL's name, never the vetted address.
            stream = await stream.start_tls(self.ssl_context, server_hostname=host,
                                            timeout=timeouts.get("connect"))
        lane.connection = httpcore.AsyncHTTP11Connection(
            origin=url.origin, stream=stream, keepalive_expiry=self.keepalive_expiry)
        return lane.connection

    def _take(self, origin: OriginKey) -> _Lane:
        # Free lanes are few (one per worker): a scan is cheaper than any index. The warmest
        # connection to this origin; else an unused lane; else the one idle the longest.
        same = [lane for lane in self._free if lane.origin == origin]
        if same:
            best = max(same, key=lambda lane: lane.used)
        else:
            best = next((lane for lane in self._free if lane.origin is None), None) or min(
                self._free, key=lambda lane: lane.used)
        self._free.remove(best)
        best.origin = origin
        return best

    def _give_back(self, lane: _Lane) -> None:
        lane.used = time.monotonic()
        if lane.connection is not None and lane.connection.is_closed():
            lane.connection = None
        self._free.append(lane)
        self._slots.release()

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane.drop()

    @property
    def connections(self) -> int:
        """Open connections (closed ones are dropped as lanes are given back)."""
        return sum(1 for lane in self._lanes
                   if lane.connection is not None and not lane.connection.is_closed())
