"""Opens the delivery client's connections: TCP only to addresses just vetted.

The URL's host name is resolved with the outbox Resolver (hosts file, then DNS), the whole
answer is refused if any address is forbidden (urlguard), and the connection goes to a
vetted address. TLS then runs over it with server_hostname set to the name, so SNI, the
certificate check and the Host header keep the name while no second lookup happens between
the check and the connect (no DNS-rebinding window). A kept-alive connection was vetted
when it was opened.
"""

from __future__ import annotations

import ssl

import httpx

from ipamd.outbox import sockstream
from ipamd.outbox.errors import reason_of
from ipamd.outbox.sockstream import SocketStream
from ipamd.outbox.urlguard import Resolver


class VettingBackend:
    """UrlRefused and ResolveError from the check pass through untouched."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.connections_opened = 0

    async def connect(self, scheme: str, host: str, port: int, ssl_context: ssl.SSLContext,
                      timeout: float | None) -> SocketStream:
        """A connection to the first vetted address that answers, TLS set up for https."""
        addresses = await self.resolver.vetted(host, port)
        errors: list[str] = []
        for address in addresses:
            try:
                stream = await sockstream.connect(str(address), port, timeout)
            except httpx.ConnectTimeout:
                errors.append(f"{address}: no connection within {timeout:g} s"
                              if timeout is not None else f"{address}: timed out")
                continue
            except httpx.ConnectError as error:
                errors.append(f"{address}: {reason_of(error)}")
                continue
            self.connections_opened += 1
            if scheme == "https":
                # SNI and the certificate check use the URL's name, never the address.
                return await stream.start_tls(ssl_context, server_hostname=host,
                                              timeout=timeout)
            return stream
        raise httpx.ConnectError("cannot connect: " + "; ".join(errors))
