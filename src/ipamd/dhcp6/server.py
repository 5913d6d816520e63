"""The DHCPv6 server service (RFC 8415, relay-served): UDP in, decision, group commit, UDP out.

Built from what it needs (its ``[dhcp6]`` configuration, the database, the lease journal's
pending marks); the runtime runs it beside the DHCPv4 server (runtime/dhcp_servers.py) and,
once it serves, registers it as ``state.dhcp6`` and its counters as ``state.counters.dhcp6``.

Per datagram (``dispatch``, the synchronous packet path, compiled with the hot path; this
module does the waiting): the source must be a trusted relay (``dhcp6.trusted_relays``; else
dropped, ``untrusted_relay``) → ``codec.parse`` → ``relay.unwrap`` (hop limit, nesting) →
the link the innermost link-address names (``Plan6.link_for``) → ``engine.decide`` against
this node's bindings (``bindings.BindingCache``). A decision without lease changes
(Advertise, Confirm, Information-request, NoBinding...) is answered at once; one with
changes goes to the committer shared with DHCPv4 (``dhcp.committer``, writing through
``leasestore.commit6``), and its Reply is sent only after the batch committed, so a kill -9
loses no binding a client was told of. A change the database refused (another node got the
address, a lease force-released meanwhile) makes the server read those bindings again and
decide once more; refused twice, the message is dropped (``conflict``) and the client
retransmits. While the commit queue is behind (``dhcp6.overload_wait_ms``), new Solicits are
dropped (``overload``), never the messages of clients past their Solicit, as DHCPv4 drops
new Discovers: past its ceiling the server answers about its ceiling, not less.

Replies go back wrapped in one Relay-reply per hop (``relay.wrap``: Interface-Id echoed) to
the relay's source address, port ``dhcp6.reply_port`` (547), queued and sent together at
the end of a receive burst or of a committed batch (``dhcp.outgoing``, as DHCPv4's: answers
of one size to one relay leave several to a send); a full socket buffer queues them for
the backlog task (``dhcp.backlog``). Every drop is counted by reason
(``counters.DROP_REASONS``); no datagram can stop the receive loop.
"""

from __future__ import annotations

import ipaddress
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import trio

from ipamd.config import ConfigError, Dhcp6Config
from ipamd.core.lease_events import JournalPending
from ipamd.db.bridge import Database
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp import leasestore
from ipamd.dhcp.backlog import Backlog
from ipamd.dhcp.committer import Committer
from ipamd.dhcp.outgoing import Outgoing
from ipamd.dhcp.plan_loader import PlanHolder
from ipamd.dhcp6 import plan_loader as loader
from ipamd.dhcp6.bindings import IA_TYPES, BindingCache
from ipamd.dhcp6.counters import Dhcp6Counters
from ipamd.dhcp6.dispatch import Dispatch6, Pending
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.sockets import (
    Endpoint,
    global_addresses,
    open_interface,
    open_listen,
    split_listen,
)

log = logging.getLogger("ipamd.dhcp6.server")

_ERROR_LOG_PER_MINUTE = 10


