"""The ping check's ICMP echo codec (RFC 792) and its checksum (RFC 1071), and how the
pinger matches a reply to its probe (dhcp/icmp.py, dhcp/pinger.py)."""

from __future__ import annotations

import struct
import uuid

import pytest
import trio
import trio.testing

from ipamd.dhcp import icmp
from ipamd.dhcp.pingcheck import ANSWERED, PENDING, PingGate, Probe
from ipamd.dhcp.pinger import Pinger
from tests.unit.dhcp.packets import ip


def test_checksum_is_rfc_1071s_ones_complement_sum() -> None:
    # RFC 1071 §3's example: the words 0001 f203 f4f5 f6f7 sum (with end-around carry) to
    # ddf2, whose complement is the checksum.
    data = bytes.fromhex("0001f203f4f5f6f7")
    assert icmp.checksum(data) == (~0xDDF2 & 0xFFFF)
    # The sum over the data and its checksum is all ones: checksum 0.
    assert icmp.checksum(data + icmp.checksum(data).to_bytes(2, "big")) == 0
    assert icmp.checksum(b"\x01") == (~0x0100 & 0xFFFF)  # an odd length is padded with zero
    assert icmp.checksum(b"") == 0xFFFF


def _reply_of(request: bytes) -> bytes:
    """What a host sends back (RFC 792): type 0, the rest copied, the checksum redone."""
    body = bytes((icmp.ECHO_REPLY, 0, 0, 0)) + request[4:]
    return body[:2] + icmp.checksum(body).to_bytes(2, "big") + body[4:]


def _ip_header(payload: bytes, source: str) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, 1, 0,
                       ip(source).to_bytes(4, "big"), ip("10.77.0.1").to_bytes(4, "big"))


def test_echo_request_and_its_reply() -> None:
    packet = icmp.echo_request(0x1234, 7, b"token-16-octets!")
    kind, code, _sum, ident, seq = icmp.HEADER.unpack_from(packet)
    assert (kind, code, ident, seq) == (icmp.ECHO_REQUEST, 0, 0x1234, 7)
    assert icmp.checksum(packet) == 0  # valid as sent
    assert icmp.parse_reply(packet, 1, ip_header=False) is None  # a request is no reply
    reply = _reply_of(packet)
    echo = icmp.parse_reply(reply, ip("10.77.1.10"), ip_header=False)
    assert echo is not None
    assert (echo.source, echo.ident, echo.seq, echo.data) == (
        ip("10.77.1.10"), 0x1234, 7, b"token-16-octets!")
    raw = icmp.parse_reply(_ip_header(reply, "10.77.1.10") + reply, 5, ip_header=True)
    assert raw is not None and raw.seq == 7 and raw.data == b"token-16-octets!"


@pytest.mark.parametrize("damage", ["checksum", "type", "short", "not_ipv4"])
def test_anything_but_a_sound_echo_reply_is_ignored(damage: str) -> None:
    reply = bytearray(_reply_of(icmp.echo_request(1, 2, b"data")))
    ip_header = damage == "not_ipv4"
    if damage == "checksum":
        reply[-1] ^= 0xFF
    elif damage == "type":
        reply[0] = 3  # destination unreachable
    elif damage == "short":
        reply = reply[:6]
    else:
        reply = bytearray(b"\x60" + bytes(39)) + reply  # an IPv6 header
    assert icmp.parse_reply(bytes(reply), 1, ip_header=ip_header) is None


