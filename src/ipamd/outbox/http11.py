"""The delivery HTTP client: HTTP/1.1 (h1.py) over wire.py connections, with keep-alive.

It connects only to an address the URL guard has just vetted: the name is resolved here,
the whole answer is refused if any address is forbidden, and the TCP connection goes to a
vetted address, while TLS (SNI, certificate check) and the Host header keep the name from
the URL — so a DNS answer cannot change between check and connect. Redirects are returned,
never followed; no proxy is ever used; nothing is decompressed; the response body is read up
to a cap and a connection with more unread is closed rather than reused.

Why not httpx: measured on the 2-core build machine (docs/webhooks.md), httpx with httpcore
spends 1.3 to 3.7 ms of CPU per request (its pool's bookkeeping grows with the number of
connections) against ~0.2 ms for this client, and the outbox must sustain 1,000/s.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence
from pathlib import Path

import certifi
import trio

from ipamd.outbox import h1
from ipamd.outbox.h1 import Response
from ipamd.outbox.urlguard import Resolver, Target
from ipamd.outbox.wire import Wire, open_wire


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
    """The exchange failed below HTTP (connect, TLS, connection closed, protocol error)."""


class _Connection:
    def __init__(self, wire: Wire) -> None:
        self.stream = wire
        self.idle_since = time.monotonic()

    def stale(self, expiry: float) -> bool:
        return time.monotonic() - self.idle_since > expiry or self.stream.stale()

    async def close(self) -> None:
        with trio.CancelScope(shield=True):
            await self.stream.aclose()


class Client:
    """One pool of keep-alive connections per origin (scheme, host, port)."""

    def __init__(
        self, resolver: Resolver, ssl_context: ssl.SSLContext, *, max_idle_per_origin: int = 16,
        idle_expiry: float = 30.0, connect_timeout: float = 10.0,
    ) -> None:
        self.resolver = resolver
        self.ssl_context = ssl_context
        self.max_idle = max_idle_per_origin
        self.idle_expiry = idle_expiry
        self.connect_timeout = connect_timeout
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self.connections_opened = 0

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        pool, self._idle = self._idle, {}
        for connections in pool.values():
            for connection in connections:
                await connection.close()

    async def post(
        self, target: Target, headers: Sequence[tuple[str, str]], body: bytes, max_body: int
    ) -> Response:
        """POST `body`; the caller bounds the whole call in time (trio cancellation)."""
        key = (target.scheme, target.host, target.port)
        reused = await self._checkout(key)
        if reused is not None:
            try:
                return await self._exchange(key, reused, target, headers, body, max_body)
            except _NothingReceived:
                pass  # the server closed the kept-alive connection as we sent: try a fresh one
        fresh = await self._connect(target)
        try:
            return await self._exchange(key, fresh, target, headers, body, max_body)
        except _NothingReceived as error:
            raise HttpError(str(error)) from None

    async def _checkout(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if not connection.stale(self.idle_expiry):
                return connection
            await connection.close()
        return None

    def _checkin(self, key: tuple[str, str, int], connection: _Connection) -> bool:
        idle = self._idle.setdefault(key, [])
        if len(idle) >= self.max_idle:
            return False
        connection.idle_since = time.monotonic()
        idle.append(connection)
        return True

    async def _connect(self, target: Target) -> _Connection:
        with trio.move_on_after(self.connect_timeout) as scope:
            addresses = await self.resolver.vetted(target.host, target.port)
            errors: list[str] = []
            context = self.ssl_context if target.scheme == "https" else None
            for address in addresses:
                try:
                    wire = await open_wire(str(address), target.port, context, target.host)
                except ssl.SSLError as error:
                    raise HttpError(h1.reason_of(error)) from None
                except OSError as error:
                    errors.append(f"{address}: {h1.reason_of(error)}")
                    continue
                self.connections_opened += 1
                return _Connection(wire)
            raise HttpError("cannot connect: " + "; ".join(errors))
        assert scope.cancelled_caught
        raise HttpError(f"cannot connect to {target.host}: no connection within "
                        f"{self.connect_timeout:g} s")

    async def _exchange(
        self, key: tuple[str, str, int], connection: _Connection, target: Target,
        headers: Sequence[tuple[str, str]], body: bytes, max_body: int,
    ) -> Response:
        keep = False
        try:
            try:
                request = h1.encode_request(target.path, target.authority, headers, body)
            except h1.ProtocolError as error:
                raise HttpError(f"cannot send the request: {error}") from None
            # One write: headers and body leave in one TLS record.
            await connection.stream.send_all(request)
            response = await h1.read_response(connection.stream, max_body)
            keep = response.reusable
            return response
        except h1.ConnectionEnded as error:
            raise _NothingReceived(str(error)) from None
        except h1.ProtocolError as error:
            raise HttpError(f"invalid HTTP response: {error}") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as error:
            # Failing on send: a reused connection the receiver had just closed. (Losing it
            # after the response began is a ProtocolError, not retried here.)
            raise _NothingReceived(h1.reason_of(error)) from None
        finally:
            if not (keep and self._checkin(key, connection)):
                await connection.close()


class _NothingReceived(HttpError):
    """Failed before any response byte arrived (a reused connection may be retried once)."""
