"""HTTP/1.x responses as api/http1.py writes them: the app's ASGI head checked and held,
then written with the first piece of body, so a whole response leaves in one write.

A response is framed by Content-Length (the app's, or added when the app gave the whole
body at once), else chunked (HTTP/1.1), else by the connection's close (HTTP/1.0); it has
no body for HEAD, 1xx, 204 and 304 (RFC 9110 §6.4.1). Never more body than the head
declared is written; a response that ends short of it, or whose framing is the close,
closes the connection, since the client could not find the next response.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

from ipamd.api.errors import ApiError


class State(enum.Enum):
    """A state of one of a connection's small machines: each machine is a subclass listing
    its states, and its ``to`` checks a move against the machine's table. Members are
    singletons, so they hash by identity (Enum's own hash is a Python call, and a move
    hashes twice: every request makes several)."""

    __hash__ = object.__hash__


def refused_move(current: State, new: State) -> RuntimeError:
    """A move the machine's table does not list: a bug in the connection's code, never
    something a client can cause."""
    return RuntimeError(f"{type(current).__name__}: no move from {current.name} to "
                        f"{new.name}")


class ResponseState(State):
    """Where a response is: PENDING → HEAD → (BODY →)* DONE."""

    PENDING = "the app has not started it"
    HEAD = "started: its head waits to leave with the first piece of body"
    BODY = "its head is written; more body follows"
    DONE = "complete"

    def to(self, new: ResponseState) -> ResponseState:
        if new in _RESPONSE_MOVES[self]:
            return new
        raise refused_move(self, new)


_RESPONSE_MOVES: Mapping[ResponseState, frozenset[ResponseState]] = {
    ResponseState.PENDING: frozenset({ResponseState.HEAD}),
    ResponseState.HEAD: frozenset({ResponseState.BODY, ResponseState.DONE}),
    ResponseState.BODY: frozenset({ResponseState.BODY, ResponseState.DONE}),
    ResponseState.DONE: frozenset(),
}


class Framing(enum.Enum):
    UNSET = "not chosen yet"
    LENGTH = "Content-Length"
    CHUNKED = "chunked"
    CLOSE = "the connection's close"


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


@dataclass(frozen=True, slots=True)
class HeadFields:
    """What every response's head carries besides the app's own headers."""

    dated: bool  # a Date header (RFC 9110 §6.6.1)
    extra: tuple[bytes, ...]  # "name: value" lines (Server, Alt-Svc)

    def lines(self) -> list[bytes]:
        return [b"date: " + _DATE.value(), *self.extra] if self.dated else list(self.extra)


def suppresses_body(method: str, status: int) -> bool:
    """A response with no body whatever the app gives (RFC 9110 §6.4.1, §9.3.2)."""
    return method == "HEAD" or 100 <= status < 200 or status in (204, 304)


class Response:
    """One response: its state, its head until written, and how its body is framed."""

    __slots__ = ("closes", "declared", "fields", "framing", "head", "method", "state",
                 "status", "version", "written")

    def __init__(self, method: str, version: str, fields: HeadFields) -> None:
        self.method = method
        self.version = version
        self.fields = fields
        self.state = ResponseState.PENDING
        self.status = 0
        self.head: list[bytes] = []  # the app's header lines, held until the first body
        self.framing = Framing.UNSET
        self.declared = -1  # the app's Content-Length
        self.written = 0  # body bytes written under it
        self.closes = False  # the connection closes after it (its framing, the app asked)

    def start(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """The app's http.response.start."""
        if not 200 <= status <= 999:
            raise ValueError(f"an HTTP/1.1 response status must be 200-999, not {status}")
        self.head = self._head_lines(headers)
        self.status = status
        self.state = self.state.to(ResponseState.HEAD)

    def _head_lines(self, headers: Iterable[tuple[bytes, bytes]]) -> list[bytes]:
        lines = []
        for raw_name, raw_value in headers:
            name, value = bytes(raw_name).strip(), bytes(raw_value).strip()
            if not name or b"\r" in name or b"\n" in name or b":" in name or \
                    b"\r" in value or b"\n" in value or b"\0" in value:
                raise ValueError(f"invalid response header {name!r}")
            lower = name.lower()
            if lower == b"content-length":
                self.framing = Framing.LENGTH
                self.declared = int(value)
            elif lower == b"connection":
                if b"close" in value.lower():
                    self.closes = True
                continue  # written by frame, from what the connection does
            elif lower == b"transfer-encoding":
                continue  # the body is framed here
            lines.append(name + b": " + value)
        return lines

    def frame(self, body: bytes, more: bool, *, request_complete: bool, last: bool) -> bytes:
        """The bytes to write for this piece of the body (the head with the first).
        ``request_complete``: the request's body was all read; ``last``: the connection
        takes no request after this one."""
        out = b""
        quiet = suppresses_body(self.method, self.status)
        if self.state is ResponseState.HEAD:
            out = self._head(len(body), more, quiet, request_complete=request_complete,
                             last=last)
        self.state = self.state.to(ResponseState.BODY if more else ResponseState.DONE)
        if quiet:
            return out
        if self.framing is Framing.CHUNKED:
            if body:
                out += b"%x\r\n%s\r\n" % (len(body), body)
            return out if more else out + b"0\r\n\r\n"
        if self.declared >= 0:
            if self.written + len(body) > self.declared:  # never past what the head said
                body = body[:self.declared - self.written]
                self.closes = True
            self.written += len(body)
            if not more and self.written != self.declared:
                self.closes = True  # the client cannot find where the next one begins
        return out + body

    def _head(self, size: int, more: bool, quiet: bool, *, request_complete: bool,
              last: bool) -> bytes:
        lines = self.head
        if self.framing is not Framing.LENGTH and not quiet:
            if not more:
                lines.append(b"content-length: %d" % size)
                self.framing = Framing.LENGTH
            elif self.version == "1.1":
                lines.append(b"transfer-encoding: chunked")
                self.framing = Framing.CHUNKED
            else:
                self.framing = Framing.CLOSE
                self.closes = True
        if not request_complete:  # the rest of its body would be read as a request
            self.closes = True
        if self.closes or last:
            lines.append(b"connection: close")
        lines += self.fields.lines()
        self.head = []
        return b"HTTP/1.1 %d %s\r\n%s\r\n\r\n" % (
            self.status, _REASONS.get(self.status, b""), b"\r\n".join(lines))


def error_start(status: int) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status,
            "headers": [(b"content-type", b"application/json")]}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The error envelope ({"error": {"code", "message"}}), made as the app's own errors
    make it (api/errors.py)."""
    body = json.dumps(ApiError(status, message).body()).encode()
    return {"type": "http.response.body", "body": body}
