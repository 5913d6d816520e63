"""HTTP/1.x requests as they are read: llhttp (httptools) fed in pieces, each request's head
and body bounded as its bytes come (api/http1.py serves what this parses).

Refused, and kept as a ``Refusal`` for the connection to answer after the requests before
it: a head larger than the limit (431), counted as its bytes are fed, so a line that never
ends is refused as soon as the head passes it; a chunked body's trailer section past the
same limit (431) and a chunk-size line past it (400); a malformed request (400), among
them, as RFC 9112 has it, an HTTP/1.1 request with no Host, any with more than one or with
one that is not a host (§3.2), an HTTP/1.0 request with Transfer-Encoding (§6.1) and a
request line with no version (HTTP/0.9); and any version but 1.0 and 1.1, `HTTP/2.0` among
them (505). Trailer fields are read and dropped (RFC 9110 §6.5.1). At most MAX_QUEUED
pipelined requests, holding at most MAX_PIPELINED bytes, are parsed ahead of the one in
hand; the rest waits unparsed. An Upgrade request stops the parsing after it.
"""

from __future__ import annotations

import re
from collections import deque
from typing import NamedTuple

import httptools

# Requests parsed ahead of the one in hand (pipelined): at most MAX_QUEUED of them, holding
# at most MAX_PIPELINED bytes (heads and bodies). Past either, what was read waits unparsed
# and nothing more is read: the socket holds the rest, and the client waits for answers.
MAX_QUEUED = 16
MAX_PIPELINED = 2**16
HEAD_END = b"\r\n\r\n"
# The Host of an HTTP/1.1 request (RFC 9112 §3.2, RFC 3986 §3.2.2): a name or IPv4
# address, or an IP literal in brackets, and an optional port.
_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(:[0-9]*)?")


class Request:
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


class Parser:
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
        self.ready: deque[Request] = deque()  # heads complete, not yet served
        self.parsing: Request | None = None
        self.last: Request | None = None  # the one begun last: the latest piece's
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

    def _count_framing(self, request: Request, size: int) -> Refusal | None:
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
        self.parsing = self.last = Request()

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

    def _grow(self, request: Request, size: int) -> None:
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


def framing_fault(request: Request) -> Refusal | None:
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



def host_of(request: Request) -> str:
    """The request's Host (checked by framing_fault), or "" when it has none."""
    for name, value in request.headers:
        if name == b"host":
            return value.decode("latin-1")
    return ""
