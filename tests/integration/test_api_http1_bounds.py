"""What api/http1.py bounds inside one connection, and the framing RFC 9112 requires
(docs/security.md): a head or trailer section that never ends is refused as soon as it passes the
limit while other clients are served, pipelined requests are parsed only up to a bound, and
what llhttp accepts but RFC 9112 refuses is refused; `Expect: 100-continue` gets no 100
before the request is authorized.

Plain sockets on loopback, against the toy app of test_api_http1.py under api/serve.py (as the
runtime serves) or against the real appliance. The only timing asserted is the issue's own
bound: the refusal within 1 s of the byte that passed the limit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio
from hypercorn.config import Config

from ipamd import runtime
from ipamd.api import http1, http1_parse
from tests.integration.test_api_http1 import Client, Scope, ToyApp, _get, _whole, client, serving

# How long a client may keep feeding an endless line (then the test has failed anyway).
FEED_LIMIT_BYTES = 8 * 2**20
PIECE = 2048


class HoldApp(ToyApp):
    """ToyApp, and /hold: answers only once released (the client pipelines meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.held = trio.Event()
        self.release = trio.Event()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/hold":
            self.held.set()
            await self.release.wait()
            await _whole(send, 200, b"held", length=True)
            return
        await super().__call__(scope, receive, send)


async def _feed_until_answered(stream: trio.SocketStream, sent: int, limit: int,
                               ) -> tuple[tuple[int, dict[str, str], bytes], float]:
    """Keep sending one endless line (``sent`` bytes of the head or trailers are out) while
    reading; the answer, and how long after the byte that passed ``limit`` it came."""
    passed: list[float] = []
    answer: list[tuple[int, dict[str, str], bytes]] = []

    async def feed() -> None:
        nonlocal sent
        try:
            while sent < FEED_LIMIT_BYTES:
                await stream.send_all(b"a" * PIECE)
                sent += PIECE
                if sent > limit and not passed:
                    passed.append(trio.current_time())
                await trio.sleep(0.001)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # the server closed after its answer

    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed)
        answer.append(await Client(stream).response())
        answered = trio.current_time()
        nursery.cancel_scope.cancel()
    assert passed, f"answered before the limit was passed: {answer}"
    return answer[0], answered - passed[0]


async def _served_meanwhile(get: Callable[[], Any], times: int = 5) -> None:
    for _ in range(times):
        assert await get() == 200


async def test_a_header_line_that_never_ends_is_refused_once_past_the_limit(
    appliance: runtime.Running,
) -> None:
    """The real API: the line's bytes are counted as they come, not when it ends; another
    client is served before and while the line grows."""
    limit = runtime.hypercorn_config(appliance.state.config).h11_max_incomplete_size
    base = appliance.url("http")
    host, port = base.removeprefix("http://").rsplit(":", 1)
    head = b"GET /api/v1/health HTTP/1.1\r\nHost: t\r\nX-Endless: "
    async with httpx.AsyncClient(base_url=base) as other:
        async def get() -> int:
            return (await other.get("/api/v1/health")).status_code

        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(head + b"a" * (limit // 2))
            await _served_meanwhile(get)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_served_meanwhile, get)
                (status, headers, body), after = await _feed_until_answered(
                    stream, len(head) + limit // 2, limit)
    assert status == 431 and headers["connection"] == "close", (status, body)
    assert json.loads(body)["error"]["code"] == "headers_too_large"
    assert f"larger than {limit} bytes" in json.loads(body)["error"]["message"]
    assert after < 1.0, f"answered {after:.2f} s after the limit was passed"


async def test_a_trailer_section_that_never_ends_is_refused_once_past_the_limit() -> None:
    app = HoldApp()
    async with serving(app) as port, client(port) as c, client(port) as other:
        limit = Config().h11_max_incomplete_size
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"5\r\nhello\r\n0\r\nX-Endless: ")

        async def get() -> int:
            await other.send(_get("/echo"))
            return (await other.response())[0]

        await _served_meanwhile(get)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_served_meanwhile, get)
            (status, headers, body), after = await _feed_until_answered(c.stream, 20, limit)
    assert status == 431 and headers["connection"] == "close", (status, body)
    assert "trailer section is larger than" in json.loads(body)["error"]["message"]
    assert after < 1.0, f"answered {after:.2f} s after the limit was passed"


async def test_a_chunk_size_line_that_never_ends_is_refused() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        limit = Config().h11_max_incomplete_size
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"5\r\nhello\r\n5;ext=")
        (status, _, body), after = await _feed_until_answered(c.stream, 7, limit)
    assert status == 400 and "chunk-size line" in json.loads(body)["error"]["message"]
    assert after < 1.0, f"answered {after:.2f} s after the limit was passed"


async def test_trailers_within_the_limit_are_taken_and_the_connection_goes_on() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        # Each within the limit, together over it: counted apart.
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                     b"X-Big: " + b"h" * 10_000 + b"\r\n\r\n"
                     b"0\r\nX-Checksum: " + b"c" * 10_000 + b"\r\n\r\n")
        status, _, body = await c.response()
        assert status == 200 and json.loads(body)["body"] == ""
        await c.send(_get("/echo?after=trailers"))
        assert json.loads((await c.response())[2])["query"] == "after=trailers"


