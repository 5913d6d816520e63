"""The httpcore network backend of the delivery client: TCP only to addresses just vetted.

httpcore asks the backend for a TCP connection to the URL's host name. Here the name is
resolved with the outbox Resolver (hosts file, then DNS), the whole answer is refused if any
address is forbidden (urlguard), and the connection goes to a vetted address. httpcore then
runs TLS over it with server_hostname set to the name, so SNI, the certificate check and the
Host header keep the name while no second lookup happens between the check and the connect
(no DNS-rebinding window). A kept-alive connection was vetted when it was opened.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpcore
import trio

from ipamd.outbox import sockstream
from ipamd.outbox.errors import reason_of
from ipamd.outbox.urlguard import Resolver

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class VettingBackend(httpcore.AsyncNetworkBackend):
    """Connects with sockstream (TLS by the ssl module on the socket); UrlRefused and
    ResolveError pass through untouched."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.connections_opened = 0

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None,
        local_address: str | None = None, socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.resolver.vetted(host, port)
        errors: list[str] = []
        for address in addresses:
            try:
                stream = await sockstream.connect(str(address), port, timeout,
                                                  socket_options or ())
            except httpcore.ConnectTimeout:
                errors.append(f"{address}: no connection within {timeout:g} s"
                              if timeout is not None else f"{address}: timed out")
                continue
            except httpcore.ConnectError as error:
                errors.append(f"{address}: {reason_of(error)}")
                continue
            self.connections_opened += 1
            return stream
        raise httpcore.ConnectError("cannot connect: " + "; ".join(errors))

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("deliveries never use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)
