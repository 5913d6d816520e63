"""The httpx transport of the delivery client: httpx requests over the delivery lanes.

httpx.AsyncHTTPTransport builds its own httpcore pool and takes no network backend; this
transport (httpx's documented extension point) sends each request on a lane (lanes.py):
keep-alive HTTP/1.1 (http11.py) to vetted addresses only, never a proxy.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import httpx

from ipamd.outbox import http11
from ipamd.outbox.backend import VettingBackend
from ipamd.outbox.lanes import Lane, LanePool, Origin, Timeouts

_DEFAULT_PORTS = {"https": 443, "http": 80}


class _Body(httpx.AsyncByteStream):
    """The reply's body as it arrives; closing it gives the lane back (the connection kept
    if the body was read to its end, closed if not)."""

    def __init__(self, lane: Lane, read_timeout: float | None) -> None:
        self._lane: Lane | None = lane
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self._lane is not None:
            chunk = await self._lane.receive_body(self._read_timeout)
            if not chunk:
                return
            yield chunk

    async def aclose(self) -> None:
        lane, self._lane = self._lane, None
        if lane is not None:
            await lane.release()


class VettedTransport(httpx.AsyncBaseTransport):
    """At most `connections` connections, each kept alive up to keepalive_expiry."""

    def __init__(self, backend: VettingBackend, ssl_context: ssl.SSLContext, *,
                 connections: int, keepalive_expiry: float | None) -> None:
        self.pool = LanePool(max(1, connections), backend, ssl_context, keepalive_expiry)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"deliveries use http(s), not {url.scheme!r}")
        given = request.extensions.get("timeout", {})
        timeouts = Timeouts(connect=given.get("connect"), read=given.get("read"),
                            write=given.get("write"), pool=given.get("pool"))
        origin = Origin(url.scheme, url.raw_host.decode("ascii"),
                        url.port or _DEFAULT_PORTS[url.scheme])
        head = http11.request_head(request.method.encode("ascii"), url.raw_path,
                                   request.headers.raw)
        body = await request.aread()
        reply, lane = await self.pool.send(origin, head, body, timeouts)
        return httpx.Response(
            status_code=reply.status, headers=reply.headers,
            stream=_Body(lane, timeouts.read), request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reply.reason},
        )

    async def aclose(self) -> None:
        await self.pool.aclose()
