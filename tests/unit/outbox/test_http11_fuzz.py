"""Property tests: whatever a receiver sends back, a delivery ends in a reply or an httpx error.

A receiver is outside the appliance's control; junk, truncated or hostile replies must turn
into an attempt's last_error (and a closed connection), never into another exception that
would reach the scheduler as an internal error.
"""

from __future__ import annotations

import socket

import httpx
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipamd.outbox.http11 import Connection, request_head
from ipamd.outbox.sockstream import SocketStream

FUZZ = settings(max_examples=400, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
HEAD = request_head(b"POST", b"/hook", [(b"Host", b"hook.test"), (b"Content-Length", b"2")])
VALID = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"4\r\nfail\r\n0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.0 302 Found\r\nLocation: http://169.254.169.254/\r\n\r\nmoved",
]


def _deliver(reply: bytes, close: bool) -> tuple[str, int | bytes]:
    """Send one request to a peer that answers `reply` (then closes, if `close`)."""
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    peer.sendall(reply)
    if close:
        peer.shutdown(socket.SHUT_WR)

    async def exchange() -> tuple[str, int | bytes]:
        connection = Connection(SocketStream(ours), "peer", keepalive_expiry=30.0)
        try:
            head = await connection.send(HEAD, b"{}", write_timeout=1, read_timeout=0.02)
            body = b""
            while chunk := await connection.receive_body(0.02):
                body += chunk
            await connection.finish()
            return "reply", head.status
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout) as error:
            assert connection.closed  # a failed exchange never leaves a reusable connection
            return type(error).__name__, str(error).encode()

    try:
        return trio.run(exchange)
    finally:
        ours.close()
        peer.close()


@FUZZ
@given(reply=st.binary(max_size=400), close=st.booleans())
def test_random_bytes_end_in_a_reply_or_an_httpx_error(reply: bytes, close: bool) -> None:
    _deliver(reply, close)


@FUZZ
@given(base=st.sampled_from(VALID), data=st.data(), close=st.booleans())
def test_mutated_replies_end_in_a_reply_or_an_httpx_error(base: bytes, data: st.DataObject,
                                                          close: bool) -> None:
    reply = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(("flip", "cut", "insert")))
        at = data.draw(st.integers(0, max(0, len(reply) - 1)))
        if action == "flip" and reply:
            reply[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del reply[at:]
        else:
            reply[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    _deliver(bytes(reply), close)


def test_the_valid_replies_parse():
    assert [_deliver(reply, close=True) for reply in VALID] == [
        ("reply", 200), ("reply", 500), ("reply", 204), ("reply", 302)]
