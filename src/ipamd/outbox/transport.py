"""An httpx transport over httpcore connections that use the vetting backend.

httpx.AsyncHTTPTransport builds its httpcore pool itself and takes no network backend, so
this is the same thin adapter over the public httpcore API: lanes of keep-alive HTTP/1.1
connections (lanes.py), never a proxy, httpcore errors raised as their httpx counterparts.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterator

import httpcore
import httpx

from ipamd.outbox.lanes import LanePool

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


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
            httpcore.UnsupportedProtocol) as error:
        for core, mapped in _ERRORS:
            if isinstance(error, core):
                raise mapped(str(error)) from error
        raise  # pragma: no cover - every httpcore error class is listed above


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        closer = getattr(self._stream, "aclose", None)
        if closer is not None:
            await closer()


class VettedTransport(httpx.AsyncBaseTransport):
    """At most `limits.max_connections` connections, each kept alive up to keepalive_expiry."""

    def __init__(
        self, backend: httpcore.AsyncNetworkBackend, ssl_context: ssl.SSLContext,
        limits: httpx.Limits,
    ) -> None:
        def lane() -> httpcore.AsyncConnectionPool:
            return httpcore.AsyncConnectionPool(
                ssl_context=ssl_context, max_connections=1, max_keepalive_connections=1,
                keepalive_expiry=limits.keepalive_expiry, http1=True, http2=False,
                network_backend=backend,
            )

        self.pool = LanePool(limits.max_connections or 1, lane)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self.pool.handle_async_request(core)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status, headers=response.headers, stream=_Body(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()
