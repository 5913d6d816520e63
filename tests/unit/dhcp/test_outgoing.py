"""Answers out (dhcp/outgoing.py): grouped by socket, destination and size into segmented
sends, and every refusal handled without losing an answer. Fake sockets stand in for the
kernel here; tests/integration/dhcp/test_outgoing_udp.py sends through real ones."""

from __future__ import annotations

import errno
import logging
from typing import Any

import pytest

from ipamd.dhcp import options as o
from ipamd.dhcp.context import Endpoint
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.outgoing import BACKLOG_MAX, MAX_SEGMENTS, Outgoing
from tests.unit.dhcp.test_server_packets import FakeSocket

RELAY_A = ("10.77.0.2", 67)
RELAY_B = ("10.77.0.3", 67)


class RefusingSocket(FakeSocket):
    """A socket whose segmented sends fail with ``error`` (or would block)."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def sendmsg(self, *args: Any) -> int:
        raise self.error


class FullSocket(FakeSocket):
    def sendto(self, data: bytes, addr: tuple[str, int]) -> int:
        raise BlockingIOError(errno.EAGAIN, "full")

    def sendmsg(self, *args: Any) -> int:
        raise BlockingIOError(errno.EAGAIN, "full")


def _out() -> tuple[Outgoing, list[int]]:
    wakes: list[int] = []
    return Outgoing(DhcpCounters(), lambda: wakes.append(1)), wakes


def _answer(n: int, size: int) -> bytes:
    return n.to_bytes(4, "big") * (size // 4)


def test_answers_to_one_destination_of_one_size_leave_in_one_send() -> None:
    out, _ = _out()
    ep = Endpoint(sock=FakeSocket(), local_ip=0, port=67)
    expected = []
    for n in range(10):
        data = _answer(n, 300)
        out.add(ep, RELAY_A, data, o.OFFER if n % 2 else o.ACK)
        expected.append((data, RELAY_A))
    out.flush()
    assert ep.sock.sent == expected  # whole, in order
    assert ep.sock.segmented_sends == 1
    assert out.counters.sent[o.OFFER] == 5 and out.counters.sent[o.ACK] == 5
    assert not out.queued


def test_destinations_and_sizes_make_separate_groups() -> None:
    out, _ = _out()
    ep = Endpoint(sock=FakeSocket(), local_ip=0, port=67)
    out.add(ep, RELAY_A, _answer(1, 300), o.OFFER)
    out.add(ep, RELAY_B, _answer(2, 300), o.OFFER)
    out.add(ep, RELAY_A, _answer(3, 320), o.ACK)  # another size: its own send
    out.add(ep, RELAY_A, _answer(4, 300), o.OFFER)
    out.add(ep, RELAY_B, _answer(5, 300), o.OFFER)
    out.flush()
    assert sorted(ep.sock.sent) == sorted([
        (_answer(1, 300), RELAY_A), (_answer(4, 300), RELAY_A), (_answer(3, 320), RELAY_A),
        (_answer(2, 300), RELAY_B), (_answer(5, 300), RELAY_B)])
    assert ep.sock.segmented_sends == 2  # A/300 and B/300; the 320 went alone
    # Within a group the order is kept.
    to_a = [data for data, addr in ep.sock.sent if addr == RELAY_A and len(data) == 300]
    assert to_a == [_answer(1, 300), _answer(4, 300)]


@pytest.mark.parametrize(("size", "per_send"), [(300, MAX_SEGMENTS), (1400, 65_000 // 1400)])
def test_a_big_group_is_cut_to_the_kernels_limits(size: int, per_send: int) -> None:
    out, _ = _out()
    ep = Endpoint(sock=FakeSocket(), local_ip=0, port=67)
    count = 2 * per_send + 1
    for n in range(count):
        out.add(ep, RELAY_A, _answer(n, size), o.ACK)
    out.flush()
    assert [data for data, _ in ep.sock.sent] == [_answer(n, size) for n in range(count)]
    assert ep.sock.segmented_sends == 2  # and the last one alone, by sendto
    assert out.counters.sent[o.ACK] == count


@pytest.mark.parametrize("code", [errno.EIO, errno.EINVAL, errno.ENOPROTOOPT])
def test_a_kernel_that_refuses_segmentation_gets_one_datagram_per_send(
        code: int, caplog: pytest.LogCaptureFixture) -> None:
    out, _ = _out()
    ep = Endpoint(sock=RefusingSocket(OSError(code, "refused")), local_ip=0, port=67)
    for n in range(3):
        out.add(ep, RELAY_A, _answer(n, 300), o.ACK)
    with caplog.at_level(logging.INFO, logger="ipamd.dhcp.server"):
        out.flush()
    assert [data for data, _ in ep.sock.sent] == [_answer(n, 300) for n in range(3)]
    assert ep.gso is False
    assert "refused a segmented send" in caplog.text
    assert out.counters.sent[o.ACK] == 3 and not out.counters.drops
    # From then on: sendto only, the refusing sendmsg is not tried again.
    for n in range(3):
        out.add(ep, RELAY_A, _answer(n, 300), o.ACK)
    out.flush()
    assert len(ep.sock.sent) == 6 and out.counters.sent[o.ACK] == 6


def test_a_destination_error_does_not_turn_segmentation_off() -> None:
    class Unreachable(RefusingSocket):
        def sendto(self, data: bytes, addr: tuple[str, int]) -> int:
            raise OSError(errno.EHOSTUNREACH, "no route")

    out, _ = _out()
    ep = Endpoint(sock=Unreachable(OSError(errno.EHOSTUNREACH, "no route")), local_ip=0,
                  port=67)
    for n in range(4):
        out.add(ep, RELAY_A, _answer(n, 300), o.OFFER)
    out.flush()
    assert ep.gso is True
    assert out.counters.drops["send_failed"] == 4 and not out.counters.sent


def test_a_full_socket_buffer_backlogs_every_answer_within_the_bound() -> None:
    out, wakes = _out()
    ep = Endpoint(sock=FullSocket(), local_ip=0, port=67)
    for n in range(5):
        out.add(ep, RELAY_A, _answer(n, 300), o.OFFER)
    out.add(ep, RELAY_B, _answer(9, 300), o.ACK)  # alone: by sendto
    out.flush()
    assert sorted(out.backlog, key=lambda b: b[2]) == sorted(
        [(ep, RELAY_A, _answer(n, 300), o.OFFER) for n in range(5)]
        + [(ep, RELAY_B, _answer(9, 300), o.ACK)], key=lambda b: b[2])
    assert wakes and not out.counters.sent and ep.gso is True
    # Bounded: past BACKLOG_MAX an answer is counted as a failed send.
    out.backlog.extend([out.backlog[0]] * (BACKLOG_MAX - len(out.backlog)))
    out.add(ep, RELAY_A, _answer(7, 300), o.OFFER)
    out.add(ep, RELAY_A, _answer(8, 300), o.OFFER)
    out.flush()
    assert len(out.backlog) == BACKLOG_MAX and out.counters.drops["send_failed"] == 2


def test_flush_with_nothing_queued_sends_nothing() -> None:
    out, _ = _out()
    out.flush()
    assert not out.counters.sent
