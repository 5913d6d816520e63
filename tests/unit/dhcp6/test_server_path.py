"""The DHCPv6 server's packet path and its sends, on real UDP sockets over loopback.

The server's packet path (``Dhcp6Server.on_datagram``, then ``flush``) without its database:
the plan and the server DUID are set as ``run`` would set them. Answers are queued and
leave together at the flush (``dhcp.outgoing``), each a whole Relay-reply.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from ipaddress import IPv6Address, IPv6Network
from typing import Any

import pytest

from ipamd.config import parse as parse_config
from ipamd.core.lease_events import JournalPending
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.plan import Binding, IaType, Link, Plan6, Pool6
from ipamd.dhcp6.plan_loader import VersionedPlan6
from ipamd.dhcp6.server import Dhcp6Server
from ipamd.dhcp6.sockets import Endpoint, open_listen
from tests.unit.dhcp6.wire import DUID_EN, DUID_LLT, client, ia, iaaddr, opt, relay

LINK = "2001:db8:77:1::1"
SERVER_DUID = Duid(DUID_EN)
OTHER_CLIENT = bytes.fromhex("00030001") + bytes.fromhex("02005e1000aa")
HELD = IPv6Address("2001:db8:77:1::150")


def _solicit(duid: bytes = DUID_LLT, *, interface_first: bool = False) -> bytes:
    inner = client(p.SOLICIT, 0x1234, opt(1, duid), opt(8, b"\0\0"), opt(3, ia(1, 0, 0)))
    options = [opt(9, inner)]
    if interface_first:  # Interface-Id before the Relay Message: recognised after parsing
        options.insert(0, opt(18, b"eth7"))
    return relay(p.RELAY_FORW, 0, LINK, "fe80::1", *options)


def _with_server(msg_type: int, duid: bytes, address: str) -> bytes:
    inner = client(msg_type, 0x4321, opt(1, duid), opt(2, SERVER_DUID.raw), opt(8, b"\0\0"),
                   opt(3, ia(1, 0, 0, opt(5, iaaddr(address, 0, 0)))))
    return relay(p.RELAY_FORW, 0, LINK, "fe80::2", opt(9, inner))


@pytest.fixture
def lab() -> Iterator[tuple[Dhcp6Server, Endpoint, socket.socket]]:
    """A server on [::1]:<ephemeral> trusting ::1, and the "relay" socket it answers."""
    config = parse_config({"dhcp6": {"enabled": True, "trusted_relays": ["::1/128"],
                                     "reply_port": 0}})
    server = Dhcp6Server(config.dhcp6, None, JournalPending(),  # type: ignore[arg-type]
                         plan_refresh_seconds=config.dhcp.plan_refresh_seconds)
    link = Link("00000000-0000-7000-8000-000000000001", IPv6Network("2001:db8:77:1::/64"),
                pools=(Pool6(IPv6Address("2001:db8:77:1::100"),
                             IPv6Address("2001:db8:77:1::1ff")),))
    server.plans.current = VersionedPlan6(Plan6((link,)), 1)
    server.server_duid = SERVER_DUID
    server.cache.put(uuid.uuid4(), Binding(IaType.NA, Duid(OTHER_CLIENT), 1, HELD, 128,
                                           "active", time.time() + 3600))
    ep = open_listen("[::1]:0")
    peer = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    peer.bind(("::1", 0))
    peer.settimeout(2.0)
    try:
        yield server, ep, peer
    finally:
        ep.sock.close()
        peer.close()


def _deliver(server: Dhcp6Server, ep: Endpoint, peer: socket.socket, data: bytes) -> None:
    server.on_datagram(ep, data, peer.getsockname())
    server.flush()


def _no_answer(peer: socket.socket) -> bool:
    peer.setblocking(False)
    try:
        peer.recv(4096)
    except BlockingIOError:
        return True
    return False


def test_a_request_waits_for_its_commit_and_a_solicit_is_answered_at_the_flush(
        lab: Any) -> None:
    server, ep, peer = lab
    _deliver(server, ep, peer, _with_server(p.REQUEST, DUID_LLT, "2001:db8:77:1::120"))
    assert server.committer.queued == 1 and _no_answer(peer)  # its Reply after the commit
    _deliver(server, ep, peer, _solicit(OTHER_CLIENT))
    peer.setblocking(True)
    answer = peer.recv(4096)
    assert answer[0] == p.RELAY_REPL and answer[38] == p.ADVERTISE
    assert server.counters.sent[p.ADVERTISE] == 1


def test_a_bursts_answers_leave_together_each_a_whole_datagram(lab: Any) -> None:
    """Advertises of one receive burst to one relay go out at its flush (several to a send
    where the kernel segments them: dhcp.outgoing), each its own Relay-reply."""
    server, ep, peer = lab
    duids = [bytes.fromhex("00030001") + bytes((2, 0, 0x5E, 0x10, 0x20, n)) for n in range(5)]
    for duid in duids:
        server.on_datagram(ep, _solicit(duid), peer.getsockname())
    assert _no_answer(peer)  # queued until the burst ends
    server.flush()
    peer.setblocking(True)
    answers = [peer.recv(4096) for _ in duids]
    assert all(a[0] == p.RELAY_REPL and a[38] == p.ADVERTISE for a in answers)
    assert sorted(a[a.index(b"\x00\x01\x00\x0a") + 4:][:10] for a in answers) == sorted(duids)
    assert server.counters.sent[p.ADVERTISE] == len(duids)
    assert _no_answer(peer)
