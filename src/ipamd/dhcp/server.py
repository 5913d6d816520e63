"""The DHCPv4 server service: sockets in, engine decision, group commit, replies out.

Built from what it needs (its ``[dhcp]`` configuration, the database, the lease journal's
pending marks); the runtime runs it (runtime/dhcp_servers.py) and, once it serves,
registers it as ``state.dhcp`` (a ``state.DhcpControl``: the lease API and the expiry
worker tell it about leases they end) and its counters as ``state.counters.dhcp``.

Per packet (``dispatch``, compiled with the hot path): parse → engine.decide (pure) → either
a reply now, or an Op queued for the committer; after the batch commit, engine.finish builds
the reply and it is sent. This module does the waiting: for a socket to be readable or
writable, for the committer, between bursts of answers. No task is spawned per packet and
the only trio↔asyncio crossing is the batch commit.
"""

from __future__ import annotations

import ipaddress
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import trio

from ipamd.config import ConfigError, DhcpConfig
from ipamd.core.lease_events import JournalPending
from ipamd.db.bridge import Database
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp import compiled, leasestore
from ipamd.dhcp.backlog import Backlog
from ipamd.dhcp.committer import Committer
from ipamd.dhcp.context import Endpoint, Env, Exchange
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.dispatch import Dispatch
from ipamd.dhcp.freepool import AddressPicker
from ipamd.dhcp.leasecache import Lease, LeaseCache
from ipamd.dhcp.leasestats import LeaseStats
from ipamd.dhcp.pingcheck import PingGate, Probe
from ipamd.dhcp.pinger import Pinger
from ipamd.dhcp.plan import Plan
from ipamd.dhcp.plan_loader import PlanHolder
from ipamd.dhcp.relays import TrustedRelays
from ipamd.dhcp.sockets import open_interface, open_listen, split_listen

log = logging.getLogger("ipamd.dhcp.server")

_ERROR_LOG_PER_MINUTE = 10

_monotonic = time.monotonic


