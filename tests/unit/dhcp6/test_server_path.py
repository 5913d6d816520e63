"""The DHCPv6 server's packet path: its overload discipline and its sends, on real UDP over loopback.

The server's packet path (``Dhcp6Server.on_datagram``, then ``flush``) without its database:
the plan and the server DUID are set as ``run`` would set them, and the committer's queue
is read where ``run``'s workers would take it. While the oldest queued message has waited
longer than ``dhcp6.overload_wait_ms``, new Solicits are dropped (``overload``) and every
other message still goes on (docs/dhcpv6.md, "Monitoring").
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from ipaddress import IPv6Address, IPv6Network
from typing import Any

import pytest
import trio

from ipamd.config import parse as parse_config
from ipamd.core.lease_events import JournalPending
from ipamd.dhcp import pacing as pacing_mod
from ipamd.dhcp.pacing import REPLY_BURST
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.dispatch import DRAIN_BURST
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
                                     "reply_port": 0, "overload_wait_ms": 50}})
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


def _queue_behind(server: Dhcp6Server, ep: Endpoint, peer: socket.socket) -> None:
    """A Request queued for its commit, then aged past overload_wait_ms (as if the
    committer had fallen behind; its workers are not running here)."""
    _deliver(server, ep, peer, _with_server(p.REQUEST, DUID_LLT, "2001:db8:77:1::120"))
    queue: list[Any] = server.committer._queue
    assert len(queue) == 1
    queue[0].born -= 1.0


def _no_answer(peer: socket.socket) -> bool:
    peer.setblocking(False)
    try:
        peer.recv(4096)
    except BlockingIOError:
        return True
    return False


def test_a_new_solicit_is_shed_while_commits_are_behind(lab: Any) -> None:
    server, ep, peer = lab
    _queue_behind(server, ep, peer)
    _deliver(server, ep, peer, _solicit())
    _deliver(server, ep, peer, _solicit(interface_first=True))
    assert server.counters.drops["overload"] == 2
    assert server.counters.received[p.SOLICIT] == 2
    assert server.counters.sent[p.ADVERTISE] == 0
    assert _no_answer(peer)


def test_messages_past_the_solicit_are_never_shed(lab: Any) -> None:
    server, ep, peer = lab
    _queue_behind(server, ep, peer)
    _deliver(server, ep, peer, _with_server(p.RENEW, OTHER_CLIENT, str(HELD)))
    _deliver(server, ep, peer, _with_server(p.REQUEST, OTHER_CLIENT, str(HELD)))
    assert server.committer.queued == 3  # the aged Request, the Renew, the Request
    assert server.counters.drops["overload"] == 0
    assert server.counters.received[p.RENEW] == 1


def test_a_solicit_is_answered_while_the_queue_is_fresh(lab: Any) -> None:
    server, ep, peer = lab
    _deliver(server, ep, peer, _with_server(p.REQUEST, DUID_LLT, "2001:db8:77:1::120"))
    assert server.committer.queued == 1  # waiting less than overload_wait_ms
    _deliver(server, ep, peer, _solicit(OTHER_CLIENT))
    answer = peer.recv(4096)
    assert answer[0] == p.RELAY_REPL and answer[38] == p.ADVERTISE
    assert server.counters.drops["overload"] == 0
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


def _granted(item: Any) -> None:
    """A queued message's ops as the lease store leaves them committed (``commit6``)."""
    for op in item.op.ops:
        op.ok, op.lease_id, op.event, op.expires = True, uuid.uuid4(), "granted", time.time() + 3600


