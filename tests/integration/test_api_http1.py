"""HTTP/1.x as the API serves it (api/http1.py): framing, keep-alive, pipelining, refusals,
100-continue, a client that goes, and each response in one write.

A small ASGI app under api/serve.py (the way the runtime serves) shows
the protocol's cases; the last test runs against the real appliance. Clients are plain
sockets, so every byte on the wire is what is asserted."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trustme
from hypercorn.config import Config

from ipamd import runtime
from ipamd.api import http1
from ipamd.api.conncap import ConnectionCaps
from ipamd.api.serve import serve

Scope = dict[str, Any]


class ToyApp:
    """Routes by path; remembers what it saw."""

    def __init__(self) -> None:
        self.disconnected = trio.Event()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].replace("lifespan.", "")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        path = scope["path"]
        if path == "/echo":
            body = b""
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # as Quart does: no answer
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            out = json.dumps({"method": scope["method"], "body": body.decode(),
                              "query": scope["query_string"].decode(),
                              "version": scope["http_version"]}).encode()
            await _whole(send, 200, out, length=True)
        elif path == "/whole":  # no Content-Length from the app: the server adds it
            await _whole(send, 200, b"whole body", length=False)
        elif path == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for part in (b"one,", b"two,", b"three"):
                await send({"type": "http.response.body", "body": part, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        elif path == "/slow":  # the client pipelines meanwhile
            await trio.sleep(0.2)
            await _whole(send, 200, b"slow", length=True)
        elif path == "/ignore":  # answers without reading the body
            await _whole(send, 202, b"ignored", length=True)
        elif path == "/short":  # says 10 bytes, sends 5
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"10")]})
            await send({"type": "http.response.body", "body": b"short"})
        elif path == "/boom":
            raise RuntimeError("the app failed before answering")
        elif path == "/half":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"part", "more_body": True})
            raise RuntimeError("the app failed mid-response")
        elif path == "/wait":  # until the client goes
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
        else:
            await _whole(send, 404, b"", length=True)


async def _whole(send: Any, status: int, body: bytes, *, length: bool) -> None:
    headers = [(b"content-type", b"text/plain")]
    if length:
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def serving(app: Any, **settings: Any) -> AsyncIterator[int]:
    """``app`` served by api/serve.py on a loopback port (yielded)."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 30
    for name, value in settings.items():
        setattr(config, name, value)
    caps = ConnectionCaps(per_address=64, per_process=1024)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, app, config, caps,
                                            shutdown_trigger=stop.wait))
        yield int(binds[0].rsplit(":", 1)[1])
        stop.set()


class Client:
    """A plain socket that reads whole responses."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _more(self) -> bool:
        data = await self.stream.receive_some(65536)
        self.buffer += data
        return bool(data)

    async def response(self, *, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of the next response."""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in self.buffer:
                assert await self._more(), f"closed before a response: {bytes(self.buffer)!r}"
            head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.buffer = bytearray(rest)
            if head_only or status in (100, 204, 304):
                return status, headers, b""
            if "content-length" in headers:
                length = int(headers["content-length"])
                while len(self.buffer) < length:
                    assert await self._more()
                body = bytes(self.buffer[:length])
                del self.buffer[:length]
            elif headers.get("transfer-encoding") == "chunked":
                body = await self._chunked()
            else:  # until the connection closes
                while await self._more():
                    pass
                body, self.buffer = bytes(self.buffer), bytearray()
            return status, headers, body

    async def _chunked(self) -> bytes:
        body = b""
        while True:
            while b"\r\n" not in self.buffer:
                assert await self._more()
            size_line, _, rest = bytes(self.buffer).partition(b"\r\n")
            size = int(size_line, 16)
            while len(rest) < size + 2:
                assert await self._more()
                rest = bytes(self.buffer).partition(b"\r\n")[2]
            body += rest[:size]
            self.buffer = bytearray(rest[size + 2:])
            if size == 0:
                return body

    async def closed(self) -> bool:
        """Does the server close the connection (no more bytes, then EOF)?"""
        with trio.fail_after(10):
            while True:
                try:
                    if not await self._more():
                        return True
                except trio.BrokenResourceError:  # reset: closed too
                    return True


