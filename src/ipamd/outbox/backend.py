"""The httpcore network backend of the delivery client: TCP only to addresses just vetted.

httpcore asks the backend for a TCP connection to the URL's host name. Here the name is
resolved with the outbox Resolver (hosts file, then DNS), the whole answer is refused if any
address is forbidden (urlguard), and the connection goes to a vetted address. httpcore then
runs TLS over it with server_hostname set to the name, so SNI, the certificate check and the
Host header keep the name while no second lookup happens between the check and the connect
(no DNS-rebinding window). A kept-alive connection was vetted when it was opened.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

from ipamd.outbox.errors import reason_of
from ipamd.outbox.urlguard import Resolver

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class OneWriteStream(httpcore.AsyncNetworkStream):
    """Holds httpcore's writes until it reads, so a request leaves in one write.

    httpcore writes a request's head and its body separately: two TLS records and two TCP
    segments, each a wake-up and a decryption for the receiver. A delivery is small, and
    nothing is read before the request is complete, so the writes wait for the first read
    (or for FLUSH_BYTES, to bound memory).
    """

    FLUSH_BYTES = 65_536

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self.inner = inner
        self._pending = bytearray()

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._pending += buffer
        if len(self._pending) >= self.FLUSH_BYTES:
            await self._flush(timeout)

    async def _flush(self, timeout: float | None) -> None:
        data = bytes(self._pending)
        self._pending.clear()
        await self.inner.write(data, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._pending:
            # As httpcore does: the receiver may have answered (and closed) already.
            with contextlib.suppress(httpcore.WriteError):
                await self._flush(timeout)
        return await self.inner.read(max_bytes, timeout)

    async def aclose(self) -> None:
        self._pending.clear()
        await self.inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._pending:
            await self._flush(timeout)
        return OneWriteStream(await self.inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class VettingBackend(httpcore.AsyncNetworkBackend):
    """Wraps httpcore's trio backend; UrlRefused and ResolveError pass through untouched."""

    def __init__(
        self, resolver: Resolver, inner: httpcore.AsyncNetworkBackend | None = None
    ) -> None:
        self.resolver = resolver
        self.inner = inner if inner is not None else httpcore.TrioBackend()
        self.connections_opened = 0

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None,
        local_address: str | None = None, socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.resolver.vetted(host, port)
        errors: list[str] = []
        for address in addresses:
            try:
                stream = await self.inner.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore.ConnectTimeout:
                errors.append(f"{address}: no connection within {timeout:g} s"
                              if timeout is not None else f"{address}: timed out")
                continue
            except httpcore.ConnectError as error:
                errors.append(f"{address}: {reason_of(error)}")
                continue
            self.connections_opened += 1
            return OneWriteStream(stream)
        raise httpcore.ConnectError("cannot connect: " + "; ".join(errors))

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("deliveries never use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
