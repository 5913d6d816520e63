"""The delivery client's socket streams: timeouts, end of stream, TLS on the socket."""

import socket

import httpx
import pytest
import trio

from ipamd.outbox import client as http_client
from ipamd.outbox import sockstream
from ipamd.outbox.sockstream import SocketStream


@pytest.fixture
def pair():
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    peer.setblocking(False)
    yield SocketStream(ours), peer
    ours.close()
    peer.close()


def _available(peer: socket.socket) -> bytes:
    try:
        return peer.recv(1 << 20)
    except BlockingIOError:
        return b""


async def test_reads_what_the_peer_sent_and_writes_everything(pair):
    stream, peer = pair
    peer.send(b"hello")
    assert await stream.read(100) == b"hello"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.write, b"x" * 1_000_000)  # waits for the peer to drain
        received = bytearray()
        with trio.fail_after(5):
            while len(received) < 1_000_000:
                await trio.lowlevel.wait_readable(peer)
                received += _available(peer)
    assert bytes(received) == b"x" * 1_000_000


async def test_a_silent_peer_times_out_on_read(pair):
    stream, _peer = pair
    with trio.fail_after(5), pytest.raises(httpx.ReadTimeout, match=r"0\.2 s"):
        await stream.read(100, timeout=0.2)


async def test_the_peer_closing_reads_as_end_of_stream(pair):
    stream, peer = pair
    peer.send(b"last")
    peer.close()
    assert await stream.read(100) == b"last"
    assert await stream.read(100) == b""
    assert stream.readable()  # idle but readable: the connection is not reusable


async def test_reads_and_writes_on_a_closed_stream_fail_clearly(pair):
    stream, _peer = pair
    await stream.aclose()
    with pytest.raises(httpx.ReadError, match="closed"):
        await stream.read(100)
    await stream.aclose()  # twice is harmless


async def test_connect_refused_is_a_connect_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(httpx.ConnectError, match="Connection refused"):
            await sockstream.connect("127.0.0.1", port, timeout=5)


async def test_tls_on_the_socket_checks_the_name_and_carries_the_exchange(ca_file, receiver):
    context = http_client.ssl_context(ca_file)
    plain = await sockstream.connect("127.0.0.1", receiver.port, timeout=5)
    tls = await plain.start_tls(context, server_hostname="hook.test", timeout=5)
    assert tls.tls is not None and tls.tls.version().startswith("TLS")
    await tls.write(b"GET /nothing HTTP/1.1\r\nHost: hook.test\r\nContent-Length: 0\r\n\r\n")
    reply = b""
    with trio.fail_after(5):
        while b"\r\n\r\n" not in reply:
            reply += await tls.read(4096)
    assert reply.startswith(b"HTTP/1.1 ")
    await tls.aclose()

    wrong = await sockstream.connect("127.0.0.1", receiver.port, timeout=5)
    with pytest.raises(httpx.ConnectError, match="TLS certificate not accepted"):
        await wrong.start_tls(context, server_hostname="not-the-name.test", timeout=5)