@asynccontextmanager
async def connections_seen(monkeypatch: pytest.MonkeyPatch,
                           ) -> AsyncIterator[list[http1.Http1Connection]]:
    seen: list[http1.Http1Connection] = []
    real_init = http1.Http1Connection.__init__

    def recording_init(self: http1.Http1Connection, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        seen.append(self)

    monkeypatch.setattr(http1.Http1Connection, "__init__", recording_init)
    yield seen


async def test_pipelined_requests_are_parsed_only_up_to_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One write of ~1,500 small requests behind one the app holds: at most MAX_QUEUED are
    parsed while it is held (the rest waits unparsed, then in the socket), and every one is
    answered in order once it is released."""
    app = HoldApp()
    count = 1500
    async with connections_seen(monkeypatch) as seen, \
            serving(app, keep_alive_max_requests=10_000) as port, client(port) as c:
        flood = b"".join(_get(f"/echo?n={n}") for n in range(count))
        assert len(flood) > 50_000
        await c.send(_get("/hold") + flood)
        with trio.fail_after(10):
            await app.held.wait()
        parsed = seen[0].parsed
        for _ in range(20):  # while held, however the bytes come in
            assert len(parsed.ready) <= http1_parse.MAX_QUEUED
            assert sum(r.size for r in parsed.ready) <= http1_parse.MAX_PIPELINED + http1.MAX_RECV
            await trio.sleep(0.05)
        assert parsed.waiting or parsed.fed < len(flood)  # the rest is not parsed yet
        app.release.set()
        assert (await c.response())[2] == b"held"
        for n in range(count):
            _status, _, body = await c.response()
            assert json.loads(body)["query"] == f"n={n}"


async def test_pipelined_bodies_are_parsed_only_up_to_the_byte_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = HoldApp()
    body = b"b" * 20_000
    post = (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    # (1 MB: the socket may not take it all at once, so it is sent alongside)
    async with connections_seen(monkeypatch) as seen, serving(app) as port, \
            client(port) as c, trio.open_nursery() as nursery:
        nursery.start_soon(c.send, _get("/hold") + post * 50)
        with trio.fail_after(10):
            await app.held.wait()
        parsed = seen[0].parsed
        for _ in range(20):
            queued = sum(r.size for r in parsed.ready)
            assert queued <= http1_parse.MAX_PIPELINED + http1.MAX_RECV, queued
            assert len(parsed.ready) <= 4  # 20 kB each: the bytes bind first
            await trio.sleep(0.05)
        app.release.set()
        assert (await c.response())[2] == b"held"
        for _ in range(50):
            status, _, answer = await c.response()
            assert status == 200 and len(json.loads(answer)["body"]) == len(body)


@pytest.mark.parametrize(("request_bytes", "status", "words"), [
    (b"POST /echo HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
     "HTTP/1.0 request with Transfer-Encoding"),
    (b"GET /echo\r\nHost: t\r\n\r\n", 400, "names no HTTP version"),
    (b"GET /echo HTTP/1.1\r\nX-No-Host: t\r\n\r\n", 400, "no Host header"),
    (b"GET /echo HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n", 400, "more than one Host"),
    (b"GET /echo HTTP/1.1\r\nHost: a/b@c\r\n\r\n", 400, "not a host and port"),
    (b"GET /echo HTTP/2.0\r\nHost: t\r\n\r\n", 505, "HTTP/2.0 is not served"),
])
async def test_framing_rfc_9112_refuses_is_refused_and_the_connection_closes(
    request_bytes: bytes, status: int, words: str,
) -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        # A good request first: the refusal comes after its answer, in order.
        await c.send(_get("/echo?first") + request_bytes + _get("/echo?never"))
        assert json.loads((await c.response())[2])["query"] == "first"
        got, headers, body = await c.response()
        assert (got, headers["connection"]) == (status, "close"), body
        assert words in json.loads(body)["error"]["message"]
        assert await c.closed()


@pytest.mark.parametrize("request_bytes", [
    b"GET /echo HTTP/1.0\r\n\r\n",  # HTTP/1.0 needs no Host
    b"GET /echo HTTP/1.1\r\nHost:\r\n\r\n",  # empty: no authority (RFC 9112 §3.2)
    b"GET /echo HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
    b"GET /echo HTTP/1.1\r\nHost: ipam.example:443\r\n\r\n",
])
async def test_good_hosts_are_served(request_bytes: bytes) -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(request_bytes)
        assert (await c.response())[0] == 200


async def test_empty_lines_before_a_request_line_are_skipped() -> None:
    async with serving(ToyApp()) as port, client(port) as c:  # RFC 9112 §2.2
        await c.send(b"\r\n" * 5000 + _get("/echo?n=1") + b"\r\n\r\n" + _get("/echo?n=2"))
        for n in (1, 2):
            assert json.loads((await c.response())[2])["query"] == f"n={n}"


async def test_expect_100_continue_gets_no_100_before_the_request_is_authorized(
    appliance: runtime.Running, tokens: dict[str, str],
) -> None:
    """Refused (401) at once without a 100 and closed; authorized, the 100 comes when the
    handler reads the body."""
    host, port = appliance.url("http").removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"name": "from-expect"}).encode()
    head = (b"POST /api/v1/tenants HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
            b"Content-Length: %d\r\n" % len(body))
    async with client_to(host, int(port)) as c:
        await c.send(head + b"\r\n")  # no Authorization; the body waits for a 100
        status, headers, answer = await c.response()
        assert status == 401 and headers["connection"] == "close", (status, answer)
        assert await c.closed()
    async with client_to(host, int(port)) as c:
        await c.send(head + b"Authorization: Bearer " + tokens["admin"].encode() + b"\r\n\r\n")
        assert (await c.response(head_only=True))[0] == 100
        await c.send(body)
        status, _, answer = await c.response()
        assert status == 201 and json.loads(answer)["name"] == "from-expect", answer


@asynccontextmanager
async def client_to(host: str, port: int) -> AsyncIterator[Client]:
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        yield Client(stream)
