"""The delivery client's HTTP/1.1 connection against a scripted peer on a socket pair."""

import contextlib
import socket

import httpx
import pytest
import trio

from ipamd.outbox.http11 import MAX_HEAD_BYTES, Connection, request_head
from ipamd.outbox.sockstream import SocketStream

HEAD = request_head(b"POST", b"/hook", [(b"Host", b"hook.test"), (b"Content-Length", b"2")])


@pytest.fixture
def pair():
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    yield Connection(SocketStream(ours), "peer", keepalive_expiry=30.0), peer
    ours.close()
    peer.close()


async def _exchange(connection: Connection, body: bytes = b"{}") -> tuple[int, bytes, dict]:
    head = await connection.send(HEAD, body, write_timeout=5, read_timeout=5)
    received = bytearray()
    while chunk := await connection.receive_body(5):
        received += chunk
    return head.status, bytes(received), dict(head.headers)


def test_the_request_head_is_one_block_and_refuses_what_could_split_it():
    assert HEAD == b"POST /hook HTTP/1.1\r\nHost: hook.test\r\nContent-Length: 2\r\n\r\n"
    for bad in ([(b"X-Evil", b"a\r\nInjected: 1")], [(b"Bad Name", b"x")],
                [(b"X", b"nul\x00")]):
        with pytest.raises(httpx.LocalProtocolError, match="invalid header"):
            request_head(b"POST", b"/", bad)
    with pytest.raises(httpx.LocalProtocolError, match="invalid request line"):
        request_head(b"POST", b"/a b", [])


async def test_a_reply_with_content_length_keeps_the_connection(pair):
    connection, peer = pair
    peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok")
    assert await _exchange(connection) == (200, b"ok", {b"Content-Length": b"2", b"X-A": b"b"})
    assert peer.recv(1000) == HEAD + b"{}"  # the request went out whole
    await connection.finish()
    assert connection.reusable()
    peer.send(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert (await _exchange(connection))[:2] == (204, b"")
    await connection.finish()
    assert connection.reusable() and connection.requests == 2


async def test_a_chunked_reply_is_assembled(pair):
    connection, peer = pair
    peer.send(b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    head = await connection.send(HEAD, b"{}", write_timeout=5, read_timeout=5)
    assert (head.status, head.reason) == (500, b"Oops")
    received = b""
    while chunk := await connection.receive_body(5):
        received += chunk
    assert received == b"abcde"
    await connection.finish()
    assert connection.reusable()


async def test_interim_replies_are_skipped(pair):
    connection, peer = pair
    peer.send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
              b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    assert await _exchange(connection) == (202, b"", {b"Content-Length": b"0"})


async def test_a_reply_that_ends_with_the_connection_is_whole_and_not_kept(pair):
    connection, peer = pair
    peer.send(b"HTTP/1.1 200 OK\r\n\r\nall of it")
    peer.shutdown(socket.SHUT_WR)
    assert (await _exchange(connection))[:2] == (200, b"all of it")
    await connection.finish()
    assert connection.closed


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n",  # a stray reply
])
async def test_the_connection_is_not_kept_when_the_reply_says_so_or_more_follows(pair, reply):
    connection, peer = pair
    peer.send(reply)
    assert (await _exchange(connection))[0] == 200
    await connection.finish()
    assert connection.closed


async def test_a_body_left_unread_closes_the_connection(pair):
    connection, peer = pair
    peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 10)
    await connection.send(HEAD, b"{}", write_timeout=5, read_timeout=5)
    assert await connection.receive_body(5) == b"x" * 10
    await connection.finish()
    assert connection.closed


@pytest.mark.parametrize(("reply", "message"), [
    (b"", "^the receiver closed the connection before replying$"),
    (b"HTTP/1.1 200 OK\r\nContent-Len", "^the receiver closed the connection mid-reply$"),
    (b"SMTP ready\r\n\r\n", "^invalid HTTP response: "),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "switched protocols"),
])
async def test_broken_replies_are_explained(pair, reply, message):
    connection, peer = pair
    peer.send(reply)
    peer.shutdown(socket.SHUT_WR)
    with pytest.raises(httpx.RemoteProtocolError, match=message):
        await connection.send(HEAD, b"{}", write_timeout=5, read_timeout=5)
    assert connection.closed


async def test_an_endless_reply_head_is_refused(pair, nursery):
    connection, peer = pair
    peer.setblocking(False)

    async def endless_header() -> None:
        peer.send(b"HTTP/1.1 200 OK\r\nX: ")
        # Until the client gives up and closes (a broken pipe here).
        with trio.move_on_after(10), contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while True:
                await trio.lowlevel.wait_writable(peer)
                peer.send(b"y" * 4096)

    nursery.start_soon(endless_header)
    with pytest.raises(httpx.RemoteProtocolError, match=f"larger than {MAX_HEAD_BYTES} bytes"):
        await connection.send(HEAD, b"{}", write_timeout=5, read_timeout=5)
    assert connection.closed
    nursery.cancel_scope.cancel()


async def test_a_reply_sent_before_the_request_was_taken_is_still_read(pair):
    # A receiver may answer (413) and stop reading before taking the whole request.
    connection, peer = pair
    peer.send(b"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    peer.shutdown(socket.SHUT_RD)
    head = await connection.send(HEAD, b"x" * 2_000_000, write_timeout=5, read_timeout=5)
    assert head.status == 413


async def test_a_silent_receiver_times_out_and_the_connection_is_closed(pair):
    connection, _peer = pair
    with trio.fail_after(5), pytest.raises(httpx.ReadTimeout):
        await connection.send(HEAD, b"{}", write_timeout=5, read_timeout=0.2)
    assert connection.closed


async def test_an_idle_connection_the_receiver_closed_or_that_expired_is_not_reused(pair):
    connection, peer = pair
    peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    await _exchange(connection)
    await connection.finish()
    connection.keepalive_expiry = 0.0
    await trio.sleep(0.01)
    assert not connection.reusable()  # expired
    connection.keepalive_expiry = 30.0
    assert connection.reusable()
    peer.close()
    assert not connection.reusable()  # the receiver closed it meanwhile

