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

What a client sees is what hypercorn and h11 give it, and what RFC 9112 asks of a server:
keep-alive (HTTP/1.1, or 1.0 asking for it) up to ``keep_alive_max_requests`` requests, an
idle connection closed after ``keep_alive_timeout`` (which also bounds the wait for a whole
head, for each next piece of a request body, and for a client to take each piece of a
response: a client that stalls mid-body or stops reading is dropped) or at once when the
server stops, `Expect: 100-continue` answered when the app reads
the body (api/app.py reads it only once the request is authorized), `Connection: close`
when the connection will close, responses framed by Content-Length (added when the app gave
the whole body at once) or chunked, no body for HEAD, 1xx, 204 and 304, and the app told
`http.disconnect` when the client goes while it works (noticed from WATCH_AFTER on).

Refused, in the error envelope, after the answers to the requests before it, and then the
connection closes: a head larger than ``h11_max_incomplete_size`` (431), counted as its
bytes are fed to the parser, so a line that never ends is refused as soon as the head
passes the limit; a chunked body's trailer section past the same limit (431) and a
chunk-size line past it (400); a malformed request (400), among them, as RFC 9112 has it,
an HTTP/1.1 request with no Host, any with more than one or with one that is not a host
(§3.2), an HTTP/1.0 request with Transfer-Encoding (§6.1) and a request line with no version
(HTTP/0.9); and any version but 1.0 and 1.1, `HTTP/2.0` among them (505). Trailer fields
are read and dropped (RFC 9110 §6.5.1). Pipelined requests are answered in order; at most
MAX_QUEUED of them, holding at most MAX_PIPELINED bytes, are parsed ahead of the one in
hand, and the rest waits in the socket. Upgrade requests (WebSocket, h2c) are answered as
plain HTTP/1.1 and the connection
then closes, and HTTP/2 with prior knowledge is refused (400): the API does not serve h2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
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
# Requests parsed ahead of the one in hand (pipelined): at most MAX_QUEUED of them, holding
# at most MAX_PIPELINED bytes (heads and bodies). Past either, what was read waits unparsed
# and nothing more is read: the socket holds the rest, and the client waits for answers.
MAX_QUEUED = 16
MAX_PIPELINED = 2**16
HEAD_END = b"\r\n\r\n"
# The Host of an HTTP/1.1 request (RFC 9112 §3.2, RFC 3986 §3.2.2): a name or IPv4
# address, or an IP literal in brackets, and an optional port.
_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(:[0-9]*)?")
# A client that goes while the app works is looked for only once the app has had the
# request's body this long (looking from the start cost every request a wait on the socket).
WATCH_AFTER = 0.5