class _Socket:
    """What the pinger sends, kept (the real socket: tests/integration/dhcp/test_ping_check)."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, tuple[str, int]]] = []
        self.replies: list[tuple[bytes, tuple[str, int]]] = []  # what recvfrom hands out

    def sendto(self, data: bytes, dest: tuple[str, int]) -> None:
        self.sent.append((data, dest))

    def recvfrom(self, size: int) -> tuple[bytes, tuple[str, int]]:
        if not self.replies:
            raise BlockingIOError
        return self.replies.pop(0)

    def close(self) -> None:
        pass


SUBNET = uuid.UUID("0192f000-0000-7000-8000-000000000001")


async def _sent(sock: _Socket, count: int) -> None:
    """Until the sender thread has sent ``count`` echoes (bounded: 5 s)."""
    with trio.fail_after(5):
        while len(sock.sent) < count:
            await trio.sleep(0.001)


async def test_a_reply_matches_only_its_probe_by_sequence_source_and_data() -> None:
    ended: list[tuple[object, int]] = []
    gate = PingGate(3600, 16)
    pinger = Pinger(gate, lambda tx, probe, result: ended.append((tx, result)))
    pinger.sock, pinger.kind = _Socket(), "raw"
    target = ip("10.77.1.10")
    gate.begin(SUBNET, target)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pinger._ship)
        pinger.start("client", Probe(SUBNET, target, 0, 5.0))
        assert pinger.sock.sent == []  # queued: the sender thread sends it
        await _sent(pinger.sock, 1)
        nursery.cancel_scope.cancel()
    sent, _dest = pinger.sock.sent[0]
    assert _dest == ("10.77.1.10", 0)
    _kind, _code, _sum, ident, seq = icmp.HEADER.unpack_from(sent)
    data = sent[icmp.HEADER.size:]
    for stray in (icmp.Echo(ip("10.77.1.11"), ident, seq, data),  # another host
                  icmp.Echo(target, ident, seq ^ 1, data),  # another probe
                  icmp.Echo(target, ident, seq, data[:-1] + b"\x00"),  # an older probe's data
                  icmp.Echo(target, ident ^ 1, seq, data)):  # another process's (raw socket)
        pinger._matched(stray, raw=True)
    assert ended == [] and len(pinger) == 1
    assert gate.verdict(SUBNET, target, 0.0) == PENDING
    pinger._matched(icmp.Echo(target, ident, seq, data), raw=True)
    assert ended == [("client", ANSWERED)] and len(pinger) == 0
    assert not gate.pending and gate.outcomes["answered"] == 1
    pinger._matched(icmp.Echo(target, ident, seq, data), raw=True)  # a duplicate reply
    assert len(ended) == 1


async def test_unanswered_probes_end_silent_at_their_deadline_not_before(
        autojump_clock: trio.testing.MockClock) -> None:
    ended: list[tuple[str, int]] = []
    gate = PingGate(3600, 16)
    pinger = Pinger(gate, lambda tx, probe, result: ended.append((tx, result)))
    pinger.sock, pinger.kind = _Socket(), "dgram"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pinger._expire)
        nursery.start_soon(pinger._ship)
        pinger.start("slow", Probe(SUBNET, ip("10.77.1.20"), 0, 2.0))
        pinger.start("quick", Probe(SUBNET, ip("10.77.1.21"), 0, 1.0))
        await trio.testing.wait_all_tasks_blocked()
        assert ended == []
        await trio.sleep(1.5)
        assert ended == [("quick", 0)]
        await trio.sleep(1.0)
        assert ended == [("quick", 0), ("slow", 0)]
        nursery.cancel_scope.cancel()
    assert len(pinger) == 0 and gate.outcomes["silent"] == 2


async def test_a_probe_that_cannot_be_sent_ends_unchecked_later_not_within_start() -> None:
    class Refusing(_Socket):
        def sendto(self, data: bytes, dest: tuple[str, int]) -> None:
            raise OSError(101, "Network is unreachable")

    ended: list[tuple[str, int]] = []
    gate = PingGate(3600, 16)
    pinger = Pinger(gate, lambda tx, probe, result: ended.append((tx, result)))
    pinger.sock, pinger.kind = Refusing(), "dgram"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pinger._expire)
        nursery.start_soon(pinger._ship)
        pinger.start("client", Probe(SUBNET, ip("10.77.1.30"), 0, 5.0))
        assert ended == []  # never from within start: the packet path is not re-entered
        with trio.fail_after(5):  # the sender thread's refusal comes back to the tasks
            while not ended:
                await trio.sleep(0.001)
        nursery.cancel_scope.cancel()
    assert ended == [("client", 2)] and gate.outcomes["unchecked"] == 1 and len(pinger) == 0


async def test_a_reply_waiting_in_the_socket_at_the_deadline_is_an_answer_not_silence(
        autojump_clock: trio.testing.MockClock) -> None:
    """A loop that ran late may reach the deadline before the reply task: the expiry reads
    what the socket holds first (only the expiry and sender tasks run here)."""
    ended: list[tuple[str, int]] = []
    gate = PingGate(3600, 16)
    pinger = Pinger(gate, lambda tx, probe, result: ended.append((tx, result)))
    sock = _Socket()
    pinger.sock, pinger.kind = sock, "dgram"
    target = ip("10.77.1.40")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pinger._expire)
        nursery.start_soon(pinger._ship)
        pinger.start("client", Probe(SUBNET, target, 0, 1.0))
        await _sent(sock, 1)
        request = sock.sent[0][0]
        reply = bytearray(request)
        reply[0], reply[2:4] = icmp.ECHO_REPLY, b"\x00\x00"
        reply[2:4] = icmp.checksum(bytes(reply)).to_bytes(2, "big")
        sock.replies.append((bytes(reply), ("10.77.1.40", 0)))
        await trio.sleep(1.5)
        nursery.cancel_scope.cancel()
    assert ended == [("client", ANSWERED)] and gate.outcomes["silent"] == 0
