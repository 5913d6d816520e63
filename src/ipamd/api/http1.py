"""HTTP/1.x connections: parsed by llhttp (api/http1_parse.py), each request's app run in
the connection's own task, each response written in one piece where it can be
(api/http1_write.py). api/serve.py accepts the connections and hands each one here.

Not hypercorn's h11 server: ~450 µs of CPU per request before the app did anything, 76 µs
here (docs/DEVELOPING.md, "HTTP/1.x is served by api/http1.py"). TLS offers http/1.1 only
by ALPN: h2 would skip every bound of this layer.

What a client sees is what hypercorn and h11 gave it, and what RFC 9112 asks of a server:
keep-alive (HTTP/1.1, or 1.0 asking for it) up to ``max_requests`` requests, an idle
connection closed after ``idle_timeout`` (which also bounds the wait for a whole head, for
each next piece of a request body, and for a client to take each piece of a response: a
client that stalls mid-body or stops reading is dropped) or at once when the server stops,
`Expect: 100-continue` answered when the app reads the body (api/app.py reads it only once
the request is authorized), `Connection: close` when the connection will close, and the
app told `http.disconnect` when the client goes while it works (looked for from
WATCH_AFTER on). A parser's refusal is answered in the error envelope after the requests
before it, then the connection closes; so does one after an Upgrade request (WebSocket,
h2c: answered as plain HTTP/1.1). HTTP/2 with prior knowledge is refused (400).

Its state: ``Phase`` (IDLE → ACTIVE or LAST per request → CLOSED), ``Peer`` (what the
client can still do), ``BodyState`` and each response's ``ResponseState``: small machines,
each an enum with its table of moves (http1_write.State).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import trio
from hypercorn.config import Config

from ipamd.api.http1_parse import Parser, Refusal, Request, host_of
from ipamd.api.http1_write import (
    HeadFields,
    Response,
    ResponseState,
    State,
    error_body,
    error_start,
    refused_move,
)

log = logging.getLogger("ipamd.api.http1")

Message = dict[str, Any]  # an ASGI message, or an HTTP scope
AsgiApp = Callable[[Message, Callable[[], Awaitable[Message]],
                    Callable[[Message], Awaitable[None]]], Awaitable[None]]

MAX_RECV = 2**16
# A client that goes while the app works is looked for only once the app has had the
# request's body this long (looking from the start cost every request a wait on the socket).
WATCH_AFTER = 0.5
_CLIENT_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class Phase(State):
    """Where the connection is between requests."""

    IDLE = "no request in hand: waiting for the next head"
    ACTIVE = "a request in hand; another may follow on this connection"
    LAST = "a request in hand; the connection closes after its response"
    CLOSED = "no request after this: the connection closes"

    def to(self, new: Phase) -> Phase:
        if new in _PHASE_MOVES[self]:
            return new
        raise refused_move(self, new)


_PHASE_MOVES: Mapping[Phase, frozenset[Phase]] = {
    Phase.IDLE: frozenset({Phase.ACTIVE, Phase.LAST, Phase.CLOSED}),
    Phase.ACTIVE: frozenset({Phase.IDLE, Phase.LAST, Phase.CLOSED}),
    Phase.LAST: frozenset({Phase.CLOSED}),
    Phase.CLOSED: frozenset(),
}


class Peer(State):
    """What the client can still do; it only ever loses."""

    OPEN = "it sends and receives"
    SENT_ALL = "it sent its last byte (or its body stalled): nothing more is read"
    GONE = "a write failed or stalled: nothing more reaches it either"

    def to(self, new: Peer) -> Peer:
        if new in _PEER_MOVES[self]:
            return new
        raise refused_move(self, new)


_PEER_MOVES: Mapping[Peer, frozenset[Peer]] = {
    Peer.OPEN: frozenset({Peer.SENT_ALL, Peer.GONE}),
    Peer.SENT_ALL: frozenset({Peer.GONE}),
    Peer.GONE: frozenset(),
}


class BodyState(State):
    """The request's body as given to the app (each request starts WAITING)."""

    WAITING = "the app has not had its end"
    CONTINUED = "100 Continue was written (once); the app has not had its end"
    GIVEN = "the app has the whole body: its next receive waits for the client to go"

    def to(self, new: BodyState) -> BodyState:
        if new in _BODY_MOVES[self]:
            return new
        raise refused_move(self, new)