@asynccontextmanager
async def client(port: int) -> AsyncIterator[Client]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        yield Client(stream)


def _get(path: str, *extra: str, version: str = "1.1") -> bytes:
    return (f"GET {path} HTTP/{version}\r\nHost: t\r\n" + "".join(f"{h}\r\n" for h in extra)
            + "\r\n").encode()


async def test_keep_alive_requests_on_one_connection() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        for n in range(3):
            await c.send(_get(f"/echo?n={n}"))
            status, headers, body = await c.response()
            assert status == 200 and "connection" not in headers
            assert json.loads(body)["query"] == f"n={n}"


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(b"".join(_get(f"/echo?n={n}") for n in range(5)))
        for n in range(5):
            status, _, body = await c.response()
            assert status == 200 and json.loads(body)["query"] == f"n={n}"


async def test_many_pipelined_behind_a_slow_request_are_all_answered() -> None:
    """What a client pipelines while the app works is read only up to a bound (then the
    socket holds it), and every request is still answered, in order."""
    async with serving(ToyApp()) as port, client(port) as c:
        padding = "X-Padding: " + "p" * 250  # 500 requests: ~140 KB, over the bound
        await c.send(_get("/slow") + b"".join(_get(f"/echo?n={n}", padding)
                                              for n in range(500)))
        assert (await c.response())[2] == b"slow"
        for n in range(500):  # (keep_alive_max_requests is 1,000)
            _status, _, body = await c.response()
            assert json.loads(body)["query"] == f"n={n}"


async def test_content_length_added_when_the_app_gives_the_whole_body() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(_get("/whole"))
        status, headers, body = await c.response()
        assert (status, headers["content-length"], body) == (200, "10", b"whole body")
        assert "date" in headers


async def test_streamed_body_is_chunked_in_1_1_and_close_delimited_in_1_0() -> None:
    async with serving(ToyApp()) as port:
        async with client(port) as c:
            await c.send(_get("/echo"))  # a Content-Length response first: framing is per response
            assert "content-length" in (await c.response())[1]
            await c.send(_get("/stream"))
            _, headers, body = await c.response()
            assert headers["transfer-encoding"] == "chunked" and body == b"one,two,three"
            await c.send(_get("/echo"))  # the connection goes on
            assert (await c.response())[0] == 200
        async with client(port) as c:
            await c.send(_get("/stream", version="1.0"))
            _status, headers, body = await c.response()
            assert "transfer-encoding" not in headers and "content-length" not in headers
            assert headers["connection"] == "close" and body == b"one,two,three"


async def test_head_has_no_body_and_the_connection_goes_on() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(b"HEAD /echo HTTP/1.1\r\nHost: t\r\n\r\n")
        status, headers, _ = await c.response(head_only=True)
        assert status == 200 and int(headers["content-length"]) > 0
        await c.send(_get("/echo?after=head"))
        status, _, body = await c.response()  # would misparse if HEAD had sent a body
        assert json.loads(body)["query"] == "after=head"


async def test_http_1_0_closes_unless_it_asks_for_keep_alive() -> None:
    async with serving(ToyApp()) as port:
        async with client(port) as c:
            await c.send(_get("/echo", version="1.0"))
            _status, headers, _ = await c.response()
            assert headers["connection"] == "close" and await c.closed()
        async with client(port) as c:
            await c.send(_get("/echo", "Connection: keep-alive", version="1.0"))
            await c.response()
            await c.send(_get("/echo", "Connection: keep-alive", version="1.0"))
            assert (await c.response())[0] == 200