class Dhcp6Server:
    def __init__(self, config: Dhcp6Config, db: Database, journal: JournalPending, *,
                 plan_refresh_seconds: float) -> None:
        self.db = db
        self.journal = journal  # told of every batch's lease changes (the deriver's cue)
        self.config = config
        self.counters = Dhcp6Counters()
        self.cache = BindingCache()
        self.plans: PlanHolder[loader.VersionedPlan6] = PlanHolder(
            db, plan_refresh_seconds, load=loader.load_rows,
            build=loader.build, empty=loader.EMPTY)
        self.plans.on_change.append(self._plan_changed)
        self.committer: Committer[Pending] = Committer(
            db, self._committed, batch_max=config.commit_batch_max,
            window_seconds=config.commit_window_us / 1_000_000, workers=config.commit_workers,
            stale_seconds=config.stale_wait_ms / 1000, on_stale=self._stale,
            commit=leasestore.commit6, warm=leasestore.warm6)
        self.endpoints: list[Endpoint] = []
        # Answers go out together at the end of a receive burst or a committed batch,
        # several to a send where the kernel segments them (dhcp.outgoing).
        self._backlog = Backlog()
        self.out = Outgoing(self.counters, self._backlog.wake)
        self.dispatch = Dispatch6(
            self.counters, self.cache, self.plans, self.committer, self.out,
            trusted=[ipaddress.IPv6Network(item, strict=False) for item in config.trusted_relays],
            reply_port=config.reply_port, probation_seconds=config.decline_probation_seconds,
            overload_seconds=config.overload_wait_ms / 1000, on_error=self._internal_error)
        self.on_datagram = self.dispatch.on_datagram
        self._db_log = Throttle(log)
        self._nursery: trio.Nursery | None = None
        self._error_window = (0.0, 0)
        self._started = time.monotonic()

    @property
    def server_duid(self) -> Duid | None:
        """The appliance's one DUID (Server Identifier), once the database has given it."""
        return self.dispatch.server_duid

    @server_duid.setter
    def server_duid(self, duid: Duid | None) -> None:
        self.dispatch.server_duid = duid

    # ------------------------------------------------------------------ set-up

    def _open_sockets(self) -> None:
        key, value = "dhcp6.listen", ""
        try:
            for value in self.config.listen:
                self.endpoints.append(open_listen(value))
            key = "dhcp6.interfaces"
            port = split_listen(self.config.listen[0])[1] if self.config.listen else 547
            for value in self.config.interfaces:
                self.endpoints.append(open_interface(value, port))
        except OSError as error:
            self._close_sockets()
            # A start-up refusal the operator can act on, not a traceback (cli prints it).
            raise ConfigError(f"{key} {value!r}: cannot open: {error.strerror or error}"
                              ) from None

    def _plan_changed(self, _plan: loader.VersionedPlan6) -> None:
        # A served interface's addresses name its subnet: look again when the plan moves.
        for ep in self.endpoints:
            if ep.interface is not None:
                ep.addresses = global_addresses(ep.interface)

    def _close_sockets(self) -> None:
        for ep in self.endpoints:
            ep.sock.close()

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [(ep.host, ep.port) for ep in self.endpoints]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._open_sockets()
        self._started = time.monotonic()
        try:
            candidate = Duid.from_uuid(uuid.uuid4()).raw  # RFC 6355: no MAC or clock needed
            server_duid = Duid(await self.db.run(leasestore.server_duid6, candidate))
            self.server_duid = server_duid
            self.cache.load(await self.db.run(leasestore.load_live6))
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.plans.run)
                await nursery.start(self.committer.run)
                nursery.start_soon(self._backlog.send, self.out)
                nursery.start_soon(self.dispatch.pacer.run)
                for ep in self.endpoints:
                    nursery.start_soon(self._receive, ep)
                if self.config.lease_resync_seconds:
                    nursery.start_soon(self._resync_loop)
                self.counters.live = self.cache.counts
                log.info("dhcp6 server on %s; DUID %s; %d live bindings, %d links",
                         ", ".join(f"[{h}]:{p}" for h, p in self.addresses),
                         server_duid.describe(), len(self.cache),
                         len(self.plans.current.plan.links))
                task_status.started()
        finally:
            self._close_sockets()

    # ------------------------------------------------------------------ receive

    async def _receive(self, ep: Endpoint) -> None:
        drain = self.dispatch.drain
        kick = self.committer.kick
        sock = ep.sock
        while True:
            empty = drain(ep)
            kick()  # the burst's commit goes into the database before this parks
            if not empty:  # more waiting: other tasks get a turn first
                await trio.lowlevel.checkpoint()
                continue
            ep.waiting_since = since = time.monotonic()
            try:
                await trio.lowlevel.wait_readable(sock)
            finally:
                ep.waited += time.monotonic() - since
                ep.waiting_since = None

    def flush(self) -> None:
        """Send the answers queued since the last flush (counted as sent, or send_failed)."""
        self.out.flush()

    # ------------------------------------------------------------------ after commit

    def _committed(self, batch: Sequence[Pending], ok: bool) -> None:
        counters = self.counters
        counters.batches += 1
        counters.committed_ops += sum(len(item.op.ops) for item in batch)
        if not ok:
            for item in batch:
                self.dispatch.unclaim(item)
                counters.drop("db_error")
            return
        self.journal.written()
        refused = self.dispatch.committed(batch)
        self.flush()
        if refused and self._nursery is not None:
            counters.conflicts += len(refused)
            self._nursery.start_soon(self._decide_again, refused)

    async def _decide_again(self, refused: list[Pending]) -> None:
        """The database refused these messages' picture of the bindings: read those
        bindings again, then decide once more (the second decision's refusal is final)."""
        ops = [op for item in refused for op in item.op.ops]
        keys = sorted({op.client_key for op in ops})
        # Where the cache had these IAs (declined ones too: dropped below, read again).
        ips = sorted({op.ip for op in ops}.union(*(
            self.cache.addresses_of(Duid(op.duid_raw), op.iaid, IA_TYPES[op.ia_type])
            for op in ops)))
        try:
            rows = await self.db.run(leasestore.load_some6, keys, ips)
        except DB_ERRORS as error:
            log_failure(self._db_log, error, "dhcp6: bindings not read again: %s",
                        error.__class__.__name__)
            for _ in refused:
                self.counters.drop("db_error")
            return
        for item in refused:
            for op in item.op.ops:
                self.cache.drop_at(op.ip, op.prefix_length)
                self.cache.drop_ia(Duid(op.duid_raw), op.iaid, IA_TYPES[op.ia_type])
        self.cache.load(rows)
        for item in refused:
            self.dispatch.decide(item.ep, item.dest, item.relayed, item.link_address,
                                 item.born, True)
        self.committer.kick()
        self.flush()

    def _stale(self, batch: Sequence[Pending]) -> None:
        for item in batch:
            self.dispatch.unclaim(item)
            self.counters.drop("stale")

    # ------------------------------------------------------------------ bookkeeping

    async def _resync_loop(self) -> None:
        while True:
            await trio.sleep(self.config.lease_resync_seconds)
            try:
                rows = await self.db.run(leasestore.load_live6)
            except DB_ERRORS as error:
                log_failure(self._db_log, error, "dhcp6 binding resync failed: %s",
                            error.__class__.__name__)
                continue
            self.cache.replace_all(rows)

    def forget(self, ended: Iterable[tuple[uuid.UUID, uuid.UUID, str | None]]) -> None:
        """Leases ended outside the DHCPv6 path (expiry, force-release)."""
        for lease_id, _subnet, event in ended:
            if lease_id in self.cache:
                self.cache.drop(lease_id)
                if event:
                    self.counters.leases[event] += 1

    async def reload_plan(self) -> None:
        await self.plans.reload()

    def saturated_seconds(self) -> float:
        return self.committer.saturated_seconds()

    def receiving_seconds(self) -> float:
        now = time.monotonic()
        return max((now - self._started - ep.waited
                    - (now - ep.waiting_since if ep.waiting_since is not None else 0.0)
                    for ep in self.endpoints), default=0.0)

    def lease_changes(self) -> int:
        return self.counters.committed_ops

    def counters_snapshot(self) -> dict[str, Any]:
        return self.counters.snapshot()

    def _internal_error(self, data: bytes) -> None:
        self.counters.drop("internal_error")
        now = time.monotonic()
        start, count = self._error_window
        if now - start > 60:
            start, count = now, 0
        if count < _ERROR_LOG_PER_MINUTE:
            log.exception("dhcp6: failed handling a datagram of %d octets", len(data))
        self._error_window = (start, count + 1)