_BODY_MOVES: Mapping[BodyState, frozenset[BodyState]] = {
    BodyState.WAITING: frozenset({BodyState.CONTINUED, BodyState.GIVEN}),
    BodyState.CONTINUED: frozenset({BodyState.GIVEN}),
    BodyState.GIVEN: frozenset(),
}


@dataclass(frozen=True, slots=True)
class Http1Settings:
    """What a connection reads of the server's configuration (hypercorn's Config)."""

    idle_timeout: float
    max_requests: int
    max_head: int
    handshake_timeout: float
    server_names: tuple[str, ...]
    root_path: str
    fields: HeadFields

    @classmethod
    def from_config(cls, config: Config) -> Http1Settings:
        extra = tuple(name + b": " + value for name, value in config.response_headers("h11")
                      if name != b"date")  # Server, Alt-Svc (Date: made per response)
        return cls(idle_timeout=config.keep_alive_timeout,
                   max_requests=config.keep_alive_max_requests,
                   max_head=config.h11_max_incomplete_size,
                   handshake_timeout=config.ssl_handshake_timeout,
                   server_names=tuple(config.server_names), root_path=config.root_path,
                   fields=HeadFields(dated=config.include_date_header, extra=extra))


def _address(sock: trio.socket.SocketType, *, peer: bool) -> tuple[str, int] | None:
    """The ASGI scope's client or server: (host, port) of an IP socket, else None."""
    address = sock.getpeername() if peer else sock.getsockname()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        return (address[0], address[1])
    return None


