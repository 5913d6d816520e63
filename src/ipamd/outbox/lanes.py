"""Keep-alive connections for the delivery client: one single-connection httpcore pool per lane.

httpcore 1.0's AsyncConnectionPool re-scans every connection (and every queued request) a
few times per request, with a quadratic keep-alive check and a poll() per idle connection,
and under concurrency hands one idle connection to several requests that then retry
(encode/httpcore#1035, #1110). Measured here at 16 connections that bookkeeping alone cost
~2 ms of CPU per request. A lane is an httpcore pool of one connection that serves one
request at a time, so httpcore's bookkeeping stays O(1); the lanes (one per outbox worker)
are handed out here, preferring a lane whose kept-alive connection already goes to the
request's origin. A request that fails before any reply on a kept-alive connection (the
receiver closed it as the request went out) is sent once more, on a new connection.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable

import httpcore
import trio

OriginKey = tuple[bytes, bytes, int]


def _key(origin: httpcore.Origin) -> OriginKey:
    return (origin.scheme, origin.host, origin.port)


class _Lane:
    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self.pool = pool
        self.origin: OriginKey | None = None  # where its kept-alive connection goes, if any
        self.used = 0.0


class LanePool:
    def __init__(self, lanes: int, make_pool: Callable[[], httpcore.AsyncConnectionPool]
                 ) -> None:
        self._lanes = [_Lane(make_pool()) for _ in range(lanes)]
        self._free = list(self._lanes)
        self._slots = trio.Semaphore(lanes)

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        try:
            self._slots.acquire_nowait()  # the usual case: a lane per worker
        except trio.WouldBlock:
            timeout = request.extensions.get("timeout", {}).get("pool")
            with trio.move_on_after(math.inf if timeout is None else timeout) as waited:
                await self._slots.acquire()
            if waited.cancelled_caught:
                raise httpcore.PoolTimeout(f"no free connection within {timeout:g} s") from None
        lane = self._take(_key(request.url.origin))
        try:
            origin = request.url.origin
            reused = any(c.can_handle_request(origin) and c.is_idle() and not c.has_expired()
                         for c in lane.pool.connections)
            try:
                response = await lane.pool.handle_async_request(request)
            except (httpcore.RemoteProtocolError, httpcore.ReadError):
                if not reused:
                    raise
                # The receiver closed the kept-alive connection as the request went out
                # (its idle timeout): once more, on a new connection.
                response = await lane.pool.handle_async_request(request)
        except BaseException:
            self._give_back(lane)
            raise
        assert isinstance(response.stream, AsyncIterable)
        return httpcore.Response(
            status=response.status, headers=response.headers,
            content=_LaneBody(response.stream, lambda: self._give_back(lane)),
            extensions=response.extensions,
        )

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
        self._free.append(lane)
        self._slots.release()

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane.pool.aclose()

    @property
    def connections(self) -> int:
        """Open connections (closed and failed ones are dropped as lanes are reused)."""
        return sum(len(lane.pool.connections) for lane in self._lanes)


class _LaneBody:
    """The response body; closing it returns the lane (its connection idle or closed)."""

    def __init__(self, stream: AsyncIterable[bytes], release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            closer = getattr(self._stream, "aclose", None)
            if closer is not None:
                await closer()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()
