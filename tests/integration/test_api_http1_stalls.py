"""A client that stalls in the middle of a request body, or stops reading a response, holds
its connection no longer than an idle one (api/http1.py, docs/security.md: the HTTP layer bounds
everything it holds). Plain sockets on loopback against a toy app under api/serve.py, with
the idle deadline (``keep_alive_timeout``, `api.idle_timeout_seconds`) set short."""

from __future__ import annotations

import socket
from typing import Any

import trio

from tests.integration.test_api_http1 import Scope, ToyApp, client, serving

IDLE = 0.5
BIG = 64 * 2**20  # far more than the socket buffers on both sides hold
PIECE = 2**16


class BigApp(ToyApp):
    """ToyApp, and /big: a response of BIG bytes, sent in pieces."""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/big":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", str(BIG).encode())]})
            for _ in range(BIG // PIECE):
                await send({"type": "http.response.body", "body": b"x" * PIECE,
                            "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await super().__call__(scope, receive, send)


async def _read_to_end(stream: trio.SocketStream) -> int:
    total = 0
    while data := await stream.receive_some(PIECE):
        total += len(data)
    return total


async def test_a_body_that_stops_arriving_closes_the_connection() -> None:
    async with serving(ToyApp(), keep_alive_timeout=IDLE) as port, client(port) as c:
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
        # The app is told the client went (it answers nothing) and the connection closes.
        with trio.fail_after(IDLE * 20):
            assert await c.stream.receive_some(PIECE) == b""


async def test_a_client_that_stops_reading_is_dropped() -> None:
    async with serving(BigApp(), keep_alive_timeout=IDLE) as port, client(port) as c:
        c.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        await c.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        await trio.sleep(IDLE * 6)  # reads nothing: the server's writes stall, then give up
        with trio.fail_after(30):
            received = await _read_to_end(c.stream)
    # What the kernel had buffered arrives, then the end: never the whole response.
    assert 0 < received < BIG


async def test_a_slow_but_steady_body_is_served() -> None:
    async with serving(ToyApp(), keep_alive_timeout=IDLE) as port, client(port) as c:
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\n\r\n")
        for piece in (b"ab", b"cd", b"ef", b"gh"):
            await trio.sleep(IDLE / 3)  # each piece within the deadline, the whole not
            await c.send(piece)
        status, _, body = await c.response()
    assert status == 200 and b'"body": "abcdefgh"' in body
