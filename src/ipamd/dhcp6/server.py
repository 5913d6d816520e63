"""The DHCPv6 server service (RFC 8415, relay-served): UDP in, decision, group commit, UDP out.

Built from what it needs (its ``[dhcp6]`` configuration, the database, the lease journal's
pending marks); the runtime runs it beside the DHCPv4 server (runtime/dhcp_servers.py) and,
once it serves, registers it as ``state.dhcp6`` and its counters as ``state.counters.dhcp6``.

Per datagram: the source must be a trusted relay (``dhcp6.trusted_relays``; else dropped,
``untrusted_relay``) → ``codec.parse`` → ``relay.unwrap`` (hop limit, nesting) → the link
the innermost link-address names (``Plan6.link_for``) → ``engine.decide`` against this
node's bindings (``bindings.BindingCache``). A decision without lease changes (Advertise,
Confirm, Information-request, NoBinding...) is answered at once; one with changes goes to
the committer shared with DHCPv4 (``dhcp.committer``, writing through
``leasestore.commit6``), and its Reply is sent only after the batch committed, so a kill -9
loses no binding a client was told of. A change the database refused (another node got the
address, a lease force-released meanwhile) makes the server read those bindings again and
decide once more; refused twice, the message is dropped (``conflict``) and the client
retransmits.

Replies go back wrapped in one Relay-reply per hop (``relay.wrap``: Interface-Id echoed) to
the relay's source address, port ``dhcp6.reply_port`` (547). Every drop is counted by
reason (``counters.DROP_REASONS``); no datagram can stop the receive loop.
"""

from __future__ import annotations

import ipaddress
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address
from typing import Any

import trio

from ipamd.config import ConfigError, Dhcp6Config
from ipamd.core.lease_events import JournalPending
from ipamd.db.bridge import Database
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp import leasestore
from ipamd.dhcp.committer import Committer
from ipamd.dhcp.leasestore import Op6, OpKind, Ops6
from ipamd.dhcp.plan_loader import PlanHolder
from ipamd.dhcp6 import codec, engine, relay
from ipamd.dhcp6 import plan_loader as loader
from ipamd.dhcp6.bindings import IA_TYPES, BindingCache, ia_name
from ipamd.dhcp6.classify import classify
from ipamd.dhcp6.counters import Dhcp6Counters
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.engine import ChangeKind, Decision, LeaseChange
from ipamd.dhcp6.plan import Binding
from ipamd.dhcp6.protocol import Malformed
from ipamd.dhcp6.sockets import (
    CLIENT_PORT,
    Endpoint,
    global_addresses,
    open_interface,
    open_listen,
    split_listen,
)

log = logging.getLogger("ipamd.dhcp6.server")

RECV_SIZE = 65_535  # a UDP payload; a relay chain of nine hops still fits
_BURST = 64  # datagrams read per wake-up before other tasks get a turn
_ERROR_LOG_PER_MINUTE = 10
_TRUST_CACHE_MAX = 4096
_KINDS = {ChangeKind.GRANT: OpKind.INSERT, ChangeKind.RENEW: OpKind.ACK,
          ChangeKind.RELEASE: OpKind.RELEASE, ChangeKind.DECLINE: OpKind.DECLINE}


