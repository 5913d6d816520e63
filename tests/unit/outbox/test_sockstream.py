"""The delivery client's socket streams: one write per request, timeouts, EOF, TLS on the socket."""

import socket

import httpcore
import pytest
import trio

from ipamd.outbox import client as http_client
from ipamd.outbox import sockstream
from ipamd.outbox.sockstream import FLUSH_BYTES, SocketStream


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


async def test_head_and_body_leave_in_one_write_when_the_reply_is_read(pair):
    stream, peer = pair
    await stream.write(b"POST / HTTP/1.1\r\n\r\n")
    await stream.write(b"{}")
    assert _available(peer) == b""  # held until the first read
    peer.send(b"HTTP/1.1 200 OK\r\n")
    assert await stream.read(100) == b"HTTP/1.1 200 OK\r\n"
    assert _available(peer) == b"POST / HTTP/1.1\r\n\r\n{}"


async def test_a_large_body_is_not_held(pair):
    stream, peer = pair
    await stream.write(b"x" * (FLUSH_BYTES - 1))
    assert _available(peer) == b""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.write, b"y")  # may wait for the peer to drain
        received = bytearray()
        with trio.fail_after(5):
            while len(received) < FLUSH_BYTES:
                await trio.lowlevel.wait_readable(peer)
                received += _available(peer)
    assert bytes(received) == b"x" * (FLUSH_BYTES - 1) + b"y"


async def test_a_reply_sent_before_the_request_was_taken_is_still_read(pair):
    # A receiver may answer (413, 401) and stop reading before taking the request.
    stream, peer = pair
    peer.send(b"HTTP/1.1 413 Too Large\r\n")
    peer.shutdown(socket.SHUT_RD)
    await stream.write(b"POST / HTTP/1.1\r\n\r\n")
    assert await stream.read(100) == b"HTTP/1.1 413 Too Large\r\n"


async def test_a_silent_peer_times_out_on_read(pair):
    stream, _peer = pair
    with trio.fail_after(5), pytest.raises(httpcore.ReadTimeout, match=r"0\.2 s"):
        await stream.read(100, timeout=0.2)


async def test_the_peer_closing_reads_as_end_of_stream(pair):
    stream, peer = pair
    peer.send(b"last")
    peer.close()
    assert await stream.read(100) == b"last"
    assert await stream.read(100) == b""
    assert stream.get_extra_info("is_readable") is True  # idle but readable: not reusable


async def test_reads_and_writes_on_a_closed_stream_fail_clearly(pair):
    stream, _peer = pair
    await stream.aclose()
    with pytest.raises(httpcore.ReadError, match="closed"):
        await stream.read(100)
    await stream.aclose()  # twice is harmless


async def test_connect_refused_is_a_connect_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(httpcore.ConnectError, match="Connection refused"):
            await sockstream.connect("127.0.0.1", port, timeout=5)


async def test_tls_on_the_socket_checks_the_name_and_carries_the_exchange(ca_file, receiver):
    context = http_client.ssl_context(ca_file)
    plain = await sockstream.connect("127.0.0.1", receiver.port, timeout=5)
    tls = await plain.start_tls(context, server_hostname="hook.test", timeout=5)
    assert tls.get_extra_info("ssl_object").version().startswith("TLS")
    await tls.write(b"GET /nothing HTTP/1.1\r\nHost: hook.test\r\n")
    await tls.write(b"Content-Length: 0\r\n\r\n")
    reply = b""
    with trio.fail_after(5):
        while b"\r\n\r\n" not in reply:
            reply += await tls.read(4096)
    assert reply.startswith(b"HTTP/1.1 ")
    await tls.aclose()

    wrong = await sockstream.connect("127.0.0.1", receiver.port, timeout=5)
    with pytest.raises(httpcore.ConnectError, match="TLS certificate not accepted"):
        await wrong.start_tls(context, server_hostname="not-the-name.test", timeout=5)
