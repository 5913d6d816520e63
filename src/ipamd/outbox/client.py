"""The delivery HTTP client: httpx requests over one long-lived transport per scheduler.

Built once when the scheduler starts (one SSLContext, keep-alive connections, at most one
per worker: lanes.py) and closed when it stops; a client or an SSLContext per delivery
would cost milliseconds each (CA store loading, new connections and TLS handshakes).

- Connections go only to addresses vetted at connect time (backend.py), while TLS and the
  Host header keep the URL's name.
- Each httpx.Request goes straight to the transport: httpx.AsyncClient's layers (auth,
  redirects, cookies, environment proxies, header merging) would do nothing here but cost
  about a sixth of a delivery's CPU. So redirects are returned, never followed; there is no
  proxy; nothing is decompressed (no Accept-Encoding); no cookie is ever kept, so one
  receiver cannot set what another receives.
- The response body is streamed and read up to a cap; a connection left with unread bytes
  is closed rather than reused.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import certifi
import httpx

from ipamd.outbox.backend import VettingBackend
from ipamd.outbox.errors import reason_of
from ipamd.outbox.transport import VettedTransport
from ipamd.outbox.urlguard import Resolver, Target

# An idle receiver connection is kept this long (receivers often close theirs sooner; a
# connection the receiver closed is noticed before reuse and replaced).
KEEPALIVE_SECONDS = 30.0
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# No Accept-Encoding: nothing is ever decompressed (a small reply cannot expand to gigabytes).
_DEFAULT_HEADERS = ((b"Accept", b"*/*"),)


def ssl_context(ca_file: str = "") -> ssl.SSLContext:
    """The public CAs (certifi and the system store) plus the operator's own CA, if any."""
    context = ssl.create_default_context(cafile=certifi.where())
    context.load_default_certs()
    if ca_file:
        path = Path(ca_file)
        if not path.is_file():
            raise FileNotFoundError(f"outbox.ca_file {ca_file} does not exist")
        context.load_verify_locations(cafile=str(path))
    return context


class HttpError(Exception):
    """The exchange failed below HTTP (connect, TLS, connection lost, protocol error)."""


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: httpx.Headers
    body: bytes  # at most the cap
    truncated: bool  # the body went on beyond the cap (and was not read)


class Client:
    def __init__(
        self, resolver: Resolver, ssl_context: ssl.SSLContext, *, connections: int,
        timeout: float, keepalive_expiry: float = KEEPALIVE_SECONDS,
    ) -> None:
        self.backend = VettingBackend(resolver)
        ssl_context.set_alpn_protocols(["http/1.1"])
        self.transport = VettedTransport(self.backend, ssl_context, connections=connections,
                                         keepalive_expiry=keepalive_expiry)
        self._extensions = {"timeout": httpx.Timeout(timeout).as_dict()}

    @property
    def connections_opened(self) -> int:
        return self.backend.connections_opened

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def post(
        self, target: Target, headers: Mapping[str, str], body: bytes, max_body: int
    ) -> Response:
        """POST `body`, read at most `max_body` bytes of the reply.

        The caller bounds the whole call in time (trio cancellation); UrlRefused and
        ResolveError from the connect-time check pass through, other failures are HttpError.
        """
        return await self.request("POST", target, headers, body, max_body)

    async def request(
        self, method: str, target: Target, headers: Mapping[str, str], body: bytes,
        max_body: int,
    ) -> Response:
        """As ``post``, with another method (the PowerDNS API's GET and PATCH)."""
        url = target.url  # parsed once per URL (urlguard.check_url is cached)
        # Raw header pairs with Host and Content-Length set: httpx then takes them as they
        # are (building them from a dict and `content=` costs ~50 µs a request, ~6 %).
        raw = [(b"Host", url.netloc), *_DEFAULT_HEADERS,
               *((name.encode("ascii"), value.encode("ascii"))
                 for name, value in headers.items()),
               (b"Content-Length", b"%d" % len(body))]
        request = httpx.Request(method, url, headers=raw, stream=httpx.ByteStream(body),
                                extensions=self._extensions)
        try:
            response = await self.transport.handle_async_request(request)
            try:
                received = bytearray()
                truncated = False
                async for chunk in response.aiter_raw():
                    room = max_body - len(received)
                    if len(chunk) > room:
                        received += chunk[:room]
                        truncated = True
                        break  # closing with bytes unread closes the connection
                    received += chunk
            finally:
                await response.aclose()
        except httpx.TimeoutException as error:
            raise HttpError(f"timed out ({type(error).__name__})") from None
        except httpx.RemoteProtocolError as error:
            raise HttpError(str(error)) from None  # http11 says what was wrong with it
        except httpx.LocalProtocolError as error:
            raise HttpError(f"cannot send the request: {error}") from None
        except httpx.TransportError as error:
            raise HttpError(reason_of(error)) from None
        reason = _CONTROL.sub("", response.reason_phrase)[:100]
        return Response(response.status_code, reason, response.headers, bytes(received),
                        truncated)
