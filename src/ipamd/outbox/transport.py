"""An httpx transport over the delivery lanes: keep-alive HTTP/1.1 to vetted addresses only.

httpx.AsyncHTTPTransport builds its httpcore pool itself and takes no network backend, so
this is the same thin adapter over the public httpcore API: lanes of keep-alive HTTP/1.1
connections (lanes.py), never a proxy, httpcore errors raised as their httpx counterparts.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator

import httpcore
import httpx

from ipamd.outbox.lanes import LanePool, Release

# Most specific first: the first match names the httpx error.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProtocolError, httpx.ProtocolError),
)
_CORE_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
                httpcore.UnsupportedProtocol)


def _as_httpx(error: Exception) -> httpx.TransportError:
    for core, mapped in _ERRORS:
        if isinstance(error, core):
            return mapped(str(error))
    raise AssertionError(f"unmapped httpcore error {error!r}")  # every class is listed


class _Body(httpx.AsyncByteStream):
    """The response body; closing it gives the lane back (its connection idle, or closed
    if the body was not read to the end)."""

    def __init__(self, stream: AsyncIterable[bytes], release: Release) -> None:
        self._stream = stream
        self._release: Release | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except _CORE_ERRORS as error:
            raise _as_httpx(error) from error

    async def aclose(self) -> None:
        try:
            closer = getattr(self._stream, "aclose", None)
            if closer is not None:
                await closer()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class VettedTransport(httpx.AsyncBaseTransport):
    """At most `connections` connections, each kept alive up to keepalive_expiry."""

    def __init__(
        self, backend: httpcore.AsyncNetworkBackend, ssl_context: ssl.SSLContext, *,
        connections: int, keepalive_expiry: float | None,
    ) -> None:
        self.pool = LanePool(max(1, connections), backend, ssl_context, keepalive_expiry)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions,
        )
        try:
            response, release = await self.pool.send(core)
        except _CORE_ERRORS as error:
            raise _as_httpx(error) from error
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status, headers=response.headers,
            stream=_Body(response.stream, release), extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()