@dataclass(slots=True)
class Pending:
    """One message waiting for its commit (the committer's queued item)."""

    born: float
    op: Ops6
    decision: Decision
    relayed: relay.Relayed
    ep: Endpoint
    dest: tuple[Any, ...]  # where the reply goes (the relay's address, or the client's)
    link_address: IPv6Address | None  # what named the client's link
    retried: bool = False


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
        self.trusted = [ipaddress.IPv6Network(item, strict=False)
                        for item in config.trusted_relays]
        self.server_duid: Duid | None = None
        self.committer: Committer[Pending] = Committer(
            db, self._committed, batch_max=config.commit_batch_max,
            window_seconds=config.commit_window_us / 1_000_000, workers=config.commit_workers,
            stale_seconds=config.stale_wait_ms / 1000, on_stale=self._stale,
            commit=leasestore.commit6, warm=leasestore.warm6)
        self.endpoints: list[Endpoint] = []
        self._db_log = Throttle(log)
        self._nursery: trio.Nursery | None = None
        self._error_window = (0.0, 0)
        self._started = time.monotonic()
        # Parsed once: the relays' source addresses (trusted or not) and the subnets' ids.
        self._trust: dict[str, bool] = {}
        self._subnet_ids: dict[str, uuid.UUID] = {}
        self._texts: dict[int, str] = {}  # by int: IPv6Address hashes slowly

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
            self.server_duid = Duid(await self.db.run(leasestore.server_duid6, candidate))
            self.cache.load(await self.db.run(leasestore.load_live6))
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.plans.run)
                await nursery.start(self.committer.run)
                for ep in self.endpoints:
                    nursery.start_soon(self._receive, ep)
                if self.config.lease_resync_seconds:
                    nursery.start_soon(self._resync_loop)
                self.counters.live = self.cache.counts
                log.info("dhcp6 server on %s; DUID %s; %d live bindings, %d links",
                         ", ".join(f"[{h}]:{p}" for h, p in self.addresses),
                         self.server_duid.describe(), len(self.cache),
                         len(self.plans.current.plan.links))
                task_status.started()
        finally:
            self._close_sockets()

    # ------------------------------------------------------------------ receive

    async def _receive(self, ep: Endpoint) -> None:
        sock = ep.sock
        while True:
            ep.waiting_since = since = time.monotonic()
            try:
                await trio.lowlevel.wait_readable(sock)
            finally:
                ep.waited += time.monotonic() - since
                ep.waiting_since = None
            for _ in range(_BURST):
                try:
                    data, source = sock.recvfrom(RECV_SIZE)
                except BlockingIOError:
                    break
                except OSError:  # an ICMP error reported on the socket: not a datagram
                    continue
                try:
                    self.on_datagram(ep, data, source)
                except Exception:  # a bug must cost one message, never the server
                    self._internal_error(data)
            self.committer.kick()
            await trio.lowlevel.checkpoint()

    def on_datagram(self, ep: Endpoint, data: bytes, source: tuple[Any, ...]) -> None:
        counters = self.counters
        host = str(source[0])
        direct = ep.interface is not None
        if not direct and not self._trusted(host):  # checked before any parsing
            counters.drop("untrusted_relay")
            return
        try:
            message = codec.parse(data)
            if isinstance(message, codec.RelayMessage):
                if direct and not self._trusted(host):
                    counters.drop("untrusted_relay")
                    return
                relayed = relay.unwrap(message)
            elif direct:  # a client on the attached link
                relayed = relay.Relayed(message)
            else:
                counters.drop("not_relayed")
                return
        except Malformed as error:
            counters.drop(error.reason)
            return
        counters.received[relayed.message.msg_type] += 1
        if relayed.hops:
            dest: tuple[Any, ...] = (host, self.config.reply_port or int(source[1]))
            link_address = relayed.link_address
        else:  # answered at its link-local address, on the interface it came in on
            dest = (host, CLIENT_PORT, 0, int(source[3]) if len(source) > 3 else 0)
            link_address = self._interface_link(ep)
        self._decide(ep, dest, relayed, link_address, time.monotonic(), retried=False)

    def _interface_link(self, ep: Endpoint) -> IPv6Address | None:
        """The global address of a served interface that lies in a served subnet."""
        plan = self.plans.current.plan
        for address in ep.addresses:
            if plan.link_for(address) is not None:
                return address
        return None

    def _trusted(self, host: str) -> bool:
        known = self._trust.get(host)
        if known is None:
            try:
                address = IPv6Address(host.partition("%")[0])
            except ValueError:
                return False
            known = any(address in network for network in self.trusted)
            if len(self._trust) >= _TRUST_CACHE_MAX:  # sources are relays: few, but bounded
                self._trust.clear()
            self._trust[host] = known
        return known

    def _decide(self, ep: Endpoint, dest: tuple[Any, ...], relayed: relay.Relayed,
                link_address: IPv6Address | None, born: float, *, retried: bool) -> None:
        if self.server_duid is None:
            self.counters.drop("no_server_duid")
            return
        plan = self.plans.current.plan
        link = plan.link_for(link_address)
        layer = relayed.client_link_layer
        classes = classify(relayed.message, plan.classes, None if layer is None else layer.mac)
        decision = engine.decide(relayed.message, link, self.cache, self.server_duid,
                                 time.time(), classes)
        if decision.drop is not None:
            self.counters.drop(decision.drop)
            return
        if not decision.changes:
            self._send(ep, dest, relayed, decision)
            return
        ops = Ops6([self._op(change, relayed, link_address) for change in decision.changes])
        self.committer.submit(Pending(born, ops, decision, relayed, ep, dest, link_address,
                                      retried))

    def _op(self, change: LeaseChange, relayed: relay.Relayed,
            link_address: IPv6Address | None) -> Op6:
        remote = relayed.remote_id
        link_layer = relayed.client_link_layer
        return Op6(
            _KINDS[change.kind], self._subnet_uuid(change.subnet_id), change.address,
            change.prefix_length, change.duid.raw, change.iaid, ia_name(change.ia_type),
            preferred=change.preferred, valid=change.valid,
            seconds=self.config.decline_probation_seconds,
            giaddr=None if link_address is None else self._address_text(link_address),
            remote_id=None if remote is None else remote.encode(),
            subscriber_id=relayed.subscriber_id,
            mac=None if link_layer is None else link_layer.mac,
            supersede=(change.kind is ChangeKind.GRANT
                       and self.cache.has_ia(change.duid, change.iaid, change.ia_type)),
            fqdn=change.fqdn,
        )

    def _address_text(self, address: IPv6Address) -> str:
        """A relay's link-address as text (every Op6 records it; relays are few)."""
        key = int(address)
        found = self._texts.get(key)
        if found is None:
            if len(self._texts) >= _TRUST_CACHE_MAX:
                self._texts.clear()
            found = self._texts[key] = str(address)
        return found

    def _subnet_uuid(self, subnet_id: str) -> uuid.UUID:
        found = self._subnet_ids.get(subnet_id)
        if found is None:
            found = self._subnet_ids[subnet_id] = uuid.UUID(subnet_id)
        return found

    def _send(self, ep: Endpoint, dest: tuple[Any, ...], relayed: relay.Relayed,
              decision: Decision) -> None:
        reply = decision.reply
        if reply is None:
            return
        data = relay.wrap_bytes(reply.to_bytes(), relayed.hops)
        try:
            ep.sock.sendto(data, dest)
        except OSError:
            self.counters.drop("send_failed")
            return
        self.counters.sent[reply.msg_type] += 1

    # ------------------------------------------------------------------ after commit

    def _committed(self, batch: Sequence[Pending], ok: bool) -> None:
        counters = self.counters
        counters.batches += 1
        counters.committed_ops += sum(len(item.op.ops) for item in batch)
        if not ok:
            for _ in batch:
                counters.drop("db_error")
            return
        self.journal.written()
        refused: list[Pending] = []
        for item in batch:
            self._remember(item)
            if item.op.ok:
                self._send(item.ep, item.dest, item.relayed, item.decision)
            elif item.retried:
                counters.drop("conflict")
            else:
                refused.append(item)
        if refused and self._nursery is not None:
            counters.conflicts += len(refused)
            self._nursery.start_soon(self._decide_again, refused)

    def _remember(self, item: Pending) -> None:
        """The committed changes into this node's picture of the bindings (the ops were
        made from the decision's changes, in their order: ``_decide``)."""
        for op, change in zip(item.op.ops, item.decision.changes, strict=True):
            if not op.ok or op.lease_id is None:
                continue
            if op.event:
                self.counters.leases[op.event] += 1
            change_type, duid = change.ia_type, change.duid
            if op.kind == OpKind.RELEASE:
                self.cache.drop(op.lease_id)
                continue
            if op.kind == OpKind.INSERT:  # the IA's other binding was released with it
                self.cache.drop_ia(duid, op.iaid, change_type)
            state = "declined" if op.kind == OpKind.DECLINE else "active"
            self.cache.put(op.lease_id, Binding(change_type, duid, op.iaid, op.ip,
                                                op.prefix_length, state, op.expires))

    async def _decide_again(self, refused: list[Pending]) -> None:
        """The database refused these messages' picture of the bindings: read those
        bindings again, then decide once more (the second decision's refusal is final)."""
        duids = sorted({op.duid for item in refused for op in item.op.ops})
        ips = sorted({op.ip for item in refused for op in item.op.ops})
        try:
            rows = await self.db.run(leasestore.load_some6, duids, ips)
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
            self._decide(item.ep, item.dest, item.relayed, item.link_address, item.born,
                         retried=True)
        self.committer.kick()

    def _stale(self, batch: Sequence[Pending]) -> None:
        for _ in batch:
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