class DhcpServer:
    def __init__(self, config: DhcpConfig, db: Database, journal: JournalPending, *,
                 node_name: str) -> None:
        self.db = db
        self.journal = journal  # told of every batch's lease changes (the deriver's cue)
        self.config = config
        self.counters = DhcpCounters()
        self.cache = LeaseCache()
        self._db_log = Throttle(log)
        self.plans: PlanHolder[Plan] = PlanHolder(db, config.plan_refresh_seconds)
        self.plans.on_change.append(self._plan_changed)
        server_id = int(ipaddress.IPv4Address(config.server_id)) if config.server_id else 0
        # The ping check (subnets' ping_check): probes outside the packet path, its socket
        # opened at the first probe (docs/api-ipam.md, "Ping check").
        self.ping_gate = PingGate(config.ping_recheck_seconds, config.ping_max_outstanding,
                                  self.counters.pings)
        self.pinger = Pinger(self.ping_gate, self._probed, self._probes_reported)
        self.env = Env(
            config=config, plan=self.plans.current, cache=self.cache,
            picker=AddressPicker(node_name),
            trusted=TrustedRelays(config.trusted_relays), counters=self.counters,
            server_id=server_id, ping=self.ping_gate,
        )
        stale_seconds = config.stale_wait_ms / 1000
        self.committer = Committer(
            db, self._committed, batch_max=config.commit_batch_max,
            window_seconds=config.commit_window_us / 1_000_000, workers=config.commit_workers,
            stale_seconds=stale_seconds, on_stale=self._stale,
            waits=self.counters.commit_wait,
        )
        self.stats = LeaseStats(db)
        self.endpoints: list[Endpoint] = []
        self._backlog = Backlog()
        self.dispatch = Dispatch(
            self.env, self.counters, self.committer,
            overload_seconds=config.overload_wait_ms / 1000, stale_seconds=stale_seconds,
            wake_backlog=self._wake_backlog,
            on_error=self._internal_error, probe=self.pinger.start,
        )
        self.on_datagram = self.dispatch.on_datagram
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
            for row in await self.db.run(leasestore.load_live):
                self.cache.put(Lease(*row))
            async with trio.open_nursery() as nursery:
                await nursery.start(self.plans.run)
                await nursery.start(self.committer.run)
                await nursery.start(self.stats.run)
                await nursery.start(self.pinger.run)
                for ep in self.endpoints:
                    nursery.start_soon(self._receive, ep)
                nursery.start_soon(self._flush_backlog)
                nursery.start_soon(self.dispatch.pacer.run)
                if self.config.lease_resync_seconds:
                    nursery.start_soon(self._resync_loop)
                self.counters.live = self.cache.counts
                self.counters.commit_seconds = lambda: self.committer.busy_seconds
                log.info("dhcp server on %s; %d live leases, %d subnets; %s",
                         ", ".join(f"{h}:{p}" for h, p in self.addresses), len(self.cache),
                         len(self.env.plan.subnets), compiled.STATUS)
                task_status.started()
        finally:
            self._close_sockets()

    # ------------------------------------------------------------------ receive

    async def _receive(self, ep: Endpoint) -> None:
        drain = self.dispatch.drain
        kick = self.committer.kick
        wait = trio.lowlevel.wait_readable
        checkpoint = trio.lowlevel.checkpoint
        sock = ep.sock
        while True:
            empty = drain(ep)
            kick()  # the batch these datagrams made goes into the database before this parks
            if empty:
                ep.waiting_since = since = _monotonic()
                try:
                    await wait(sock)
                finally:
                    ep.waited += _monotonic() - since
                    ep.waiting_since = None
            else:
                await checkpoint()

    # ------------------------------------------------------------------ after commit

    def _committed(self, batch: Sequence[Exchange], ok: bool) -> None:
        granted = self.dispatch.committed(batch, ok)  # the answers first, then the counting
        counters = self.counters
        counters.batches += 1
        counters.committed_ops += len(batch)
        counters.batch_sizes.observe(len(batch))
        counters.commit_latency.observe(self.committer.last_seconds)
        if ok:
            self.journal.written()
            self.stats.added(granted)

    def _probed(self, tx: Exchange, probe: Probe, result: int) -> None:
        self.dispatch.probed(tx, probe, result)

    def _probes_reported(self) -> None:
        """After the probes that ended together: their Offers out in as few sends as may
        be (paced when many, as a batch's Acks), conflicts' holds to the database."""
        self.dispatch.pacer.send_queued()
        self.dispatch.out.flush()
        self.committer.kick()

    def _wake_backlog(self) -> None:
        self._backlog.wake()

    def _stale(self, batch: Sequence[Exchange]) -> None:
        """Ops the committer dropped unwritten because they waited too long."""
        self.dispatch.stale(batch)

    async def _flush_backlog(self) -> None:
        await self._backlog.send(self.dispatch.out)

    # ------------------------------------------------------------------ lease bookkeeping

    def forget(self, ended: Iterable[tuple[uuid.UUID, uuid.UUID, Any]]) -> None:
        """Leases ended outside the DHCP path (expiry, API force-release): (id, subnet, event)."""
        for lease_id, subnet_id, event in ended:
            known = self.cache.drop(lease_id) is not None
            self.env.picker.freed(subnet_id)
            # One lease table: ended DHCPv6 bindings come here too, the DHCPv6 server's to
            # count (an IPv6 subnet is never in this plan).
            if event and (known or subnet_id in self.env.plan.subnets):
                self.counters.leases[event] += 1

    async def _resync_loop(self) -> None:
        # Picks up what other nodes changed; the journal keeps this node's own changes.
        while True:
            await trio.sleep(self.config.lease_resync_seconds)
            self.cache.begin_resync()
            try:
                rows = await self.db.run(leasestore.load_live)
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

    def lease_changes(self) -> int:
        """Lease changes committed so far (runtime.lease_churn watches their rate)."""
        return self.counters.committed_ops

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

