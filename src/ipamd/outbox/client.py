"""The delivery HTTP client: one long-lived httpx.AsyncClient per scheduler.

Built once when the scheduler starts (one SSLContext, keep-alive connections, at most one
per worker: lanes.py) and closed when it stops; a client or an SSLContext per delivery
would cost milliseconds each (CA store loading, new connections and TLS handshakes).

- Connections go only to addresses vetted at connect time (backend.py), while TLS and the
  Host header keep the URL's name.
- Redirects are returned, never followed; no proxy (trust_env off, own transport); nothing
  is decompressed (no Accept-Encoding); no cookie is ever kept, so one receiver cannot set
  what another receives.
- The response body is streamed and read up to a cap; a connection left with unread bytes
  is closed by httpcore rather than reused.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


class _NoCookies(httpx.Cookies):
    """Always empty: a receiver's Set-Cookie is never kept (nor parsed)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None

    def set(self, name: str, value: str, domain: str = "", path: str = "/") -> None:
        return None


class _StatelessClient(httpx.AsyncClient):
    """An AsyncClient without a cookie jar: deliveries carry no state from one receiver (or
    one delivery) to the next, and no response pays for cookie parsing."""

    _no_cookies = _NoCookies()

    @property  # type: ignore[override]
    def cookies(self) -> httpx.Cookies:
        return self._no_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        return None


class Client:
    def __init__(
        self, resolver: Resolver, ssl_context: ssl.SSLContext, *, connections: int,
        timeout: float, keepalive_expiry: float = KEEPALIVE_SECONDS,
    ) -> None:
        self.backend = VettingBackend(resolver)
        limits = httpx.Limits(max_connections=connections,
                              max_keepalive_connections=connections,
                              keepalive_expiry=keepalive_expiry)
        self.transport = VettedTransport(self.backend, ssl_context, limits)
        self.http = _StatelessClient(
            transport=self.transport,
            timeout=httpx.Timeout(timeout), follow_redirects=False, trust_env=False,
        )
        del self.http.headers["Accept-Encoding"]

    @property
    def connections_opened(self) -> int:
        return self.backend.connections_opened

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def post(
        self, target: Target, headers: Mapping[str, str], body: bytes, max_body: int
    ) -> Response:
        """POST `body`, read at most `max_body` bytes of the reply.

        The caller bounds the whole call in time (trio cancellation); UrlRefused and
        ResolveError from the connect-time check pass through, other failures are HttpError.
        """
        try:
            async with self.http.stream("POST", target.url, content=body,
                                        headers=headers) as response:
                received = bytearray()
                truncated = False
                async for chunk in response.aiter_raw():
                    room = max_body - len(received)
                    if len(chunk) > room:
                        received += chunk[:room]
                        truncated = True
                        break  # leaving with bytes unread closes the connection
                    received += chunk
        except httpx.TimeoutException as error:
            raise HttpError(f"timed out ({type(error).__name__})") from None
        except httpx.RemoteProtocolError as error:
            raise HttpError(f"invalid HTTP response: {error}") from None
        except httpx.LocalProtocolError as error:
            raise HttpError(f"cannot send the request: {error}") from None
        except httpx.TransportError as error:
            raise HttpError(reason_of(error)) from None
        reason = _CONTROL.sub("", response.reason_phrase)[:100]
        return Response(response.status_code, reason, response.headers, bytes(received),
                        truncated)
