"""The API's connection-level bounds (docs/security.md): connections capped per client address and
per API process (api/conncap.py), the TLS handshake's deadline, Python's TLS defaults kept,
and HTTP/1.1 only (no h2 by ALPN). Clients are plain sockets from chosen loopback addresses
(all of 127/8 is loopback on Linux), so the wire shows what is served and what is refused."""

from __future__ import annotations

import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, suppress
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime, tls
from tests.conftest import make_config
from tests.integration.dhcp.harness import dhcp_section
from tests.support.ports import free_port

PER_ADDRESS = 4
PER_PROCESS = 8
HANDSHAKE_SECONDS = 1.0


@pytest.fixture(params=["api-in-main", "api-in-worker"])
def config_overrides(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    # With a DHCP server the API runs in a worker process even with one worker
    # (runtime.api_in_main_process): the caps hold there as in the main process.
    api = {"max_connections_per_address": PER_ADDRESS,
           "max_connections_per_worker": PER_PROCESS,
           "tls_handshake_timeout_seconds": HANDSHAKE_SECONDS, "idle_timeout_seconds": 60.0}
    if request.param == "api-in-main":
        return {"api": api}
    return {"api": api, "dhcp": dhcp_section(free_port(socket.SOCK_DGRAM))}


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def _connect(port: int, source: str) -> trio.SocketStream:
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    await sock.bind((source, 0))
    await sock.connect(("127.0.0.1", port))
    return trio.SocketStream(sock)


_GET = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def _served(stream: trio.SocketStream) -> int:
    """Ask once on a kept-alive connection; the status of the whole response."""
    await stream.send_all(_GET)
    data = b""
    with trio.fail_after(10):
        while b"\r\n\r\n" not in data:
            more = await stream.receive_some(65536)
            assert more, f"closed before a response: {data!r}"
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += await stream.receive_some(65536)
    return int(head.split(b" ")[1])


async def _refused(stream: trio.SocketStream) -> bool:
    """Is the connection closed without an answer (EOF or reset, not a byte of HTTP)?"""
    try:
        await stream.send_all(_GET)
        with trio.fail_after(10):  # far inside the idle deadline: refused, not timed out
            return await stream.receive_some(65536) == b""
    except (trio.BrokenResourceError, ConnectionResetError):
        return True


class Clients:
    """Connections the test holds, closed at its end."""

    def __init__(self, port: int, stack: AsyncExitStack) -> None:
        self.port, self.stack = port, stack

    async def served(self, source: str) -> trio.SocketStream:
        stream = await self.stack.enter_async_context(await _connect(self.port, source))
        status = await _served(stream)
        assert 200 <= status < 500, status
        return stream

    async def refused(self, source: str) -> bool:
        async with await _connect(self.port, source) as stream:
            return await _refused(stream)


@pytest.fixture
async def clients(appliance: runtime.Running) -> AsyncIterator[Clients]:
    async with AsyncExitStack() as stack:
        yield Clients(_port(appliance.url("http")), stack)


async def _until_served(clients: Clients, source: str) -> trio.SocketStream:
    """The server lets a closed connection's count go as it notices the close: retry a
    refused connection until then."""
    with trio.fail_after(10):
        while True:
            try:
                return await clients.served(source)
            except (AssertionError, trio.BrokenResourceError, ConnectionResetError):
                await trio.sleep(0.05)


async def test_connections_past_the_per_address_cap_are_refused(clients: Clients) -> None:
    held = [await clients.served("127.0.0.1") for _ in range(PER_ADDRESS)]
    assert await clients.refused("127.0.0.1")  # the cap + 1st
    other = await clients.served("127.0.0.2")  # another address is served meanwhile
    assert await _served(other) < 500
    for stream in held:  # and the held ones still are
        assert await _served(stream) < 500
    await held.pop().aclose()
    await _until_served(clients, "127.0.0.1")  # a place given back is taken again


async def test_connections_past_the_process_cap_are_refused(clients: Clients) -> None:
    held = [await clients.served(f"127.0.0.{n // 2 + 1}") for n in range(PER_PROCESS)]
    assert await clients.refused("127.0.0.9")  # an address with none open: the process is full
    await held.pop().aclose()
    await _until_served(clients, "127.0.0.9")


async def test_a_tls_handshake_that_never_starts_is_cut_off(appliance: runtime.Running) -> None:
    stream = await _connect(_port(appliance.url("https")), "127.0.0.1")
    async with stream:
        with trio.fail_after(HANDSHAKE_SECONDS + 8):  # the idle deadline is 60 s
            with suppress(trio.BrokenResourceError):  # reset: closed too
                assert await stream.receive_some(1024) == b""


async def test_a_client_offering_h2_gets_http_1_1(appliance: runtime.Running) -> None:
    url = appliance.url("https") + "/api/v1/health"
    async with httpx.AsyncClient(http2=True, verify=False) as web:
        reply = await web.get(url, headers={"Host": "127.0.0.1"})
    assert reply.http_version == "HTTP/1.1" and reply.status_code < 500


async def test_a_client_that_speaks_only_h2_is_not_served_h2(
    appliance: runtime.Running,
) -> None:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    tcp = await _connect(_port(appliance.url("https")), "127.0.0.1")
    stream = trio.SSLStream(tcp, context, server_hostname="127.0.0.1")
    async with stream:
        await stream.do_handshake()
        assert stream.selected_alpn_protocol() is None  # the server acknowledged no h2
        # HTTP/2 with prior knowledge: not HTTP/1.1, refused as such
        await stream.send_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        reply = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in reply:
                more = await stream.receive_some(65536)
                assert more, reply
                reply += more
        assert reply.startswith(b"HTTP/1.1 400 ")


def test_tls_keeps_pythons_defaults_and_adds_to_them() -> None:
    config = make_config("postgresql://ipamd@localhost/unused")
    context = runtime.hypercorn_config(config).create_ssl_context()
    assert context is not None
    # None taken away (the protocol versions are minimum_version's, below).
    defaults = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).options & ~(
        ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3 | ssl.OP_NO_TLSv1 | ssl.OP_NO_TLSv1_1)
    assert context.options & defaults == defaults
    for option in (ssl.OP_NO_COMPRESSION, ssl.OP_CIPHER_SERVER_PREFERENCE,
                   ssl.OP_NO_RENEGOTIATION):
        assert context.options & option
    assert context.options & tls.SERVER_OPTIONS == tls.SERVER_OPTIONS
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