class Http1Connection:
    """One HTTP/1.x connection, from its first request to its close."""

    def __init__(self, app: AsgiApp, settings: Http1Settings, stopping: trio.Event,
                 lifespan_state: dict[str, Any], stream: trio.abc.Stream) -> None:
        self.app = app
        self.settings = settings
        self.stopping = stopping  # the server's: no request after the one in hand
        self.lifespan_state = lifespan_state
        self.stream = stream
        tls = isinstance(stream, trio.SSLStream)
        self.scheme = "https" if tls else "http"
        transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
        sock = getattr(transport, "socket", None)  # a SocketStream's, or balance's
        if not isinstance(sock, trio.socket.SocketType):
            raise OSError("not a socket's connection")
        self.client = _address(sock, peer=True)  # OSError: gone before it was served
        self.server = _address(sock, peer=False)
        self.parsed = Parser(settings.max_head)
        self.phase = Phase.IDLE
        self.peer = Peer.OPEN
        self.requests = 0
        self.idle: trio.CancelScope | None = None  # while waiting for a request's head
        # The request in hand, what the app has of its body, and its response.
        self.request = Request()
        self.body = BodyState.WAITING
        self.body_refusal: Refusal | None = None  # found while the app read the body
        self.response = Response("", "1.1", settings.fields)

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_stop)
                try:
                    await self._serve_requests()
                except _CLIENT_GONE:
                    pass
                except Exception:
                    # A fault here ends this connection, never the API's accept loop.
                    log.exception("HTTP/1.1 connection from %s failed", self.client)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            if self.phase is not Phase.CLOSED:
                self.phase = self.phase.to(Phase.CLOSED)
            with trio.CancelScope(shield=True):
                await close_stream(self.stream)

    # the connection's phase ------------------------------------------------------------

    def _no_more(self) -> None:
        """No request after the one in hand (none in hand: the connection closes)."""
        if self.phase is Phase.IDLE:
            self.phase = self.phase.to(Phase.CLOSED)
        elif self.phase is Phase.ACTIVE:
            self.phase = self.phase.to(Phase.LAST)

    def _lose(self, new: Peer) -> None:
        """The client sent its last byte (SENT_ALL) or can no longer be reached (GONE)."""
        if self.peer is not new and self.peer is not Peer.GONE:
            self.peer = self.peer.to(new)

    async def _watch_stop(self) -> None:
        await self.stopping.wait()
        self._no_more()
        if self.idle is not None:
            self.idle.cancel()

    async def _serve_requests(self) -> None:
        while self.phase is Phase.IDLE and (request := await self._next_request()) is not None:
            await self._serve(request)

    async def _next_request(self) -> Request | None:
        """The next request's head (read until it is in), or None: the client went, was
        idle for idle_timeout, the server stops, or the bytes were refused (answered
        here, after every request before them)."""
        parsed = self.parsed
        with trio.move_on_after(self.settings.idle_timeout) as self.idle:
            while not parsed.ready:
                if parsed.refusal is not None:
                    self.request = Request()  # none in hand: the refusal answers the bytes
                    await self._refuse(parsed.refusal)
                    return None
                if parsed.stopped or self.phase is not Phase.IDLE or (
                        self.peer is not Peer.OPEN and not parsed.waiting):
                    return None
                await self._read()
        self.idle = None
        return parsed.ready.popleft() if parsed.ready else None

    async def _read(self) -> None:
        """Parse what was read and waits, else read once and parse (a refusal is kept in
        ``parsed.refusal``). Called only while the queue has room."""
        if self.parsed.waiting:
            self.parsed.drain()
            return
        try:
            data = await self.stream.receive_some(MAX_RECV)
        except _CLIENT_GONE:
            data = b""
        if not data:
            self._lose(Peer.SENT_ALL)
            return
        self.parsed.feed(data)

    async def _refuse(self, refusal: Refusal) -> None:
        """Answer a request that cannot be served (the connection then closes)."""
        self.response = Response(self.request.method, self.request.version,
                                 self.settings.fields)
        self._no_more()
        await self._send(error_start(refusal.status))
        await self._send(error_body(refusal.status, refusal.message))

    # one request -----------------------------------------------------------------------

    def _begin(self, request: Request) -> None:
        self.request = request
        self.response = Response(request.method, request.version, self.settings.fields)
        self.body = BodyState.WAITING
        self.body_refusal = None
        self.requests += 1
        keep = (request.keep_alive and not request.upgrade
                and self.requests < self.settings.max_requests)
        self.phase = self.phase.to(Phase.ACTIVE if keep else Phase.LAST)

    def _end(self, request: Request) -> None:
        """After the app: IDLE for the next request, or CLOSED. An app that ended
        mid-response leaves the client unable to tell where it ends; a body the app did
        not read to its end would be taken for the next request (api/app.py reads small
        refused bodies)."""
        again = (self.phase is Phase.ACTIVE and request.complete and self.peer is not Peer.GONE
                 and self.response.state is ResponseState.DONE)
        self.phase = self.phase.to(Phase.IDLE if again else Phase.CLOSED)

    async def _serve(self, request: Request) -> None:
        """Run the app for ``request``."""
        self._begin(request)
        scope = self._scope(request)
        if scope is None:
            await self._refuse(Refusal(400, "the request's path is not ASCII"))
        elif self.settings.server_names and host_of(request) not in self.settings.server_names:
            await self._refuse(Refusal(404, "no such host here"))
        else:
            try:
                await self.app(scope, self._receive, self._send)
            except Exception:
                log.exception("the app failed on %s %s", request.method, scope["path"])
            if self.response.state is ResponseState.PENDING:
                await self._refuse(self.body_refusal or Refusal(500, "internal error"))
        self._end(request)

    def _scope(self, request: Request) -> Message | None:
        path, _, query = bytes(request.target).partition(b"?")
        try:
            text_path = unquote(path.decode("ascii"))
        except UnicodeDecodeError:
            return None
        return {
            "type": "http",
            "http_version": request.version,
            "asgi": {"spec_version": "2.1", "version": "3.0"},
            "method": request.method,
            "scheme": self.scheme,
            "path": text_path,
            "raw_path": path,
            "query_string": query,
            "root_path": self.settings.root_path,
            "headers": request.headers,
            "client": self.client,
            "server": self.server,
            "state": self.lifespan_state.copy(),
            "extensions": {},
        }

    # ASGI receive --------------------------------------------------------------------

    async def _receive(self) -> Message:
        if self.body is not BodyState.GIVEN and self.response.state is not ResponseState.DONE:
            return await self._body_message()
        # The body is all given: the next message is the client going (or the app's end).
        await self._watch_client()
        return {"type": "http.disconnect"}

    async def _body_message(self) -> Message:
        """The body's next part, read if none waits; http.disconnect if the client went,
        its body stalled for idle_timeout, or it was refused (answered with it)."""
        request, parsed = self.request, self.parsed
        while not request.body and not request.complete:
            if parsed.refusal is not None:
                self.body_refusal = parsed.refusal
                self._lose(Peer.SENT_ALL)
            if self.peer is not Peer.OPEN and not parsed.waiting:
                return {"type": "http.disconnect"}
            if request.expects_continue and self.body is BodyState.WAITING \
                    and self.response.state is ResponseState.PENDING:
                self.body = self.body.to(BodyState.CONTINUED)
                await self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
            with trio.move_on_after(self.settings.idle_timeout) as stalled:
                await self._read()
            if stalled.cancelled_caught:
                self._lose(Peer.GONE)
                return {"type": "http.disconnect"}
        chunks = request.body
        body = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        if request.complete:
            self.body = self.body.to(BodyState.GIVEN)
        return {"type": "http.request", "body": body, "more_body": not request.complete}

    async def _watch_client(self) -> None:
        """Return when the client goes; meanwhile parse what it pipelines, as far as the
        queue has room (a refusal is answered after this response and the queued ones).
        Most responses are done (and this wait cancelled) before WATCH_AFTER: watching the
        socket from the start cost a tenth of a trivial request's CPU."""
        await trio.sleep(WATCH_AFTER)
        parsed = self.parsed
        while self.peer is Peer.OPEN and self.response.state is not ResponseState.DONE:
            if parsed.stopped or parsed.full():
                await trio.sleep_forever()  # cancelled when the app ends
            await self._read()
        if self.response.state is not ResponseState.DONE:
            self._no_more()

    # ASGI send -----------------------------------------------------------------------

    async def _send(self, message: Message) -> None:
        kind, response = message["type"], self.response
        if kind == "http.response.start" and response.state is ResponseState.PENDING:
            response.start(int(message["status"]), message.get("headers", ()))
        elif kind == "http.response.body" and response.state in _WRITING:
            out = response.frame(bytes(message.get("body", b"")),
                                 bool(message.get("more_body", False)),
                                 request_complete=self.request.complete,
                                 last=self.phase is not Phase.ACTIVE)
            if response.closes:
                self._no_more()
            if out:
                await self._write(out)
        else:
            raise ValueError(f"unexpected ASGI message {kind!r} in this response's state "
                             f"({response.state.name})")

    async def _write(self, data: bytes) -> None:
        """Write to the client; one that went is not the app's error (as in hypercorn):
        the app finishes, and the connection closes."""
        if self.peer is Peer.GONE:
            return
        # A client that stops reading holds the connection no longer than an idle one.
        with trio.move_on_after(self.settings.idle_timeout) as stalled:
            try:
                await self.stream.send_all(data)
            except _CLIENT_GONE:
                self._lose(Peer.GONE)
        if stalled.cancelled_caught:
            self._lose(Peer.GONE)


_WRITING = frozenset({ResponseState.HEAD, ResponseState.BODY})


async def close_stream(stream: trio.abc.Stream) -> None:
    """Close a connection (its write side first, so the client reads what was sent)."""
    try:
        if isinstance(stream, trio.abc.HalfCloseableStream):
            await stream.send_eof()
    except (trio.BrokenResourceError, trio.BusyResourceError, trio.ClosedResourceError,
            OSError):
        pass
    with contextlib.suppress(trio.BrokenResourceError, OSError):
        await stream.aclose()


async def serve_connection(app: AsgiApp, settings: Http1Settings, stopping: trio.Event,
                           lifespan_state: dict[str, Any], stream: trio.abc.Stream) -> None:
    """Serve one accepted connection (api/serve.py): its TLS handshake, then HTTP/1.x."""
    if isinstance(stream, trio.SSLStream):
        try:
            with trio.fail_after(settings.handshake_timeout):
                await stream.do_handshake()
        except (trio.BrokenResourceError, trio.TooSlowError):
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
    try:
        connection = Http1Connection(app, settings, stopping, lifespan_state, stream)
    except OSError:  # gone before it was served (getpeername: not connected)
        with trio.CancelScope(shield=True):
            await close_stream(stream)
        return
    await connection.run()

