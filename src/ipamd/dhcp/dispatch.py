"""The DHCP server's per-packet path, without the waiting: datagrams in, outcomes, replies out.

Everything here is synchronous and compiled with the rest of the hot path (``compiled``);
the server (``server.py``) owns what awaits — waiting for a socket to be readable or
writable, the committer's tasks, the pacing of answers — and calls in here:

* ``drain``: read up to ``YIELD_EVERY`` datagrams from a socket and handle each
  (``on_datagram``); the server waits for the socket when it is empty;
* ``on_datagram``: parse, ``engine.decide``, and either a reply now or an op for the
  committer (``submit``);
* ``committed``: after a batch's commit, ``engine.finish`` builds each answer; they are
  sent at once when few, else paced (``pacer``: ``dhcp.pacing.Pacer``, shared with DHCPv6);
* ``probed``: a ping check's probe ended (``pinger.Pinger``): the Offer, or another pick;
* ``send``: one answer queued in ``out`` (``outgoing.Outgoing``), which each of the above
  sends at its end, several to a send where it can; a full socket buffer queues them for the
  server's backlog task.

In pure Python this glue's own lines took about an eighth of the DHCP process's samples
(py-spy, 5,000 DORA/s); ``bench/bench_dhcp_engine.py`` measures the path compiled against
pure Python.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ipamd.dhcp.codec import MalformedPacket, parse
from ipamd.dhcp.context import Endpoint, Env, Exchange
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.destination import BROADCAST
from ipamd.dhcp.engine import DhcpReply, decide, finish, release_claim
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.options import DISCOVER
from ipamd.dhcp.outgoing import Outgoing
from ipamd.dhcp.pacing import Pacer
from ipamd.dhcp.pingcheck import Probe
from ipamd.dhcp.probed import after_probe
from ipamd.dhcp.sockets import ancillary

log = logging.getLogger("ipamd.dhcp.server")

YIELD_EVERY = 16  # datagrams handled before the receive loop lets other tasks run
# Every this many datagrams (and the first after each wait) the receive loop reads the
# kernel's arrival time: the queue is first in, first out, so a sample bounds the age of
# the datagrams after it. Reading it costs ~4 µs a datagram, hence not on every one.
SAMPLE_EVERY = 8
_DISCOVER_HEAD = bytes((53, 1, DISCOVER))  # option 53 first, as nearly every client sends it

_inet_aton = socket.inet_aton
_inet_ntoa = socket.inet_ntoa
_monotonic = time.monotonic
_time = time.time

BusyKey = tuple[uuid.UUID, bytes]


class Dispatch:
    """The server's packet path and the state it keeps between packets."""

    def __init__(
        self,
        env: Env,
        counters: DhcpCounters,
        committer: Any,
        *,
        overload_seconds: float,
        stale_seconds: float,
        wake_backlog: Callable[[], None],
        on_error: Callable[[Any], None],
        probe: Callable[[Exchange, Probe], None] | None = None,
    ) -> None:
        self.env = env
        self.counters = counters
        self.committer = committer  # dhcp.committer.Committer: submit(), overloaded()
        self.overload_seconds = overload_seconds
        self.stale_seconds = stale_seconds
        self.on_error = on_error
        self.probe = probe  # pinger.Pinger.start: sends a ping check's echo
        # The client whose op is being committed: its retransmissions meanwhile are dropped.
        self.busy: dict[BusyKey, Exchange] = {}
        self.out = Outgoing(counters, wake_backlog)  # answers to send; ``backlog``: refused
        # Committed answers (and Offers of probes that ended together), sent paced; it counts
        # the requests submitted for a commit, whose rate sets the pace.
        self.pacer: Pacer[tuple[Exchange, DhcpReply]] = Pacer(self._send_queued, self.out.flush)

    # ------------------------------------------------------------------ receive

    def drain(self, ep: Endpoint) -> bool:
        """Handle up to YIELD_EVERY datagrams waiting on ``ep`` and send their answers;
        True when its socket is empty (the caller waits until it is readable), False when
        the caller should let other tasks run and call again."""
        try:
            return self._drain(ep)
        finally:
            self.out.flush()

    def _drain(self, ep: Endpoint) -> bool:
        sock = ep.sock
        stale = self.stale_seconds
        for _ in range(YIELD_EVERY):
            local = 0
            try:
                if ep.pktinfo or not ep.sample:
                    data, ancdata, _flags, addr = sock.recvmsg(4096, 256)
                    local, arrived = ancillary(ancdata)
                    ep.sample = SAMPLE_EVERY
                    if arrived:
                        ep.queue_age = _time() - arrived
                else:
                    data, addr = sock.recvfrom(4096)
                    ep.sample -= 1
            except BlockingIOError:
                ep.sample = 0
                ep.queue_age = 0.0
                return True
            except OSError as error:  # e.g. a stray ICMP error reported on the socket
                log.debug("receive on %s: %s", ep.port, error)
                return False
            if ep.queue_age > stale:
                self.counters.drops["stale"] += 1  # unparsed
                ep.sample = 0  # and look at the next one too
            else:
                self._handle(data, addr[0], addr[1], ep, local)
        return False

    def overloaded(self, ep: Endpoint, now: float) -> bool:
        """Have packets waited longer than dhcp.overload_wait_ms, in the socket or for commit
        (a stalled commit's time not counted: committer.Committer.overloaded)?"""
        limit = self.overload_seconds
        return ep.queue_age > limit or bool(self.committer.overloaded(now, limit))

    def on_datagram(self, data: bytes, host: str, port: int, ep: Endpoint, local: int = 0) -> None:
        """Everything one datagram causes, its answer sent; never raises."""
        self._handle(data, host, port, ep, local)
        self.out.flush()

    def _handle(self, data: bytes, host: str, port: int, ep: Endpoint, local: int) -> None:
        counters = self.counters
        now = _monotonic()
        # Overloaded: new clients wait (they retransmit), clients with an offer are served.
        # Most Discovers are recognised before parsing; shedding must cost next to nothing.
        if data[240:243] == _DISCOVER_HEAD and self.overloaded(ep, now):
            counters.received[DISCOVER] += 1
            counters.drops["overload"] += 1
            return
        try:
            msg = parse(data)
        except MalformedPacket as error:
            counters.drops[error.reason] += 1
            return
        mtype = msg.options[53][0]
        counters.received[mtype] += 1
        if mtype == DISCOVER and self.overloaded(ep, now):
            counters.drops["overload"] += 1
            return
        try:
            src = int.from_bytes(_inet_aton(host), "big")
            tx = Exchange(msg, mtype, src, port, ep, local, now)
            self._route(tx, decide(tx, self.env))
        except MalformedPacket as error:
            counters.drops[error.reason] += 1
        except Exception:
            self.on_error(msg)

    def _route(self, tx: Exchange, outcome: Any) -> None:
        """A decision's outcome: an op to commit, an answer, a probe to send, or a drop."""
        counters = self.counters
        if outcome is None:
            return
        if isinstance(outcome, Op):
            subnet = tx.subnet
            assert subnet is not None
            key = (subnet.id, tx.client_key)
            if key in self.busy:
                release_claim(tx, self.env)
                counters.drops["client_busy"] += 1
                return
            self.busy[key] = tx
            self.pacer.submitted += 1
            self.committer.submit(tx)
        elif isinstance(outcome, DhcpReply):
            self.send(tx, outcome)
        elif isinstance(outcome, Probe):
            assert self.probe is not None  # the engine probes only with a gate: the server's
            self.probe(tx, outcome)
        else:
            counters.drops[outcome] += 1
            if outcome == "no_address" and tx.subnet is not None:
                counters.refused[str(tx.subnet.id)] += 1  # the no_address alert's input

    def probed(self, tx: Exchange, probe: Probe, result: int) -> None:
        """A ping check's probe ended (``pingcheck.SILENT``, ``ANSWERED``, ``UNCHECKED``):
        decide again for its client and queue or commit what that gives (the caller sends
        the answers, ``pacer.send_queued``, once for the probes that ended together)."""
        tx.born = _monotonic()  # the wait for the echo is not a wait for the committer
        try:
            outcome = after_probe(tx, self.env, probe, result)
            if isinstance(outcome, DhcpReply):
                # With the answers queued: a stalled loop ends many probes together, and
                # their Offers at once would overflow a relay as a batch's Acks would.
                self.pacer.queued.append((tx, outcome))
            else:
                self._route(tx, outcome)
        except Exception:
            self.on_error(tx.msg)

    # ------------------------------------------------------------------ after commit

    def committed(self, batch: Sequence[Exchange], ok: bool) -> int:
        """Finish a committed batch (``ok``) or give up on a failed one; returns how many
        new leases it granted."""
        counters = self.counters
        env = self.env
        granted = 0
        self.pacer.measure_rate()
        for tx in batch:
            subnet = tx.subnet
            assert subnet is not None
            key = (subnet.id, tx.client_key)
            try:
                if not ok:
                    release_claim(tx, env)
                    self.busy.pop(key, None)
                    counters.drops["db_error"] += 1
                    continue
                op = tx.op
                if op is not None and op.ok and op.kind == OpKind.INSERT:
                    granted += 1
                outcome = finish(tx, env)
                if isinstance(outcome, Op):
                    self.committer.submit(tx)  # another pick; the client stays busy
                    continue
                self.busy.pop(key, None)
                if isinstance(outcome, DhcpReply):
                    self.pacer.queued.append((tx, outcome))
                elif isinstance(outcome, Probe):
                    self._route(tx, outcome)  # after a ping conflict's hold: a new pick's
                elif outcome is not None:
                    counters.drops[outcome] += 1
            except Exception:
                self.busy.pop(key, None)
                self.on_error(tx.msg)
        self.pacer.send_queued()
        return granted

    def stale(self, batch: Sequence[Exchange]) -> None:
        """Ops the committer dropped unwritten because they waited too long."""
        self.counters.drops["stale"] += len(batch)
        for tx in batch:
            release_claim(tx, self.env)
            subnet = tx.subnet
            assert subnet is not None
            self.busy.pop((subnet.id, tx.client_key), None)

    # ------------------------------------------------------------------ send

    def _send_queued(self, item: tuple[Exchange, DhcpReply]) -> None:
        self.send(item[0], item[1])

    def send(self, tx: Exchange, reply: DhcpReply) -> None:
        """Queue one answer; the caller flushes ``out``."""
        ip, port = reply.dest
        ep = tx.endpoint
        if ip == BROADCAST and ep.interface is None:
            # No attached segment to broadcast on: answer where the packet came from.
            ip, port = tx.src_ip, tx.src_port
        self.out.add(ep, (_inet_ntoa(ip.to_bytes(4, "big")), port), reply.data, reply.mtype)