async def test_client_connection_close_is_honoured() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(_get("/echo", "Connection: close"))
        _, headers, _ = await c.response()
        assert headers["connection"] == "close" and await c.closed()


async def test_chunked_request_body_with_expect_100_continue() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                     b"Expect: 100-continue\r\n\r\n")
        status, _, _ = await c.response(head_only=True)
        assert status == 100  # sent when the app reads the body, before the body came
        await c.send(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        status, _, body = await c.response()
        assert status == 200 and json.loads(body)["body"] == "hello world"


async def test_body_in_pieces_reaches_the_app_whole() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(b"PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhel")
        await trio.sleep(0.05)
        await c.send(b"lo world")
        _status, _, body = await c.response()
        assert json.loads(body) == {"method": "PUT", "body": "hello world", "query": "",
                                    "version": "1.1"}


async def test_unread_body_closes_the_connection_after_the_response() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\nab")
        status, headers, body = await c.response()
        assert (status, body) == (202, b"ignored")
        assert headers["connection"] == "close" and await c.closed()


@pytest.mark.parametrize("garbage", [b"BOGUS\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                                     b"GET /\x01 HTTP/1.1\r\nHost: t\r\n\r\n",
                                     b"POST / HTTP/1.1\r\nContent-Length: 1\r\n"
                                     b"Transfer-Encoding: chunked\r\n\r\n"])
async def test_malformed_request_is_refused_with_400(garbage: bytes) -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(garbage)
        status, headers, body = await c.response()
        assert status == 400 and headers["connection"] == "close" and await c.closed()
        error = json.loads(body)["error"]  # the error envelope, as every error has
        assert error["code"] == "bad_request" and "malformed" in error["message"]


async def test_malformed_chunked_body_is_refused_with_400() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        await trio.sleep(0.05)  # the app waits for the body when the garbage comes
        await c.send(b"zz\r\nnot a chunk\r\n")
        status, headers, body = await c.response()
        assert status == 400 and headers["connection"] == "close" and await c.closed()
        assert "malformed" in json.loads(body)["error"]["message"]


async def test_wrong_content_length_from_the_app_closes_the_connection() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(_get("/short"))
        assert await c.closed()  # the client cannot find where a next response would start
        assert bytes(c.buffer).endswith(b"\r\n\r\nshort")


async def test_head_over_the_limit_is_refused_with_431() -> None:
    async with serving(ToyApp(), h11_max_incomplete_size=4096) as port, client(port) as c:
        await c.send(b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 8000 + b"\r\n\r\n")
        status, _, body = await c.response()
        assert status == 431 and await c.closed()
        assert "larger than 4096 bytes" in json.loads(body)["error"]["message"]
    async with serving(ToyApp(), h11_max_incomplete_size=4096) as port, client(port) as c:
        await c.send(_get("/echo", "X-Fits: " + "a" * 3000))
        assert (await c.response())[0] == 200


async def test_app_failure_before_the_response_is_a_500_and_a_close() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(_get("/boom"))
        status, headers, body = await c.response()
        assert status == 500 and headers["connection"] == "close" and await c.closed()
        assert json.loads(body)["error"]["code"] == "internal"


async def test_app_failure_mid_response_closes_the_connection() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(_get("/half"))
        with pytest.raises(AssertionError):  # the chunked body never ends
            await c.response()
        assert await c.closed()


async def test_the_app_is_told_when_the_client_goes() -> None:
    app = ToyApp()
    async with serving(app) as port:
        async with client(port) as c:
            await c.send(_get("/wait"))
            await trio.sleep(0.05)
        with trio.fail_after(10):
            await app.disconnected.wait()


async def test_upgrade_request_is_answered_as_http_1_1_then_closed() -> None:
    async with serving(ToyApp()) as port, client(port) as c:
        await c.send(_get("/echo", "Connection: Upgrade", "Upgrade: websocket"))
        status, headers, _body = await c.response()
        assert status == 200 and headers["connection"] == "close" and await c.closed()


async def test_keep_alive_limits_close_the_connection() -> None:
    async with serving(ToyApp(), keep_alive_max_requests=2) as port, client(port) as c:
        await c.send(_get("/echo"))
        assert "connection" not in (await c.response())[1]
        await c.send(_get("/echo"))
        assert (await c.response())[1]["connection"] == "close" and await c.closed()
    async with serving(ToyApp(), keep_alive_timeout=0.2) as port, client(port) as c:
        await c.send(_get("/echo"))
        await c.response()
        assert await c.closed()  # idle for longer than keep_alive_timeout


async def test_a_fault_in_serving_ends_the_connection_not_the_server(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_scope = http1.Http1Connection._scope

    def faulty_scope(self: http1.Http1Connection, request: Any) -> Any:
        if b"fault" in request.target:
            raise RuntimeError("a bug in serving")
        return real_scope(self, request)

    monkeypatch.setattr(http1.Http1Connection, "_scope", faulty_scope)
    async with serving(ToyApp()) as port:
        async with client(port) as c:
            await c.send(_get("/echo?fault"))
            assert await c.closed()
        async with client(port) as c:  # the server still serves
            await c.send(_get("/echo"))
            assert (await c.response())[0] == 200
    assert "HTTP/1.1 connection from" in caplog.text


async def test_idle_connections_close_when_the_server_stops() -> None:
    with trio.fail_after(10):  # well inside graceful_timeout (30 s): not waited for
        async with serving(ToyApp()) as port:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            c = Client(stream)
            await c.send(_get("/echo"))
            await c.response()
    async with stream:
        assert await c.closed()


async def test_tls_http_1_1_is_served_here(tmp_path: Path) -> None:
    # (h2 is not offered: tests/integration/test_api_connections.py)
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_pem.write_to_path(tmp_path / "key.pem")
    cert.cert_chain_pems[0].write_to_path(tmp_path / "cert.pem")
    ca.cert_pem.write_to_path(tmp_path / "ca.pem")
    async with serving(ToyApp(), certfile=str(tmp_path / "cert.pem"),
                       keyfile=str(tmp_path / "key.pem")) as port:
        verify = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        async with httpx.AsyncClient(verify=verify) as web:
            for n in range(2):  # the second on the same connection
                reply = await web.post(f"https://127.0.0.1:{port}/echo?n={n}", content=b"hi")
                assert reply.http_version == "HTTP/1.1"
                assert reply.json() == {"method": "POST", "body": "hi", "query": f"n={n}",
                                        "version": "1.1"}


async def test_each_response_leaves_in_one_write(
    appliance: runtime.Running, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real API: head and body together, whatever the status, on one connection."""
    writes: list[bytes] = []
    real_write = http1.Http1Connection._write

    async def recording_write(self: http1.Http1Connection, data: bytes) -> None:
        writes.append(data)
        await real_write(self, data)

    monkeypatch.setattr(http1.Http1Connection, "_write", recording_write)
    host, port = appliance.url("http").removeprefix("http://").rsplit(":", 1)
    auth = f"Authorization: Bearer {tokens['viewer']}"
    requests = [
        ("/api/v1/prefixes?limit=5", [auth], 200, b'"items"'),
        ("/api/v1/no-such-thing", [auth], 404, b'"not_found"'),
        ("/api/v1/prefixes", [], 401, b'"unauthorized"'),
        ("/api/v1/whoami", [auth], 200, b'"viewer"'),
    ]
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        c = Client(stream)
        for path, extra, status, marker in requests:
            writes.clear()
            await c.send(_get(path, *extra))
            got, headers, body = await c.response()
            assert got == status and marker in body
            assert len(writes) == 1 and writes[0].endswith(body), f"{path}: {len(writes)} writes"
            assert headers["content-length"] == str(len(body))