class _Request:
    """One request as the parser saw it; its body chunks wait here until the app reads."""

    __slots__ = (
        "body",
        "body_left",
        "chunked",
        "complete",
        "expects_continue",
        "framing",
        "head_size",
        "headers",
        "headers_done",
        "hosts",
        "in_chunk_line",
        "keep_alive",
        "method",
        "size",
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
        self.head_size = 0  # of its complete lines (the parser's callbacks)
        self.size = 0  # bytes fed for it: head, body and its framing
        self.headers_done = False
        self.hosts: list[bytes] = []
        self.chunked = False
        self.body_left = 0  # of a Content-Length body
        self.framing = 0  # chunked: bytes fed since its last body data (sizes, trailers)
        self.in_chunk_line = False  # chunked: a chunk-size line is being read


class Refusal(NamedTuple):
    status: int
    message: str


class _Parser:
    """httptools' callbacks: requests in the order they came, heads first.

    What is read is fed to llhttp in pieces that never hold parts of two requests: up to
    the end of a head (its empty line), a Content-Length body's last byte, or (in a chunked
    body) a line's end. So after each piece the bytes of an unfinished head or trailer
    section are known exactly, and counted against the limit as they come: a line that never
    ends is refused once the count passes it, not when the line ends (httptools keeps the
    line so far, and copies it, on every piece: bounded by the limit, not by the client);
    and the parsing stops between two requests once MAX_QUEUED wait."""

    def __init__(self, max_head: int) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.ready: deque[_Request] = deque()  # heads complete, not yet served
        self.parsing: _Request | None = None
        self.last: _Request | None = None  # the one begun last: the latest piece's
        self.max_head = max_head
        self.fed = 0  # bytes parsed, all told
        self.stopped = False  # an upgrade request or a refusal: the rest is not parsed
        self.refusal: Refusal | None = None  # to answer once the requests before it are
        self.fault: Refusal | None = None  # what a callback refuses (then raises)
        self.pending: bytes | bytearray = b""  # read, parsed up to ``pos``
        self.pos = 0
        self.tail = b""  # an unfinished head's last bytes: its end may straddle two reads
        self.data_fed = 0  # body bytes in the piece being fed

    @property
    def waiting(self) -> bool:
        """Bytes were read that are not parsed yet (and will be, unless stopped)."""
        return self.pos < len(self.pending) and not self.stopped

    def full(self) -> bool:
        """As many requests wait as a connection may queue (by count or by bytes)."""
        ready = self.ready
        return bool(ready) and (len(ready) >= MAX_QUEUED
                                or sum(r.size for r in ready) > MAX_PIPELINED)

    def feed(self, data: bytes | bytearray) -> None:
        """Take what was read (nothing must be waiting) and parse what the queue has room
        for; a refusal is kept in ``refusal``."""
        self.pending, self.pos = data, 0
        self.drain()

    def drain(self) -> None:
        """Parse, piece by piece, what waits, until it is all parsed, the queue is full, or
        the parsing stops."""
        data = self.pending
        view = memoryview(data)
        while self.pos < len(data) and not self.stopped and not self.full():
            start = self.pos
            end = self.pos = self._piece_end(data, start)
            refusal = self._feed(view[start:end], at_end=end == len(data))
            if refusal is not None:
                self.refusal = refusal
                self.stopped = True
        if self.pos >= len(data) or self.stopped:
            self.pending, self.pos = b"", 0

    def _piece_end(self, data: bytes | bytearray, start: int) -> int:
        request = self.parsing
        if request is not None and request.headers_done:
            if request.chunked:
                end = data.find(b"\n", start)
                return len(data) if end < 0 else end + 1
            return min(len(data), start + max(request.body_left, 1))
        if request is None and data[start] in b"\r\n":
            # Empty lines before a request line (RFC 9112 §2.2): one piece, however many.
            return len(data) - len(data[start:].lstrip(b"\r\n"))
        if self.tail:
            joined = self.tail + data[start:start + 3]
            at = joined.find(HEAD_END)
            if at >= 0:
                return start + at + 4 - len(self.tail)
        at = data.find(HEAD_END, start)
        return len(data) if at < 0 else at + 4

    def _feed(self, piece: memoryview, *, at_end: bool) -> Refusal | None:
        self.fed += len(piece)
        self.data_fed = 0
        in_body = self.parsing is not None and self.parsing.headers_done
        try:
            self.parser.feed_data(piece)
        except httptools.HttpParserUpgrade:
            self.stopped = True  # the upgrade request itself is complete and queued
        except httptools.HttpParserCallbackError as error:
            return self.fault or Refusal(400, f"malformed HTTP/1.1 request: {error}")
        except httptools.HttpParserError as error:
            return Refusal(400, f"malformed HTTP/1.1 request: {error}")
        request = self.last
        in_head = request is not None and not request.headers_done
        self.tail = bytes(piece[-3:]) if at_end and (in_head or self.parsing is None) else b""
        if request is None:
            return None
        request.size += len(piece)
        if in_head and request.size > self.max_head:
            return Refusal(431, f"the request's head (its line and headers) is larger than "
                                f"{self.max_head} bytes")
        if in_body and request.chunked and request is self.parsing:
            return self._count_framing(request, len(piece))
        return None

    def _count_framing(self, request: _Request, size: int) -> Refusal | None:
        """A chunked body's bytes that are not data, since its last data: chunk-size lines
        and the trailer section, bounded as a head is."""
        if self.data_fed:
            request.framing = size - self.data_fed
        else:
            request.framing += size
        if request.framing <= self.max_head:
            return None
        if request.in_chunk_line:
            return Refusal(400, f"a chunk-size line of the request's body is longer than "
                                f"{self.max_head} bytes")
        return Refusal(431, f"the request's trailer section is larger than "
                            f"{self.max_head} bytes")

    # httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.parsing = self.last = _Request()

    def on_url(self, url: bytes) -> None:
        request = self.parsing
        assert request is not None
        request.target += url
        self._grow(request, len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self.parsing
        assert request is not None
        if request.headers_done:
            # A trailer field: counted (as framing), not passed on (RFC 9110 §6.5.1).
            return
        self._grow(request, len(name) + len(value) + 4)
        name = name.lower()
        value = value.strip(b" \t")
        request.headers.append((name, value))
        if name == b"expect" and value.lower() == b"100-continue":
            request.expects_continue = True
        elif name == b"host":
            request.hosts.append(value)
        elif name == b"transfer-encoding":
            request.chunked = True  # llhttp refuses a request whose last coding is not
        elif name == b"content-length":
            request.body_left = int(value)  # digits only, and once: llhttp checked

    def _grow(self, request: _Request, size: int) -> None:
        request.head_size += size
        if request.head_size > self.max_head:
            self._refuse(Refusal(431, f"the request's head (its line and headers) is larger "
                                      f"than {self.max_head} bytes"))

    def _refuse(self, refusal: Refusal) -> None:
        self.fault = refusal
        raise ValueError(refusal.message)  # httptools: HttpParserCallbackError

    def on_headers_complete(self) -> None:
        request = self.parsing
        assert request is not None
        parser = self.parser
        request.headers_done = True
        request.method = parser.get_method().decode("ascii").upper()
        request.version = parser.get_http_version()
        request.keep_alive = parser.should_keep_alive()
        request.upgrade = parser.should_upgrade()
        request.in_chunk_line = request.chunked
        if request.chunked:
            request.body_left = 0
        if request.version != "1.1":
            request.expects_continue = False
        refusal = framing_fault(request)
        if refusal is not None:
            self._refuse(refusal)
        self.ready.append(request)

    def on_body(self, body: bytes) -> None:
        request = self.parsing
        assert request is not None
        request.body.append(bytes(body))
        self.data_fed += len(body)
        if not request.chunked:
            request.body_left -= len(body)

    def on_chunk_header(self) -> None:
        request = self.parsing
        assert request is not None
        request.in_chunk_line = False  # its data follows, or (the last chunk) the trailers

    def on_chunk_complete(self) -> None:
        request = self.parsing
        assert request is not None
        request.in_chunk_line = True

    def on_message_complete(self) -> None:
        request = self.parsing
        assert request is not None
        request.complete = True
        self.parsing = None


def framing_fault(request: _Request) -> Refusal | None:
    """What RFC 9112 refuses in a head llhttp accepts, or None."""
    if request.version not in ("1.0", "1.1"):
        if request.version == "0.9":  # llhttp's reading of a request line with no version
            return Refusal(400, "malformed HTTP/1.1 request: the request line names no HTTP "
                                "version (HTTP/0.9 is not served)")
        return Refusal(505, f"HTTP/{request.version} is not served on an HTTP/1.x "
                            "connection (RFC 9112 §2.3)")
    if request.version == "1.0" and request.chunked:
        return Refusal(400, "malformed HTTP/1.1 request: an HTTP/1.0 request with "
                            "Transfer-Encoding has no reliable framing (RFC 9112 §6.1)")
    hosts = request.hosts
    if len(hosts) > 1:
        return Refusal(400, "malformed HTTP/1.1 request: more than one Host header "
                            "(RFC 9112 §3.2)")
    if not hosts and request.version == "1.1":
        return Refusal(400, "malformed HTTP/1.1 request: no Host header (RFC 9112 §3.2)")
    if hosts and hosts[0] and _HOST.fullmatch(hosts[0]) is None:
        return Refusal(400, "malformed HTTP/1.1 request: the Host header is not a host "
                            "and port (RFC 9112 §3.2)")
    return None


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
        idle for keep_alive_timeout, the server stops, or the bytes were refused (answered
        here, after every request before them)."""
        parsed = self.parsed
        with trio.move_on_after(self.config.keep_alive_timeout) as self.idle:
            while not parsed.ready:
                if parsed.refusal is not None:
                    self.request = _Request()  # none in hand: the refusal answers the bytes
                    await self._refuse(parsed.refusal)
                    return None
                if parsed.stopped or self.stopping or (self.eof and not parsed.waiting):
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
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            data = b""
        if not data:
            self.eof = True
            return
        self.parsed.feed(data)

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
        parsed = self.parsed
        if not self.body_sent and not self.response_done:
            while not request.body and not request.complete:
                if parsed.refusal is not None:  # this body is malformed: answered with it
                    self.body_refusal = parsed.refusal
                    self.eof = True
                if self.eof and not parsed.waiting:
                    return {"type": "http.disconnect"}
                if request.expects_continue and not self.continue_sent and self.head is None \
                        and self.status == 0:
                    self.continue_sent = True
                    await self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
                # A body that stops arriving holds the connection no longer than an idle one.
                with trio.move_on_after(self.config.keep_alive_timeout) as stalled:
                    await self._read()
                if stalled.cancelled_caught:
                    self.eof = self.broken = True
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
        """Return when the client goes; meanwhile parse what it pipelines, as far as the
        queue has room (a refusal is answered after this response and the queued ones).
        Most responses are done (and this wait cancelled) before WATCH_AFTER: watching the
        socket from the start cost a tenth of a trivial request's CPU."""
        await trio.sleep(WATCH_AFTER)
        parsed = self.parsed
        while not self.eof and not self.response_done:
            if parsed.stopped or parsed.full():
                await trio.sleep_forever()  # cancelled when the app ends
            await self._read()
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
        # A client that stops reading holds the connection no longer than an idle one.
        with trio.move_on_after(self.config.keep_alive_timeout) as stalled:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                self.broken = self.eof = True
        if stalled.cancelled_caught:
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

