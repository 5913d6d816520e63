"""HTTP/1.x connections: parsed by llhttp (httptools), each request's app run in the
connection's own task, each response written in one piece where it can be.

hypercorn serves HTTP/1.1 through h11 (pure Python) and its trio server, which per request
restarts a keep-alive timer task, spawns a task for the app, passes events through a memory
channel and takes a lock per write. Measured on the 2-core VM with a trivial ASGI app and 8
keep-alive clients, that is ~450 µs of CPU per request before the app does anything, a
third of what the API spends on `GET /prefixes?limit=50` (issue 17). So hypercorn still
accepts the connections (its listeners, TLS, lifespan, graceful stop, the workers' shared
accept in api/balance.py), and every connection is served here: plain, or TLS (whose ALPN
offers http/1.1 only: h2 would skip every bound of this layer; runtime.py), within the
connection caps of api/conncap.py.

What a client sees is what hypercorn and h11 give it: keep-alive (HTTP/1.1, or 1.0 asking
for it) up to ``keep_alive_max_requests`` requests, an idle connection closed after
``keep_alive_timeout`` or at once when the server stops, a head larger than
``h11_max_incomplete_size`` answered 431, a malformed request 400, `Expect: 100-continue`
answered when the app reads the body, `Connection: close` when the connection will close,
responses framed by Content-Length (added when the app gave the whole body at once) or
chunked, no body for HEAD, 1xx, 204 and 304, and the app told `http.disconnect` when the
client goes while it works (noticed from WATCH_AFTER on). Pipelined requests are answered in
order. Upgrade requests (WebSocket, h2c) are answered as plain HTTP/1.1 and the connection
then closes, and HTTP/2 with prior knowledge is refused (400): the API does not serve h2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections import deque
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, NamedTuple
from urllib.parse import unquote

import httptools
import trio
from hypercorn.config import Config
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import AppWrapper, ConnectionState, LifespanState
from hypercorn.utils import parse_socket_addr, suppress_body

from ipamd.api.conncap import ConnectionCaps, serve_capped
from ipamd.api.errors import ApiError

log = logging.getLogger("ipamd.api.http1")

MAX_RECV = 2**16
# While the app works on a request whose body is in, the connection is still read (to see a
# client that goes); pipelined requests read meanwhile are kept, up to this many bytes.
MAX_PIPELINED = 2**16
# A client that goes while the app works is looked for only once the app has had the
# request's body this long (looking from the start cost every request a wait on the socket).
WATCH_AFTER = 0.5


class _Request:
    """One request as the parser saw it; its body chunks wait here until the app reads."""

    __slots__ = (
        "body",
        "complete",
        "expects_continue",
        "head_size",
        "headers",
        "keep_alive",
        "method",
        "target",
        "upgrade",
        "version",
    )

    def __init__(self) -> None:
        self.method = ""
        self.target = bytearray()
        self.version = "1.1"
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: deque[bytes] = deque()
        self.complete = False  # the whole body is in
        self.keep_alive = True
        self.upgrade = False
        self.expects_continue = False
        self.head_size = 0


class Refusal(NamedTuple):
    status: int
    message: str


class _Parser:
    """httptools' callbacks: requests in the order they came, heads first."""

    def __init__(self, max_head: int) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.ready: deque[_Request] = deque()  # heads complete, not yet served
        self.parsing: _Request | None = None
        self.max_head = max_head
        self.fed = 0  # bytes parsed, all told
        self.stopped = False  # after an upgrade request: the rest is not HTTP/1.1
        self.head_too_large = False

    def feed(self, data: bytes | bytearray) -> Refusal | None:
        """Parse ``data``; what to refuse the connection with, or None."""
        if self.stopped:
            return None
        self.fed += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.stopped = True  # the upgrade request itself is complete and queued
        except httptools.HttpParserCallbackError as error:
            if self.head_too_large:  # on_url / on_header said so
                return Refusal(431, f"the request's head (its line and headers) is larger "
                                    f"than {self.max_head} bytes")
            return Refusal(400, f"malformed HTTP/1.1 request: {error}")
        except httptools.HttpParserError as error:
            return Refusal(400, f"malformed HTTP/1.1 request: {error}")
        return None

    # httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.parsing = _Request()

    def on_url(self, url: bytes) -> None:
        request = self.parsing
        assert request is not None
        request.target += url
        self._grow(request, len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self.parsing
        assert request is not None
        self._grow(request, len(name) + len(value) + 4)
        name = name.lower()
        value = value.strip(b" \t")
        request.headers.append((name, value))
        if name == b"expect" and value.lower() == b"100-continue":
            request.expects_continue = True

    def _grow(self, request: _Request, size: int) -> None:
        request.head_size += size
        if request.head_size > self.max_head:
            self.head_too_large = True
            raise ValueError("head too large")  # httptools: HttpParserCallbackError

    def on_headers_complete(self) -> None:
        request = self.parsing
        assert request is not None
        parser = self.parser
        request.method = parser.get_method().decode("ascii").upper()
        request.version = parser.get_http_version()
        request.keep_alive = parser.should_keep_alive()
        request.upgrade = parser.should_upgrade()
        if request.version != "1.1":
            request.expects_continue = False
        self.ready.append(request)

    def on_body(self, body: bytes) -> None:
        request = self.parsing
        assert request is not None
        request.body.append(bytes(body))

    def on_message_complete(self) -> None:
        request = self.parsing
        assert request is not None
        request.complete = True
        self.parsing = None


class _DateHeader:
    """The Date header's value, formatted once a second."""

    def __init__(self) -> None:
        self._second = -1
        self._value = b""

    def value(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._value = formatdate(now, usegmt=True).encode("ascii")
        return self._value


_DATE = _DateHeader()
_REASONS = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}


class Http1Connection:
    """One HTTP/1.x connection, from its first request to its close."""

    def __init__(
        self, app: AppWrapper, config: Config, context: WorkerContext, state: LifespanState,
        stream: trio.abc.Stream, *, tls: bool,
    ) -> None:
        self.app = app
        self.config = config
        self.context = context
        self.stream = stream
        self.connection_state = ConnectionState(state)
        self.scheme = "https" if tls else "http"
        sock = stream.transport_stream.socket if tls else stream.socket  # type: ignore[attr-defined]
        self.client = parse_socket_addr(sock.family, sock.getpeername())
        self.server = parse_socket_addr(sock.family, sock.getsockname())
        self.parsed = _Parser(config.h11_max_incomplete_size)
        self.dated = config.include_date_header
        # The Server and Alt-Svc headers hypercorn's config adds (Date is made here).
        self.extra_headers = [name + b": " + value
                              for name, value in config.response_headers("h11")
                              if name != b"date"]
        self.eof = False  # the client sent its last byte (or the connection broke)
        self.broken = False  # a write failed: nothing more reaches the client
        self.requests = 0
        self.stopping = False  # the server stops: no request after the one in hand
        self.idle: trio.CancelScope | None = None  # set while waiting for a request
        # The request in hand and its response.
        self.request = _Request()
        self.body_sent = False  # the app was given the end of the body
        self.continue_sent = False
        self.status = 0
        self.head: list[bytes] | None = None  # the response head, not yet written
        self.framing = ""  # "length", "chunked" or "close"
        self.response_done = False
        self.keep = True

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_stop)
                try:
                    await self._serve_requests()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass  # the client went
                except Exception:
                    # A fault here ends this connection, never the API's accept loop.
                    log.exception("HTTP/1.1 connection from %s failed", self.client)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await _close(self.stream)

    async def _watch_stop(self) -> None:
        await self.context.terminated.wait()
        self.stopping = True
        if self.idle is not None:
            self.idle.cancel()

    async def _serve_requests(self) -> None:
        while not self.stopping:
            request = await self._next_request()
            if request is None:
                return
            if not await self._serve(request):
                return

    async def _next_request(self) -> _Request | None:
        """The next request's head (read until it is in), or None: the client went, was
        idle for keep_alive_timeout, the server stops, or the bytes were not HTTP."""
        parsed = self.parsed
        with trio.move_on_after(self.config.keep_alive_timeout) as self.idle:
            while not parsed.ready:
                if self.eof or parsed.stopped or self.stopping:
                    return None
                refusal = await self._read()
                if refusal is not None:
                    self.request = _Request()  # none in hand: the refusal answers the bytes
                    await self._refuse(refusal)
                    return None
        self.idle = None
        return parsed.ready.popleft() if parsed.ready else None

    async def _read(self) -> Refusal | None:
        """Read once and parse; what to refuse the connection with, or None."""
        try:
            data = await self.stream.receive_some(MAX_RECV)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            data = b""
        if not data:
            self.eof = True
            return None
        return self.parsed.feed(data)

    async def _refuse(self, refusal: Refusal) -> None:
        """Answer a request that cannot be served (the connection then closes)."""
        self._new_response()
        self.keep = False
        await self._send(error_start(refusal.status))
        await self._send(error_body(refusal.status, refusal.message))

    def _new_response(self) -> None:
        self.status = 0
        self.head = None
        self.framing = ""
        self.declared = -1  # the app's Content-Length
        self.written = 0  # body bytes written under it
        self.response_done = False
        self.body_refusal: Refusal | None = None

    # one request -----------------------------------------------------------------------

    async def _serve(self, request: _Request) -> bool:
        """Run the app for ``request``; whether the connection takes another request."""
        self.request = request
        self._new_response()
        self.body_sent = self.continue_sent = False
        self.requests += 1
        self.keep = (request.keep_alive and not request.upgrade
                     and self.requests < self.config.keep_alive_max_requests)
        scope = self._scope(request)
        if scope is None:
            await self._refuse(Refusal(400, "the request's path is not ASCII"))
            return False
        if self.config.server_names and _host(request) not in self.config.server_names:
            await self._refuse(Refusal(404, "no such host here"))
        else:
            try:
                await self.app(scope, self._receive, self._send, trio.to_thread.run_sync,
                               trio.from_thread.run)
            except Exception:
                await self.config.log.exception("Error in ASGI Framework")
            if self.status == 0:
                await self._refuse(self.body_refusal or Refusal(500, "internal error"))
        await self.context.mark_request()
        if not self.response_done or self.broken:
            return False  # the app ended mid-response: the client cannot tell where it ends
        # A body the app did not read to its end: unread bytes would be taken for the next
        # request, so the connection closes (api/app.py reads small refused bodies).
        return self.keep and request.complete and not self.stopping

    def _scope(self, request: _Request) -> dict[str, Any] | None:
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
            "root_path": self.config.root_path,
            "headers": request.headers,
            "client": self.client,
            "server": self.server,
            "state": self.connection_state.copy(),
            "extensions": {},
        }

    # ASGI receive --------------------------------------------------------------------

    async def _receive(self) -> dict[str, Any]:
        request = self.request
        if not self.body_sent and not self.response_done:
            while not request.body and not request.complete:
                if self.eof:
                    return {"type": "http.disconnect"}
                if request.expects_continue and not self.continue_sent and self.head is None \
                        and self.status == 0:
                    self.continue_sent = True
                    await self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
                refusal = await self._read()
                if refusal is not None:  # the body is malformed: answered with this
                    self.body_refusal = refusal
                    self.eof = True
                    return {"type": "http.disconnect"}
            chunks = request.body
            body = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
            chunks.clear()
            more = not request.complete
            self.body_sent = not more
            return {"type": "http.request", "body": body, "more_body": more}
        # The body is all given: the next message is the client going (or the app's end).
        await self._watch_client()
        return {"type": "http.disconnect"}

    async def _watch_client(self) -> None:
        """Return when the client goes; meanwhile keep what it pipelines (bounded). Most
        responses are done (and this wait cancelled) before WATCH_AFTER: watching the
        socket from the start cost a tenth of a trivial request's CPU."""
        await trio.sleep(WATCH_AFTER)
        fed_before = self.parsed.fed
        while not self.eof and not self.response_done:
            if self.parsed.stopped or self.parsed.fed - fed_before > MAX_PIPELINED:
                await trio.sleep_forever()  # cancelled when the app ends
            refusal = await self._read()
            if refusal is not None:  # garbage after this request: answer it, then close
                self.keep = False
                self.parsed.stopped = True
        if not self.response_done:
            self.keep = False

    # ASGI send -----------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start" and self.status == 0:
            status = int(message["status"])
            if not 200 <= status <= 999:
                raise ValueError(f"an HTTP/1.1 response status must be 200-999, not {status}")
            self.status = status
            self.head = self._head_lines(message.get("headers", ()))
        elif kind == "http.response.body" and self.status and not self.response_done:
            body = bytes(message.get("body", b""))
            more = bool(message.get("more_body", False))
            out = self._frame(body, more)
            if not more:
                self.response_done = True
            if out:
                await self._write(out)
        else:
            raise ValueError(f"unexpected ASGI message {kind!r} in this response's state")

    def _head_lines(self, headers: Any) -> list[bytes]:
        lines = []
        for name, value in headers:
            name, value = bytes(name).strip(), bytes(value).strip()
            if not name or b"\r" in name or b"\n" in name or b":" in name or \
                    b"\r" in value or b"\n" in value or b"\0" in value:
                raise ValueError(f"invalid response header {name!r}")
            lower = name.lower()
            if lower == b"content-length":
                self.framing = "length"
                self.declared = int(value)
            elif lower == b"connection":
                if b"close" in value.lower():
                    self.keep = False
                continue  # set below, from what this connection does
            elif lower == b"transfer-encoding":
                continue  # this connection frames the body itself
            lines.append(name + b": " + value)
        return lines

    def _frame(self, body: bytes, more: bool) -> bytes:
        """The bytes to write for this piece of the body (the head with the first)."""
        out = b""
        quiet = suppress_body(self.request.method, self.status)
        if self.head is not None:
            lines = self.head
            self.head = None
            if self.framing != "length" and not quiet:
                if not more:
                    lines.append(b"content-length: %d" % len(body))
                    self.framing = "length"
                elif self.request.version == "1.1":
                    lines.append(b"transfer-encoding: chunked")
                    self.framing = "chunked"
                else:
                    self.framing = "close"
                    self.keep = False
            if not self.request.complete:  # the rest of its body would be read as a request
                self.keep = False
            if not self.keep or self.stopping:
                lines.append(b"connection: close")
            if self.dated:
                lines.append(b"date: " + _DATE.value())
            lines += self.extra_headers
            out = b"HTTP/1.1 %d %s\r\n%s\r\n\r\n" % (
                self.status, _REASONS.get(self.status, b""), b"\r\n".join(lines))
        if quiet:
            return out
        if self.framing == "chunked":
            if body:
                out += b"%x\r\n%s\r\n" % (len(body), body)
            if not more:
                out += b"0\r\n\r\n"
            return out
        if self.declared >= 0:
            if self.written + len(body) > self.declared:  # never past what the head said
                body = body[:self.declared - self.written]
                self.keep = False
            self.written += len(body)
            if not more and self.written != self.declared:
                # The app's Content-Length was wrong: the client cannot find the next
                # response, so there is none on this connection.
                self.keep = False
        return out + body

    async def _write(self, data: bytes) -> None:
        """Write to the client; one that went is not the app's error (as in hypercorn):
        the app finishes, and the connection closes."""
        if self.broken:
            return
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self.broken = self.eof = True


