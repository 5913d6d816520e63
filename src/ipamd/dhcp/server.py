"""The DHCPv4 server service: sockets in, engine decision, group commit, replies out.

``run(state, task_status=...)`` is the service registered in runtime.services(); the
running server is ``state.dhcp`` (a ``state.DhcpControl``: the lease API and the expiry
worker tell it about leases they end) and its counters are ``state.counters["dhcp"]``.

Per packet: parse → engine.decide (pure) → either a reply now, or an Op queued for the
committer; after the batch commit, engine.finish builds the reply and it is sent. No
task is spawned per packet and the only trio↔asyncio crossing is the batch commit.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import trio

from ipamd.config import ConfigError
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp import compiled, leasestore
from ipamd.dhcp.codec import MalformedPacket, parse
from ipamd.dhcp.committer import Committer
from ipamd.dhcp.context import Endpoint, Env, Exchange
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.destination import BROADCAST
from ipamd.dhcp.engine import DhcpReply, decide, finish, release_claim
from ipamd.dhcp.freepool import AddressPicker
from ipamd.dhcp.leasecache import Lease, LeaseCache
from ipamd.dhcp.leasestats import LeaseStats
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.options import DISCOVER
from ipamd.dhcp.plan import Plan
from ipamd.dhcp.plan_loader import PlanHolder
from ipamd.dhcp.relays import TrustedRelays
from ipamd.dhcp.sockets import ancillary, open_interface, open_listen, split_listen
from ipamd.state import AppState

log = logging.getLogger("ipamd.dhcp.server")

_YIELD_EVERY = 16  # packets handled before the receive loop lets other tasks run
# Every this many packets (and the first after each wait) the receive loop reads the
# kernel's arrival time: the queue is first in, first out, so a sample bounds the age of
# the packets after it. Reading it costs ~4 µs a packet, hence not on every one.
_SAMPLE_EVERY = 8
_DISCOVER_HEAD = bytes((53, 1, DISCOVER))  # option 53 first, as nearly every client sends it
_BACKLOG_MAX = 10_000
# The answers of a committed batch go out _REPLY_BURST at a time, _REPLY_GAP apart:
# hundreds sent back to back overflow the receive buffer of a relay (measured with perfdhcp
# on 2 busy cores: ~1,100 of 8,000 answers a second lost so). A busy event loop stretches
# the gap, so when more than _REPLY_CATCH_UP answers wait the bursts grow (an eighth of
# them): the pacing must never become the bottleneck (at 16 per gap it did, and answers
# piled up for seconds). Letting the other tasks run instead of a gap spaces bursts too
# little (the overflows came back).
_REPLY_BURST = 32
_REPLY_GAP = 0.001
_REPLY_CATCH_UP = 1024
_ERROR_LOG_PER_MINUTE = 10

_inet_aton = socket.inet_aton
_inet_ntoa = socket.inet_ntoa
_from_bytes = int.from_bytes
_monotonic = time.monotonic
_time = time.time
_pause = trio.sleep


class DhcpServer:
    def __init__(self, state: AppState) -> None:
        config = state.config.dhcp
        self.state = state
        self.config = config
        self.counters = DhcpCounters()
        self.cache = LeaseCache()
        self._db_log = Throttle(log)
        self.plans = PlanHolder(state.db, config.plan_refresh_seconds)
        self.plans.on_change.append(self._plan_changed)
        server_id = int(ipaddress.IPv4Address(config.server_id)) if config.server_id else 0
        self.env = Env(
            config=config, plan=self.plans.current, cache=self.cache,
            picker=AddressPicker(state.config.node_name),
            trusted=TrustedRelays(config.trusted_relays), counters=self.counters,
            server_id=server_id,
        )
        self.overload_seconds = config.overload_wait_ms / 1000
        self.stale_seconds = config.stale_wait_ms / 1000
        self.committer = Committer(
            state.db, self._committed, batch_max=config.commit_batch_max,
            window_seconds=config.commit_window_us / 1_000_000, workers=config.commit_workers,
            stale_seconds=self.stale_seconds, on_stale=self._stale,
        )
        self.stats = LeaseStats(state.db)
        self.endpoints: list[Endpoint] = []
        self._busy: dict[tuple[uuid.UUID, bytes], Exchange] = {}
        self._backlog: list[tuple[Endpoint, bytes, tuple[str, int], int]] = []
        self._backlog_wake = trio.Event()
        # committed answers waiting to be paced out
        self._replies: list[tuple[Exchange, DhcpReply]] = []
        self._replies_wake = trio.Event()
        self._pacing = False
        self._error_window = (0.0, 0)
        self._started = _monotonic()

    # ------------------------------------------------------------------ set-up

    def _plan_changed(self, plan: Plan) -> None:
        self.env.plan = plan
        self.env.trusted = TrustedRelays([*self.config.trusted_relays, *plan.trusted_relays])

    def _open_sockets(self) -> None:
        wildcard_needs_pktinfo = not self.config.server_id
        key, value = "dhcp.listen", ""
        try:
            for value in self.config.listen:
                self.endpoints.append(open_listen(value, wildcard_needs_pktinfo))
            if self.config.interfaces:
                key = "dhcp.interfaces"
                port = split_listen(self.config.listen[0])[1] if self.config.listen else 67
                for value in self.config.interfaces:
                    self.endpoints.append(open_interface(value, port))
        except OSError as error:
            self._close_sockets()
            # A start-up refusal the operator can act on, not a traceback (cli prints it).
            raise ConfigError(f"{key} {value!r}: cannot open: {error.strerror or error}"
                              ) from None
        ids = {ep.local_ip for ep in self.endpoints if ep.local_ip}
        ids |= {ep.interface_ip for ep in self.endpoints if ep.interface_ip}
        if self.env.server_id:
            ids.add(self.env.server_id)
        self.env.server_ids = frozenset(ids)

    def _close_sockets(self) -> None:
        for ep in self.endpoints:
            ep.sock.close()

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """Where the server listens (the real port when the TOML asked for port 0)."""
        return [(str(ipaddress.IPv4Address(ep.local_ip)), ep.port) for ep in self.endpoints]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._open_sockets()
        self._started = _monotonic()
        try:
            for row in await self.state.db.run(leasestore.load_live):
                self.cache.put(Lease(*row))
            async with trio.open_nursery() as nursery:
                await nursery.start(self.plans.run)
                await nursery.start(self.committer.run)
                await nursery.start(self.stats.run)
                for ep in self.endpoints:
                    nursery.start_soon(self._receive, ep)
                nursery.start_soon(self._flush_backlog)
                nursery.start_soon(self._pace_replies)
                if self.config.lease_resync_seconds:
                    nursery.start_soon(self._resync_loop)
                self.counters.live = self.cache.counts
                self.counters.commit_seconds = lambda: self.committer.busy_seconds
                self.state.dhcp = self
                self.state.counters["dhcp"] = self.counters
                log.info("dhcp server on %s; %d live leases, %d subnets; %s",
                         ", ".join(f"{h}:{p}" for h, p in self.addresses), len(self.cache),
                         len(self.env.plan.subnets), compiled.STATUS)
                task_status.started()
        finally:
            if self.state.dhcp is self:
                self.state.dhcp = None
            self._close_sockets()

    # ------------------------------------------------------------------ receive

    async def _receive(self, ep: Endpoint) -> None:
        sock = ep.sock
        handle = self.on_datagram
        wait = trio.lowlevel.wait_readable
        checkpoint = trio.lowlevel.checkpoint
        stale = self.stale_seconds
        drops = self.counters.drops
        handled = 0
        sample = 0  # packets until the next arrival-time sample
        while True:
            try:
                if ep.pktinfo or not sample:
                    data, ancdata, _flags, addr = sock.recvmsg(4096, 256)
                    local, arrived = ancillary(ancdata)
                    sample = _SAMPLE_EVERY
                    if arrived:
                        ep.queue_age = _time() - arrived
                else:
                    data, addr = sock.recvfrom(4096)
                    local = 0
                    sample -= 1
            except BlockingIOError:
                handled = sample = 0
                ep.queue_age = 0.0
                ep.waiting_since = since = _monotonic()
                try:
                    await wait(sock)
                finally:
                    ep.waited += _monotonic() - since
                    ep.waiting_since = None
                continue
            except OSError as error:  # e.g. a stray ICMP error reported on the socket
                log.debug("receive on %s: %s", ep.port, error)
                await checkpoint()
                continue
            if ep.queue_age > stale:
                drops["stale"] += 1  # unparsed
                sample = 0  # and look at the next one too
            else:
                handle(data, addr[0], addr[1], ep, local)
            handled += 1
            if handled >= _YIELD_EVERY:
                handled = 0
                await checkpoint()

    def overloaded(self, ep: Endpoint, now: float) -> bool:
        """Have packets waited longer than dhcp.overload_wait_ms, in the socket or for commit?"""
        limit = self.overload_seconds
        return ep.queue_age > limit or self.committer.waited(now) > limit

    def on_datagram(self, data: bytes, host: str, port: int, ep: Endpoint, local: int = 0) -> None:
        """Everything one datagram causes; never raises."""
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
            tx = Exchange(msg, mtype, _from_bytes(_inet_aton(host), "big"), port, ep, local, now)
            outcome = decide(tx, self.env)
            if outcome is None:
                return
            kind = type(outcome)
            if kind is Op:
                key = (tx.subnet.id, tx.client_key)  # type: ignore[union-attr]
                if key in self._busy:
                    release_claim(tx, self.env)
                    counters.drops["client_busy"] += 1
                    return
                self._busy[key] = tx
                self.committer.submit(tx)
            elif kind is DhcpReply:
                self._send(tx, outcome)  # type: ignore[arg-type]
            else:
                counters.drops[outcome] += 1  # type: ignore[index]
                if outcome == "no_address" and tx.subnet is not None:
                    counters.refused[str(tx.subnet.id)] += 1  # the no_address alert's input
        except MalformedPacket as error:
            counters.drops[error.reason] += 1
        except Exception:
            self._internal_error(msg)

    # ------------------------------------------------------------------ after commit

    def _committed(self, batch: Sequence[Exchange], ok: bool) -> None:
        counters = self.counters
        counters.batches += 1
        counters.committed_ops += len(batch)
        counters.batch_sizes.observe(len(batch))
        counters.commit_latency.observe(self.committer.last_seconds)
        env = self.env
        if ok:
            self.state.lease_journal.written()
            self.stats.added(sum(1 for tx in batch  # type: ignore[union-attr]
                                 if tx.op.ok and tx.op.kind == OpKind.INSERT))
        for tx in batch:
            key = (tx.subnet.id, tx.client_key)  # type: ignore[union-attr]
            try:
                if not ok:
                    release_claim(tx, env)
                    self._busy.pop(key, None)
                    counters.drops["db_error"] += 1
                    continue
                outcome = finish(tx, env)
                if type(outcome) is Op:
                    self.committer.submit(tx)  # another pick; the client stays busy
                    continue
                self._busy.pop(key, None)
                if type(outcome) is DhcpReply:
                    self._replies.append((tx, outcome))  # type: ignore[arg-type]
                elif outcome is not None:
                    counters.drops[outcome] += 1  # type: ignore[index]
            except Exception:
                self._busy.pop(key, None)
                self._internal_error(tx.msg)
        self._send_committed()

    def _send_committed(self) -> None:
        """Send the answers of a committed batch: at once when few, else paced."""
        if not self._pacing and len(self._replies) <= _REPLY_BURST:
            for tx, reply in self._replies:
                self._send(tx, reply)
            self._replies.clear()
        elif self._replies:
            self._replies_wake.set()

    async def _pace_replies(self) -> None:
        replies = self._replies
        while True:
            await self._replies_wake.wait()
            self._replies_wake = trio.Event()
            self._pacing = True
            try:
                while replies:
                    burst = _REPLY_BURST if len(replies) <= _REPLY_CATCH_UP else len(replies) // 8
                    for tx, reply in replies[:burst]:
                        self._send(tx, reply)
                    del replies[:burst]
                    if replies:
                        await _pause(_REPLY_GAP)
            finally:
                self._pacing = False

    def _stale(self, batch: Sequence[Exchange]) -> None:
        """Ops the committer dropped unwritten because they waited too long."""
        self.counters.drops["stale"] += len(batch)
        for tx in batch:
            release_claim(tx, self.env)
            self._busy.pop((tx.subnet.id, tx.client_key), None)  # type: ignore[union-attr]

    # ------------------------------------------------------------------ send

    def _send(self, tx: Exchange, reply: DhcpReply) -> None:
        ip, port = reply.dest
        ep = tx.endpoint
        if ip == BROADCAST and ep.interface is None:
            # No attached segment to broadcast on: answer where the packet came from.
            ip, port = tx.src_ip, tx.src_port
        addr = (_inet_ntoa(ip.to_bytes(4, "big")), port)
        try:
            ep.sock.sendto(reply.data, addr)
        except BlockingIOError:
            if len(self._backlog) >= _BACKLOG_MAX:
                self.counters.drops["send_failed"] += 1
                return
            self._backlog.append((ep, reply.data, addr, reply.mtype))
            self._backlog_wake.set()
            return
        except OSError as error:
            log.debug("send to %s failed: %s", addr, error)
            self.counters.drops["send_failed"] += 1
            return
        self.counters.sent[reply.mtype] += 1

    async def _flush_backlog(self) -> None:
        while True:
            await self._backlog_wake.wait()
            self._backlog_wake = trio.Event()
            while self._backlog:
                ep, data, addr, mtype = self._backlog.pop(0)
                try:
                    await trio.lowlevel.wait_writable(ep.sock)
                    ep.sock.sendto(data, addr)
                    self.counters.sent[mtype] += 1
                except OSError:
                    self.counters.drops["send_failed"] += 1

    # ------------------------------------------------------------------ lease bookkeeping

    def forget(self, ended: Iterable[tuple[uuid.UUID, uuid.UUID, Any]]) -> None:
        """Leases ended outside the DHCP path (expiry, API force-release): (id, subnet, event)."""
        for lease_id, subnet_id, event in ended:
            self.cache.drop(lease_id)
            self.env.picker.freed(subnet_id)
            if event:
                self.counters.leases[event] += 1

    async def _resync_loop(self) -> None:
        # Picks up what other nodes changed; the journal keeps this node's own changes.
        while True:
            await trio.sleep(self.config.lease_resync_seconds)
            self.cache.begin_resync()
            try:
                rows = await self.state.db.run(leasestore.load_live)
            except DB_ERRORS as error:
                self.cache.abort_resync()
                log_failure(self._db_log, error, "lease resync failed: %s",
                            error.__class__.__name__)
                continue
            self.cache.finish_resync(Lease(*row) for row in rows)
            for subnet_id in self.env.plan.subnets:
                self.env.picker.freed(subnet_id)

    async def reload_plan(self) -> None:
        """Reload the plan now (after a settings change through this node's API)."""
        await self.plans.reload()

    def saturated_seconds(self) -> float:
        return self.committer.saturated_seconds()

    def receiving_seconds(self) -> float:
        """Seconds so far the busiest socket's receive loop never waited for a packet."""
        now = _monotonic()
        return max((now - self._started - ep.waited
                    - (now - ep.waiting_since if ep.waiting_since is not None else 0.0)
                    for ep in self.endpoints), default=0.0)

    def counters_snapshot(self) -> dict[str, Any]:
        return self.counters.snapshot()

    def _internal_error(self, msg: Any) -> None:
        self.counters.drops["internal_error"] += 1
        now = time.monotonic()
        start, count = self._error_window
        if now - start > 60:
            start, count = now, 0
        if count < _ERROR_LOG_PER_MINUTE:
            log.exception("dhcp: failed handling %r", msg)
        self._error_window = (start, count + 1)


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    """The service entry point (runtime.services)."""
    await DhcpServer(state).run(task_status=task_status)
