"""The HTTP/1.1 wire format a delivery needs: encode one POST, read one response (RFC 9112).

Strict where it matters (header syntax, one message framing, size limits) and small: no
pipelining, no upgrades, no trailers kept. h11 does the same job at ~190 µs a request here,
this at a few µs, and a delivery is little else.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

import trio

READ_CHUNK = 65_536
MAX_HEAD_BYTES = 65_536
_TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_STATUS = re.compile(rb"^HTTP/1\.([01]) ([1-9][0-9][0-9])(?: (.*))?$")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_HEX = re.compile(rb"^[0-9A-Fa-f]{1,16}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ProtocolError(Exception):
    """The receiver's reply is not valid HTTP/1.1 (or ours could not be encoded)."""


class ConnectionEnded(Exception):
    """The connection ended before any byte of the response came back."""


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes  # at most the cap
    truncated: bool  # the body went on beyond the cap (and was not read)
    reusable: bool  # the connection can carry another request


def encode_request(
    target: str, authority: str, headers: Sequence[tuple[str, str]], body: bytes
) -> bytes:
    if not target.startswith("/") or _BAD_VALUE.search(target) or " " in target:
        raise ProtocolError(f"request target {target!r} cannot be sent")
    # One pass over all names and one over all values: no CR, LF or NUL can slip in.
    if not all(name for name, _ in headers) or not _TOKEN.match(
        "".join(name for name, _ in headers).encode("latin-1")
    ):
        raise ProtocolError(f"a header name in {[n for n, _ in headers]!r} cannot be sent")
    if _BAD_VALUE.search(authority + "".join(value for _, value in headers)):
        raise ProtocolError("a header value holds control characters")
    lines = [f"POST {target} HTTP/1.1", f"Host: {authority}", f"Content-Length: {len(body)}",
             *(f"{name}: {value}" for name, value in headers), "\r\n"]
    return "\r\n".join(lines).encode("latin-1") + body


class _Reader:
    """Buffered reads from a stream, counting whether anything arrived at all."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.got_bytes = False
        self.eof = False

    async def fill(self) -> bool:
        try:
            chunk = await self.stream.receive_some(READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as error:
            if self.got_bytes:
                raise ProtocolError(f"connection lost mid-response: {reason_of(error)}") from None
            raise ConnectionEnded(reason_of(error)) from None
        if not chunk:
            self.eof = True
            return False
        self.got_bytes = True
        self.buffer += chunk
        return True

    async def until(self, marker: bytes, limit: int) -> bytes:
        start = 0
        while True:
            found = self.buffer.find(marker, start)
            if found >= 0:
                data = bytes(self.buffer[:found])
                del self.buffer[: found + len(marker)]
                return data
            if len(self.buffer) > limit:
                raise ProtocolError(f"response line or headers longer than {limit} bytes")
            start = max(0, len(self.buffer) - len(marker) + 1)
            if not await self.fill():
                if not self.got_bytes:
                    raise ConnectionEnded("the receiver closed the connection before responding")
                raise ProtocolError("the connection closed in the middle of the response")

    async def take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not await self.fill():
                raise ProtocolError("the connection closed in the middle of the response")
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str], bool]:
    lines = head.split(b"\r\n")
    match = _STATUS.match(lines[0])
    if match is None:
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.match(name):
            raise ProtocolError(f"malformed header line {line[:80]!r}")
        text = value.strip(b" \t").decode("latin-1")
        if _BAD_VALUE.search(text):
            raise ProtocolError(f"header {name.decode('latin-1')!r} holds control characters")
        key = name.decode("latin-1").lower()
        if key == "content-length" and key in headers and headers[key] != text:
            raise ProtocolError("conflicting Content-Length headers")
        headers[key] = text
    http10 = match[1] == b"0"
    reason = _CONTROL.sub("", (match[3] or b"").decode("latin-1"))[:100]
    return int(match[2]), reason, headers, http10


async def _chunked(reader: _Reader, cap: int) -> tuple[bytes, bool]:
    body = bytearray()
    while True:
        size_line = (await reader.until(b"\r\n", 1024)).split(b";", 1)[0].strip()
        if not _HEX.match(size_line):
            raise ProtocolError(f"bad chunk size {size_line[:20]!r}")
        size = int(size_line, 16)
        if size == 0:
            while await reader.until(b"\r\n", MAX_HEAD_BYTES):
                pass  # trailer fields: not kept
            return bytes(body), False
        if len(body) + size > cap:
            body += await reader.take(min(size, cap - len(body)))
            return bytes(body), True
        body += await reader.take(size)
        if await reader.take(2) != b"\r\n":
            raise ProtocolError("chunk not followed by CRLF")


async def read_response(stream: trio.abc.ReceiveStream, cap: int) -> Response:
    """One response; the body is read up to `cap` bytes. Interim 1xx replies are skipped."""
    reader = _Reader(stream)
    while True:
        head = await reader.until(b"\r\n\r\n", MAX_HEAD_BYTES)
        status, reason, headers, http10 = _parse_head(head)
        if status >= 200:
            break
    truncated = False
    delimited = True  # the body's end is known, so the connection may carry more
    if status in (204, 304):
        body = b""
    elif "transfer-encoding" in headers:
        codings = [c.strip().lower() for c in headers["transfer-encoding"].split(",")]
        if codings[-1] != "chunked":
            raise ProtocolError(f"unsupported Transfer-Encoding {headers['transfer-encoding']!r}")
        body, truncated = await _chunked(reader, cap)
    elif "content-length" in headers:
        text = headers["content-length"]
        if not text.isdigit() or len(text) > 18:
            raise ProtocolError(f"bad Content-Length {text[:20]!r}")
        length = int(text)
        body = await reader.take(min(length, cap))
        truncated = length > cap
    else:
        # Delimited by the end of the connection: read what the cap allows.
        delimited = False
        while len(reader.buffer) <= cap and await reader.fill():
            pass
        body = bytes(reader.buffer[:cap])
        truncated = len(reader.buffer) > cap
    closing = "close" in headers.get("connection", "").lower() or http10
    reusable = delimited and not truncated and not closing and not reader.buffer
    return Response(status, reason, headers, body, truncated, reusable)


def reason_of(error: BaseException) -> str:
    """The real reason behind a trio error (a TLS failure, a reset, a refused connect)."""
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, BaseExceptionGroup) and current.exceptions:
            current = current.exceptions[-1]  # trio's "all attempts to connect failed"
            continue
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"TLS certificate not accepted: {current.verify_message}"
        if isinstance(current, ssl.SSLError):
            return f"TLS failed: {current.reason or current}"
        if isinstance(current, OSError) and current.errno:
            return os.strerror(current.errno)
        current = current.__cause__ or current.__context__
    return str(error) or type(error).__name__