def error_start(status: int) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status,
            "headers": [(b"content-type", b"application/json")]}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The spec's error envelope, made as the app's own errors make it."""
    body = json.dumps(ApiError(status, message).body()).encode()
    return {"type": "http.response.body", "body": body}


def _host(request: _Request) -> str:
    for name, value in request.headers:
        if name == b"host":
            return value.decode("latin-1")
    return ""


async def _close(stream: trio.abc.Stream) -> None:
    try:
        if isinstance(stream, trio.abc.HalfCloseableStream):
            await stream.send_eof()
    except (trio.BrokenResourceError, trio.BusyResourceError, trio.ClosedResourceError,
            OSError):
        pass
    with contextlib.suppress(trio.BrokenResourceError, OSError):
        await stream.aclose()


async def serve_connection(
    app: AppWrapper, config: Config, context: WorkerContext, state: LifespanState,
    stream: trio.abc.Stream,
) -> None:
    """hypercorn's per-connection handler, as installed (within the caps): HTTP/1.x."""
    tls = isinstance(stream, trio.SSLStream)
    if tls:
        try:
            with trio.fail_after(config.ssl_handshake_timeout):
                await stream.do_handshake()
        except (trio.BrokenResourceError, trio.TooSlowError):
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
    try:
        connection = Http1Connection(app, config, context, state, stream, tls=tls)
    except OSError:  # gone before it was served (getpeername: not connected)
        with trio.CancelScope(shield=True):
            await _close(stream)
        return
    await connection.run()


def install(caps: ConnectionCaps) -> None:
    """Serve every accepted connection through ``serve_connection``, within ``caps``
    (hypercorn's trio worker builds a TCPServer per connection by this module-level name)."""
    import hypercorn.trio.run

    async def capped(app: AppWrapper, config: Config, context: WorkerContext,
                     state: LifespanState, stream: trio.abc.Stream) -> None:
        await serve_capped(caps, functools.partial(serve_connection, app, config, context,
                                                   state), stream)

    hypercorn.trio.run.TCPServer = capped  # type: ignore[assignment,misc]

