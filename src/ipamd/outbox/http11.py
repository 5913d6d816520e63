"""One keep-alive HTTP/1.1 client connection for deliveries: a request at a time, parsed by llhttp.

Why not httpcore + h11 (what httpx.AsyncHTTPTransport uses): both are pure Python, and per
request they cost more CPU than the rest of a delivery together (h11's state machine and
regex validation, httpcore's trace hooks, locks and shielded scopes): the delivery client
alone measured 634 to 795 µs of CPU per request with them and ~300 µs with this module over
the same socket (bench/bench_outbox.py, "client alone"). The response is parsed by httptools
(the C llhttp parser of Node.js, as uvicorn uses), which handles the framing: Content-Length,
chunked, 1xx interim responses, bodies that end when the connection closes.

A delivery request is small and fully known, so it is written as one buffer. The response
head is parsed before the caller sees it; the body is handed over as it arrives, so a reply
larger than the caller's cap is never read past it (the connection is then closed). The
connection is reused only when the reply was read to its end, the receiver allows it
(keep-alive), and no stray byte follows it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import httptools
import httpx

from ipamd.outbox.sockstream import SocketStream

Headers = Sequence[tuple[bytes, bytes]]
READ_BYTES = 65_536
MAX_HEAD_BYTES = 65_536  # status line and headers of a reply: anything bigger is refused

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_TARGET = re.compile(rb"[\x21-\x7e]+")


def request_head(method: bytes, target: bytes, headers: Headers) -> bytes:
    """The request line and header block; refuses anything that could split the message."""
    if not _TOKEN.fullmatch(method) or not _TARGET.fullmatch(target):
        raise httpx.LocalProtocolError(f"invalid request line {method!r} {target!r}")
    lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            raise httpx.LocalProtocolError(f"invalid header {name!r}")
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines)


class _Stray(Exception):
    """Bytes after the reply: another message began on a connection with no request out."""


class _Reply:
    """httptools callbacks for the reply to one request; interim (1xx) replies are skipped."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False  # the final reply's head is parsed
        self.complete = False  # ... and its body too
        self.stray = False
        self.switched = False
        self.keep_alive = False  # the receiver lets the connection be reused
        self.chunks: list[bytes] = []
        self._interim = False

    def on_message_begin(self) -> None:
        if self.complete:
            self.stray = True
            raise _Stray
        self.reason, self.headers = b"", []

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status == 101:
            self.switched = True  # llhttp stops here; a delivery never asks to upgrade
        elif 100 <= status < 200:
            self._interim = True  # 100 Continue, 103 Early Hints: the real reply follows
            return
        self.status, self.head_done = status, True

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self.complete = True
        # Asked now: llhttp forgets the message's flags once feed_data returns.
        self.keep_alive = self.parser.should_keep_alive()


class ResponseHead:
    def __init__(self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers


class Connection:
    """States: idle (reusable) → busy (a request in flight) → idle, or closed for good."""

    def __init__(self, stream: SocketStream, origin: object,
                 keepalive_expiry: float | None) -> None:
        self.stream = stream
        self.origin = origin  # where it goes: a request elsewhere needs another connection
        self.keepalive_expiry = keepalive_expiry
        self.requests = 0  # sent on this connection so far
        self._busy = False
        self._closed = False
        self._idle_since = time.monotonic()
        self._reply: _Reply | None = None
        self._ends_at_eof = False

    @property
    def closed(self) -> bool:
        return self._closed

    def reusable(self) -> bool:
        """Idle, not past keepalive_expiry, and the receiver has not closed it meanwhile
        (an idle connection with something to read is closing, or broken)."""
        if self._closed or self._busy:
            return False
        if (self.keepalive_expiry is not None
                and time.monotonic() - self._idle_since > self.keepalive_expiry):
            return False
        return not self.stream.readable()

    async def send(self, head: bytes, body: bytes, *, write_timeout: float | None,
                   read_timeout: float | None) -> ResponseHead:
        """Write the request, read up to the end of the final reply's head."""
        if self._closed or self._busy:
            raise httpx.LocalProtocolError("the connection is not idle")
        self._busy = True
        self.requests += 1
        reply = self._reply = _Reply()
        try:
            unsent: httpx.WriteError | None = None
            try:
                await self.stream.write(head + body, write_timeout)
            except httpx.WriteError as error:
                # The receiver may have answered (413, 401) and stopped reading before
                # taking the whole request: its answer says more than the broken pipe.
                unsent = error
            received = 0
            try:
                while not reply.head_done:
                    received += await self._read_more(reply, read_timeout, received)
                    if received > MAX_HEAD_BYTES and not reply.head_done:
                        raise httpx.RemoteProtocolError(
                            f"the reply's head is larger than {MAX_HEAD_BYTES} bytes")
            except (httpx.ReadError, httpx.RemoteProtocolError):
                if unsent is not None and not received:
                    raise unsent from None
                raise
            self._ends_at_eof = _ends_at_eof(reply.status, reply.headers)
            return ResponseHead(reply.status, reply.reason, reply.headers)
        except BaseException:
            await self.aclose()
            raise

    async def receive_body(self, read_timeout: float | None) -> bytes:
        """The next piece of the reply's body; b"" once it is complete."""
        reply = self._reply
        assert reply is not None and reply.head_done
        try:
            while not reply.chunks:
                if reply.complete:
                    return b""
                await self._read_more(reply, read_timeout, 1)
        except BaseException:
            await self.aclose()
            raise
        data = reply.chunks[0] if len(reply.chunks) == 1 else b"".join(reply.chunks)
        reply.chunks.clear()
        return data

    async def _read_more(self, reply: _Reply, timeout: float | None, received: int) -> int:
        data = await self.stream.read(READ_BYTES, timeout)
        if not data:
            if reply.head_done and self._ends_at_eof:
                reply.complete = True  # the body ran to the end of the connection
                return 0
            where = "before replying" if not received else "mid-reply"
            raise httpx.RemoteProtocolError(f"the receiver closed the connection {where}")
        try:
            reply.parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            if not reply.stray:
                raise
        except httptools.HttpParserError as error:  # HttpParserUpgrade included
            if reply.switched:
                raise httpx.RemoteProtocolError(
                    "the receiver switched protocols (101), which a delivery never asks for"
                ) from None
            raise httpx.RemoteProtocolError(f"invalid HTTP response: {error}") from None
        return len(data)

    async def finish(self) -> None:
        """The caller is done with the reply: idle again if it was read to its end, the
        receiver keeps the connection open (keep-alive) and nothing followed the reply;
        closed otherwise."""
        reply, self._reply = self._reply, None
        if (not self._closed and reply is not None and reply.complete and not reply.chunks
                and not reply.stray and not self._ends_at_eof and reply.keep_alive):
            self._busy = False
            self._idle_since = time.monotonic()
            return
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        self._busy = False
        await self.stream.aclose()


def _ends_at_eof(status: int, headers: list[tuple[bytes, bytes]]) -> bool:
    """A reply without Content-Length or chunked framing ends when the connection closes
    (RFC 9112 §6.3), except those that never have a body."""
    if status in (204, 304):
        return False
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"content-length" or (lowered == b"transfer-encoding"
                                            and b"chunked" in value.lower()):
            return False
    return True
