"""Answers through the kernel (loopback only): a segmented send (UDP_SEGMENT) arrives as the
separate datagrams it was made of, each whole, and the kernel keeps taking them; answers a
full buffer refused leave through the server's backlog task."""

from __future__ import annotations

import socket

import trio

from ipamd.dhcp import options as o
from ipamd.dhcp.context import Endpoint
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.outgoing import MAX_SEGMENTS, Outgoing
from tests.unit.dhcp.test_server_packets import make_server


def _answer(n: int, size: int) -> bytes:
    return n.to_bytes(4, "big") * (size // 4)


def test_segmented_answers_arrive_whole_and_separate() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        sender.bind(("127.0.0.1", 0))
        sender.setblocking(False)
        receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(5)
        ep = Endpoint(sock=sender, local_ip=0x7F000001, port=sender.getsockname()[1])
        out = Outgoing(DhcpCounters(), lambda: None)
        # More than one send's worth of one size, and a second size.
        answers = ([_answer(n, 300) for n in range(MAX_SEGMENTS + 36)]
                   + [_answer(n, 312) for n in range(1000, 1003)])
        for data in answers:
            out.add(ep, receiver.getsockname(), data, o.ACK)
        out.flush()
        got = [receiver.recv(4096) for _ in answers]
        assert sorted(got) == sorted(answers)
        assert ep.gso is True  # taken segmented, not refused and sent one by one
        assert out.counters.sent[o.ACK] == len(answers) and not out.counters.drops
        receiver.settimeout(0.2)
        try:
            extra = receiver.recv(4096)
        except TimeoutError:
            extra = None
        assert extra is None


async def test_the_servers_backlog_task_sends_what_a_full_buffer_refused() -> None:
    """Answers backlogged by ``Outgoing`` (their socket was full) leave through the server's
    backlog task once the socket is writable, whole and counted."""
    server, _ = make_server()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        sender.bind(("127.0.0.1", 0))
        sender.setblocking(False)
        receiver.bind(("127.0.0.1", 0))
        receiver.setblocking(False)
        ep = Endpoint(sock=sender, local_ip=0x7F000001, port=sender.getsockname()[1])
        out = server.dispatch.out
        answers = [(ep, receiver.getsockname(), _answer(n, 300), o.OFFER) for n in range(3)]
        for answer in answers:
            out._defer(answer)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server._flush_backlog)
            got: list[bytes] = []
            with trio.fail_after(5):
                while len(got) < len(answers):
                    await trio.lowlevel.wait_readable(receiver)
                    got.append(receiver.recv(4096))
            nursery.cancel_scope.cancel()
        assert got == [answer[2] for answer in answers]
        assert not out.backlog and server.counters.sent[o.OFFER] == 3
