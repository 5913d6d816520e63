"""The server's datagram handler without sockets or database: drops, counters, robustness.

A property test feeds random and mutated datagrams: nothing may raise, and nothing may
end as an internal error (a bug) — every packet is answered, queued or dropped by reason.
"""

from __future__ import annotations

import socket
import sys
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipamd.config import parse as parse_config
from ipamd.core.lease_events import JournalPending
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import parse
from ipamd.dhcp.context import Endpoint
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.leasecache import Lease, LeaseCache
from ipamd.dhcp.outgoing import UDP_SEGMENT
from ipamd.dhcp.server import DhcpServer
from tests.unit.dhcp.envs import RELAY, SERVER, SUBNET, make_plan
from tests.unit.dhcp.packets import ip, relay_info, request


class FakeSocket:
    """Records each datagram sent; a segmented send (UDP_SEGMENT) is cut as the kernel does."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, tuple[str, int]]] = []
        self.segmented_sends = 0

    def sendto(self, data: bytes, addr: tuple[str, int]) -> int:
        self.sent.append((data, addr))
        return len(data)

    def sendmsg(self, buffers: list[bytes], ancdata: list[tuple[int, int, bytes]], flags: int,
                addr: tuple[str, int]) -> int:
        [(level, kind, raw)] = ancdata
        assert (level, kind, flags) == (socket.IPPROTO_UDP, UDP_SEGMENT, 0)
        size = int.from_bytes(raw, sys.byteorder)
        payload = b"".join(buffers)
        self.sent.extend((payload[at:at + size], addr) for at in range(0, len(payload), size))
        self.segmented_sends += 1
        return len(payload)


def make_server() -> tuple[DhcpServer, Endpoint]:
    config = parse_config({"dhcp": {"trusted_relays": [RELAY], "server_id": SERVER,
                                    "reply_port": 6768}})
    server = DhcpServer(config.dhcp, None, JournalPending(),  # type: ignore[arg-type]
                        node_name=config.node_name)  # (no database: no commit here)
    server._plan_changed(make_plan(trusted=["10.66.0.0/16"]))
    ep = Endpoint(sock=FakeSocket(), local_ip=ip(SERVER), port=67)
    return server, ep


def test_discover_is_offered_at_once_and_the_request_queues_the_grant() -> None:
    server, ep = make_server()
    mac = b"\x02" * 6
    server.on_datagram(request(o.DISCOVER, mac, giaddr=RELAY).to_bytes(), RELAY, 67, ep)
    ((data, _addr),) = ep.sock.sent
    offer = parse(data)
    assert offer.message_type == o.OFFER and server.committer.queued == 0  # nothing written
    assert server.cache.counts()["offered"] == 1
    selecting = request(o.REQUEST, mac, giaddr=RELAY, requested=o.ip_to_str(offer.yiaddr),
                        server_id=SERVER)
    server.on_datagram(selecting.to_bytes(), RELAY, 67, ep)
    assert server.committer.queued == 1
    server.on_datagram(selecting.to_bytes(), RELAY, 67, ep)  # retransmitted meanwhile
    assert server.committer.queued == 1
    assert server.counters.drops["client_busy"] == 1
    assert server.counters.received[o.REQUEST] == 2
    # The busy packet's claim was given back, the first one's stands.
    assert server.env.pending_in(SUBNET) == {offer.yiaddr}


def test_immediate_offer_goes_to_the_relay_on_the_reply_port() -> None:
    server, ep = make_server()
    server.cache.put(Lease(uuid.uuid4(), SUBNET, ip("10.77.1.105"), "active",
                           b"\x01" + b"\x02" * 6, 4e9))
    server.on_datagram(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY).to_bytes(), RELAY, 67, ep)
    ((data, addr),) = ep.sock.sent
    assert addr == (RELAY, 6768)
    assert parse(data).yiaddr == ip("10.77.1.105")
    assert server.counters.sent[o.OFFER] == 1


def test_untrusted_relay_is_dropped_and_counted_then_trusted_by_settings() -> None:
    server, ep = make_server()
    msg = request(o.DISCOVER, b"\x02" * 6, giaddr="10.77.1.1")
    server.on_datagram(msg.to_bytes(), "10.99.0.1", 67, ep)
    assert server.counters.drops["untrusted_relay"] == 1 and not ep.sock.sent
    # The settings resource's list (plan.trusted_relays) adds to the TOML list.
    server.on_datagram(msg.to_bytes(), "10.66.4.4", 67, ep)
    assert server.counters.sent[o.OFFER] == 1


def test_nak_without_relay_goes_back_to_the_sender() -> None:
    server, ep = make_server()
    server.cache.put(Lease(uuid.uuid4(), SUBNET, ip("10.77.1.105"), "active", b"other", 4e9))
    msg = request(o.REQUEST, b"\x02" * 6, ciaddr="10.77.1.105")
    server.on_datagram(msg.to_bytes(), "10.77.1.105", 68, ep)
    ((data, addr),) = ep.sock.sent
    assert parse(data).message_type == o.NAK and addr == ("10.77.1.105", 68)


def test_malformed_packets_are_counted_by_reason() -> None:
    server, ep = make_server()
    server.on_datagram(b"\x01" * 100, RELAY, 67, ep)
    good = request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY).to_bytes()
    server.on_datagram(good[:236] + b"\x00\x00\x00\x00" + good[240:], RELAY, 67, ep)
    bad82 = request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY,
                    extra={o.RELAY_AGENT: b"\x01\x09x"}).to_bytes()
    server.on_datagram(bad82, RELAY, 67, ep)
    assert server.counters.drops["too_short"] == 1
    assert server.counters.drops["bad_cookie"] == 1
    assert server.counters.drops["bad_relay_agent"] == 1
    assert server.counters.drops["internal_error"] == 0


def test_counters_snapshot_is_json_ready() -> None:
    counters = DhcpCounters()
    counters.received[o.DISCOVER] += 2
    counters.drops["untrusted_relay"] += 1
    cache = LeaseCache()
    cache.put(Lease(uuid.uuid4(), SUBNET, 1, "declined", b"k", 0))
    counters.live = cache.counts
    snap = counters.snapshot()
    assert snap["received"] == {"discover": 2}
    assert snap["drops"] == {"untrusted_relay": 1}
    assert snap["leases_by_state"] == {"offered": 0, "active": 0, "declined": 1}


def _valid_packets() -> list[bytes]:
    mac = b"\x02\x00\x00\x00\x00\x07"
    info = relay_info(circuit=b"c", remote=b"r", link="10.77.1.0")
    return [m.to_bytes() for m in (
        request(o.DISCOVER, mac, giaddr=RELAY, extra={o.RELAY_AGENT: info,
                                                        o.PRL: bytes(range(1, 80))}),
        request(o.REQUEST, mac, giaddr=RELAY, requested="10.77.1.100", server_id=SERVER),
        request(o.REQUEST, mac, ciaddr="10.77.1.100"),
        request(o.DECLINE, mac, giaddr=RELAY, requested="10.77.1.100", server_id=SERVER),
        request(o.RELEASE, mac, giaddr=RELAY, ciaddr="10.77.1.100"),
        request(o.INFORM, mac, giaddr=RELAY, ciaddr="10.77.1.50",
                extra={o.FQDN: b"\x05\x00\x00\x04host\x00", o.CLIENT_ID: b"\xff" + bytes(12)}),
    )]


_VALID = _valid_packets()


def _check(server: DhcpServer, ep: Endpoint, data: bytes, src: str) -> None:
    server.on_datagram(data, src, 67, ep)
    assert server.counters.drops["internal_error"] == 0, data.hex()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=700))
def test_random_bytes_never_raise(data: bytes) -> None:
    server, ep = make_server()
    _check(server, ep, data, RELAY)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_VALID), st.lists(st.tuples(st.integers(0, 699), st.integers(0, 255)),
                                          max_size=12),
       st.integers(0, 700), st.sampled_from([RELAY, "10.77.1.100", "10.99.0.1"]))
def test_mutated_requests_never_raise(base: bytes, flips: list[tuple[int, int]], cut: int,
                                      src: str) -> None:
    server, ep = make_server()
    data = bytearray(base)
    for pos, value in flips:
        if pos < len(data):
            data[pos] = value
    _check(server, ep, bytes(data[: max(cut, 240)]), src)


def test_every_drop_reason_is_known() -> None:
    from ipamd.dhcp.counters import DROP_REASONS

    server, ep = make_server()
    for data in _VALID:
        for src in (RELAY, "10.99.0.1"):
            server.on_datagram(data, src, 67, ep)
    unknown: set[Any] = set(server.counters.drops) - DROP_REASONS - o.REASONS
    assert not unknown