async def test_a_big_committed_batchs_replies_leave_paced(
        lab: Any, nursery: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A committed batch of more than REPLY_BURST Replies goes to the pacer (dhcp.pacing):
    REPLY_BURST on its first turn, the rest in later ones, so a relay's receive buffer is
    not handed the whole batch at once (DHCPv4's Acks alike: tests/unit/dhcp/test_overload.py)."""
    server, ep, peer = lab
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # the test loses none
    sent_at_pauses: list[int] = []
    clock = [1000.0]  # the pacer's clock, moved on by its pauses only: turns of a known size

    async def pause(seconds: float) -> None:
        sent_at_pauses.append(server.counters.sent[p.REPLY])
        clock[0] += seconds
        await trio.sleep(0)

    monkeypatch.setattr(pacing_mod, "_pause", pause)
    monkeypatch.setattr(pacing_mod, "_monotonic", lambda: clock[0])
    count = REPLY_BURST + 40
    for n in range(count):
        duid = bytes.fromhex("00030001") + bytes((2, 0, 0x5E, 0x11, 0, n))
        _deliver(server, ep, peer, _with_server(p.REQUEST, duid, f"2001:db8:77:1::{0x160 + n:x}"))
    batch = _taken(server)
    assert len(batch) == count and server.dispatch.pacer.submitted == count
    for item in batch:
        _granted(item)
    server._committed(batch, True)
    assert _no_answer(peer)  # all left to the pacer
    nursery.start_soon(server.dispatch.pacer.run)
    peer.setblocking(True)
    with trio.fail_after(5):
        answers = [await trio.to_thread.run_sync(peer.recv, 4096) for _ in range(count)]
    assert all(a[0] == p.RELAY_REPL and a[38] == p.REPLY for a in answers)
    # REPLY_BURST, then PACE_MIN a second (no request rate measured yet): ~10 a gap.
    steps = [b - a for a, b in zip([0, *sent_at_pauses], sent_at_pauses, strict=False)]
    assert steps[0] == REPLY_BURST and set(steps[1:]) <= {9, 10} and len(steps) >= 4
    assert server.counters.sent[p.REPLY] == count
    assert not server.dispatch.pacer.queued


def _one_address_link(server: Dhcp6Server) -> IPv6Address:
    """The plan's link with a pool of one address (the lab's held binding is outside it)."""
    only = IPv6Address("2001:db8:77:1::100")
    link = Link("00000000-0000-7000-8000-000000000001", IPv6Network("2001:db8:77:1::/64"),
                pools=(Pool6(only, only),))
    server.plans.current = VersionedPlan6(Plan6((link,)), 2)
    return only


def _taken(server: Dhcp6Server) -> list[Any]:
    """The messages queued for their commit, taken as the committer's worker takes them."""
    batch: list[Any] = server.committer._queue[:]
    server.committer._queue.clear()
    return batch


def _client(n: int) -> bytes:
    return bytes.fromhex("00030001") + bytes((2, 0, 0x5E, 0x12, 0, n))


def _advertised(server: Dhcp6Server, ep: Endpoint, peer: socket.socket, duid: bytes,
                address: IPv6Address) -> bool:
    peer.setblocking(True)
    _deliver(server, ep, peer, _solicit(duid))
    answer = peer.recv(4096)
    assert answer[0] == p.RELAY_REPL and answer[38] == p.ADVERTISE
    return address.packed in answer


def test_an_address_granted_by_a_message_in_flight_is_not_offered_to_another(lab: Any) -> None:
    """Between a Request's decision and its commit its address is claimed in the cache:
    another client's Solicit is not offered it (two grants of one address would go to the
    database and the second be refused); the claim goes when the commit ends."""
    server, ep, peer = lab
    only = _one_address_link(server)
    first, second = _client(1), _client(2)
    _deliver(server, ep, peer, _with_server(p.REQUEST, first, str(only)))
    batch = _taken(server)
    assert [op.ip for item in batch for op in item.op.ops] == [only]
    assert not _advertised(server, ep, peer, second, only)  # claimed: NoAddrsAvail
    server._committed(batch, False)  # the commit failed: nothing was written
    assert _advertised(server, ep, peer, second, only)


def test_a_claim_goes_with_its_commit_and_the_binding_holds_the_address(lab: Any) -> None:
    server, ep, peer = lab
    only = _one_address_link(server)
    first, second = _client(3), _client(4)
    _deliver(server, ep, peer, _with_server(p.REQUEST, first, str(only)))
    batch = _taken(server)
    for item in batch:
        _granted(item)
    server._committed(batch, True)
    assert peer.recv(4096)[38] == p.REPLY
    assert not _advertised(server, ep, peer, second, only)  # bound to the first now
    assert _advertised(server, ep, peer, first, only)  # its own, offered again


def test_drain_reads_a_burst_then_says_whether_the_socket_is_empty(lab: Any) -> None:
    """The receive loop's step (``Dispatch6.drain``): up to DRAIN_BURST datagrams handled and
    answered, False while more wait (the loop lets other tasks run, then drains again), True
    once the socket is empty (the loop waits for it to be readable)."""
    server, ep, peer = lab
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    ep.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    count = DRAIN_BURST + 3
    for n in range(count):
        peer.sendto(_solicit(_client(n)), ep.sock.getsockname())
    assert server.dispatch.drain(ep) is False
    assert server.counters.sent[p.ADVERTISE] == DRAIN_BURST  # the burst's answers are out
    assert server.dispatch.drain(ep) is True
    assert server.counters.sent[p.ADVERTISE] == count
    answers = [peer.recv(4096) for _ in range(count)]
    assert all(a[0] == p.RELAY_REPL and a[38] == p.ADVERTISE for a in answers)
    assert server.dispatch.drain(ep) is True and server.counters.received[p.SOLICIT] == count
