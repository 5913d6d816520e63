"""The DHCPv6 server's per-packet path, without the waiting: datagrams in, answers out.

Synchronous and compiled with the rest of the hot path (``ipamd.dhcp.compiled``), as
DHCPv4's ``dhcp.dispatch``: the server (``server.py``) owns what awaits — the sockets'
receive loops, the committer's tasks, reading bindings again — and calls in here:

* ``drain``: read up to DRAIN_BURST datagrams from a socket and handle each
  (``on_datagram``), then send their answers; the server waits for the socket when empty;
* ``on_datagram``: trusted relay? → overload → ``codec.parse`` → ``relay.unwrap`` → the
  link → ``classify`` → ``engine.decide``; the answer queued (``send``) or the message's
  lease changes submitted to the committer (a ``Pending``);
* ``committed``: after a batch's commit, the bindings remembered and the Replies sent
  (``pacer``: at once when few, else paced, as DHCPv4's Acks: ``dhcp.pacing``); it returns
  the messages whose picture of the bindings the database refused;
* ``decide``: the decision for one unwrapped message (again, after such a refusal);
* ``send``: one answer queued in ``out`` (``dhcp.outgoing.Outgoing``); the server flushes
  it at the end of a receive burst or a committed batch.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from ipaddress import IPv6Address, IPv6Network
from typing import Any, Protocol

from ipamd.dhcp.leasestore import Op6, OpKind, Ops6
from ipamd.dhcp.outgoing import Outgoing
from ipamd.dhcp.pacing import Pacer
from ipamd.dhcp6 import codec, engine, relay
from ipamd.dhcp6.bindings import BindingCache, ia_name
from ipamd.dhcp6.classify import classify
from ipamd.dhcp6.decision import ChangeKind, Decision, LeaseChange
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.plan import Binding, Plan6
from ipamd.dhcp6.protocol import RELAY_FORW, SOLICIT, Malformed
from ipamd.dhcp6.sockets import CLIENT_PORT, Endpoint

_FOREVER = float("inf")  # a claim's expiry: it lasts until its commit ends (unclaim)
RECV_SIZE = 65_535  # a UDP payload; a relay chain of nine hops still fits
DRAIN_BURST = 64  # datagrams handled before the receive loop lets other tasks run
_CACHE_MAX = 4096  # relays' source addresses and link-addresses remembered: few, but bounded
_KINDS = {ChangeKind.GRANT: OpKind.INSERT, ChangeKind.RENEW: OpKind.ACK,
          ChangeKind.RELEASE: OpKind.RELEASE, ChangeKind.DECLINE: OpKind.DECLINE}
# A Relay-forward as relays send it (dhcrelay, perfdhcp, routers without Interface-Id): the
# Relay Message option (9) first, right after the 34-octet relay header (RFC 8415 §9).
_RELAY_MSG_HEAD = b"\x00\x09"
_RELAYED_TYPE_AT = 38  # the relayed message's msg-type: header, option code and length


class Versioned(Protocol):
    @property
    def plan(self) -> Plan6: ...


class PlanSource(Protocol):
    """Where the current plan is (``dhcp.plan_loader.PlanHolder``)."""

    @property
    def current(self) -> Versioned: ...


class Pending:
    """One message waiting for its commit (the committer's queued item)."""

    __slots__ = ("born", "decision", "dest", "ep", "link_address", "op", "relayed", "retried")

    def __init__(self, born: float, op: Ops6, decision: Decision, relayed: relay.Relayed,
                 ep: Endpoint, dest: tuple[Any, ...], link_address: IPv6Address | None,
                 retried: bool = False) -> None:
        self.born = born
        self.op = op
        self.decision = decision
        self.relayed = relayed
        self.ep = ep  # the socket it came in on
        self.dest = dest  # where the reply goes (the relay's address, or the client's)
        self.link_address = link_address  # what named the client's link
        self.retried = retried


def solicit_head(data: bytes) -> bool:
    """A Solicit, or a Solicit in a Relay-forward that carries it first (checked on the
    octets, before parsing; other shapes are recognised after parsing)."""
    if not data:
        return False
    if data[0] == SOLICIT:
        return True
    return (data[0] == RELAY_FORW and len(data) > _RELAYED_TYPE_AT
            and data[_RELAYED_TYPE_AT] == SOLICIT and data[34:36] == _RELAY_MSG_HEAD)


class Dispatch6:
    """The server's packet path and what it remembers between packets."""

    def __init__(self, counters: Any, cache: BindingCache, plans: PlanSource, committer: Any,
                 out: Outgoing, *, trusted: Sequence[IPv6Network], reply_port: int,
                 probation_seconds: int, overload_seconds: float,
                 on_error: Callable[[bytes], None]) -> None:
        self.counters = counters  # counters.Dhcp6Counters
        self.cache = cache
        self.plans = plans
        self.committer = committer  # dhcp.committer.Committer: submit(), overloaded()
        self.out = out
        self.trusted = list(trusted)
        self.reply_port = reply_port
        self.probation_seconds = probation_seconds
        self.overload_seconds = overload_seconds
        self.on_error = on_error  # a bug in the packet path: counted and logged by the server
        self.server_duid: Duid | None = None  # set once the database has given it
        # Committed Replies, sent paced; it counts the messages submitted for a commit,
        # whose rate sets the pace.
        self.pacer: Pacer[Pending] = Pacer(self._send_pending, out.flush)
        # Parsed once: the relays' source addresses (trusted or not), link-addresses as
        # text and the subnets' ids (IPv6Address hashes and formats slowly: by int).
        self._trust: dict[str, bool] = {}
        self._texts: dict[int, str] = {}
        self._subnet_ids: dict[str, uuid.UUID] = {}

    # ------------------------------------------------------------------ receive

    def drain(self, ep: Endpoint) -> bool:
        """Handle up to DRAIN_BURST datagrams waiting on ``ep`` and send their answers; True
        when its socket is empty (the caller waits until it is readable), False when the
        caller should let other tasks run and call again. In here, as DHCPv4's
        ``dispatch.drain``: a trio wait and checkpoint per burst cost ~20 µs a datagram
        when bursts were small."""
        try:
            return self._drain(ep)
        finally:
            self.out.flush()

    def _drain(self, ep: Endpoint) -> bool:
        sock = ep.sock
        on_datagram = self.on_datagram
        for _ in range(DRAIN_BURST):
            try:
                data, source = sock.recvfrom(RECV_SIZE)
            except BlockingIOError:
                return True
            except OSError:  # an ICMP error reported on the socket: not a datagram
                continue
            try:
                on_datagram(ep, data, source)
            except Exception:  # a bug must cost one message, never the server
                self.on_error(data)
        return False

    def on_datagram(self, ep: Endpoint, data: bytes, source: tuple[Any, ...]) -> None:
        """Everything one datagram causes; its answer is queued in ``out``."""
        counters = self.counters
        host = str(source[0])
        direct = ep.interface is not None
        if not direct and not self.trusted_source(host):  # checked before any parsing
            counters.drop("untrusted_relay")
            return
        # Overloaded: new clients wait (they retransmit), clients past their Solicit are
        # served. Most Solicits are recognised before parsing: shedding costs next to nothing.
        if solicit_head(data) and self.overloaded():
            self._shed()
            return
        try:
            message = codec.parse(data)
            if isinstance(message, codec.RelayMessage):
                if direct and not self.trusted_source(host):
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
        msg_type = relayed.message.msg_type
        if msg_type == SOLICIT and self.overloaded():
            self._shed()
            return
        counters.received[msg_type] += 1
        if relayed.hops:
            dest: tuple[Any, ...] = (host, self.reply_port or int(source[1]))
            link_address = relayed.link_address
        else:  # answered at its link-local address, on the interface it came in on
            dest = (host, CLIENT_PORT, 0, int(source[3]) if len(source) > 3 else 0)
            link_address = self._interface_link(ep)
        self.decide(ep, dest, relayed, link_address, time.monotonic(), False)

    def overloaded(self) -> bool:
        """Has the oldest message queued for its commit waited longer than
        dhcp6.overload_wait_ms (a stalled commit's time not counted: Committer.overloaded)?"""
        return bool(self.committer.overloaded(time.monotonic(), self.overload_seconds))

    def _shed(self) -> None:
        self.counters.received[SOLICIT] += 1
        self.counters.drop("overload")

    def _interface_link(self, ep: Endpoint) -> IPv6Address | None:
        """The global address of a served interface that lies in a served subnet."""
        plan = self.plans.current.plan
        for address in ep.addresses:
            if plan.link_for(address) is not None:
                return address
        return None

    def trusted_source(self, host: str) -> bool:
        known = self._trust.get(host)
        if known is None:
            try:
                address = IPv6Address(host.partition("%")[0])
            except ValueError:
                return False
            known = any(address in network for network in self.trusted)
            if len(self._trust) >= _CACHE_MAX:
                self._trust.clear()
            self._trust[host] = known
        return known

    def decide(self, ep: Endpoint, dest: tuple[Any, ...], relayed: relay.Relayed,
               link_address: IPv6Address | None, born: float, retried: bool) -> None:
        server_duid = self.server_duid
        if server_duid is None:
            self.counters.drop("no_server_duid")
            return
        plan = self.plans.current.plan
        link = plan.link_for(link_address)
        layer = relayed.client_link_layer
        classes = classify(relayed.message, plan.classes, None if layer is None else layer.mac)
        decision = engine.decide(relayed.message, link, self.cache, server_duid, time.time(),
                                 classes)
        if decision.drop is not None:
            self.counters.drop(decision.drop)
            return
        if not decision.changes:
            self.send(ep, dest, relayed, decision)
            return
        ops = Ops6([self.op(change, relayed, link_address) for change in decision.changes])
        self.claim(decision)
        self.pacer.submitted += 1
        self.committer.submit(Pending(born, ops, decision, relayed, ep, dest, link_address,
                                      retried))

    def claim(self, decision: Decision) -> None:
        """The decision's grants held in the cache until their commit (``BindingCache.claim``)."""
        cache = self.cache
        for change in decision.changes:
            if change.kind is ChangeKind.GRANT:
                cache.claim(Binding(change.ia_type, change.duid, change.iaid, change.address,
                                    change.prefix_length, "active", _FOREVER))

    def unclaim(self, item: Pending) -> None:
        """Its commit ended (written, refused, failed or dropped unwritten)."""
        cache = self.cache
        for change in item.decision.changes:
            if change.kind is ChangeKind.GRANT:
                cache.unclaim(change.address, change.prefix_length, change.duid, change.iaid,
                              change.ia_type)

    def op(self, change: LeaseChange, relayed: relay.Relayed,
           link_address: IPv6Address | None) -> Op6:
        """The lease store's change for one of a decision's."""
        remote = relayed.remote_id
        link_layer = relayed.client_link_layer
        return Op6(
            _KINDS[change.kind], self._subnet_uuid(change.subnet_id), change.address,
            change.prefix_length, change.duid.raw, change.iaid, ia_name(change.ia_type),
            preferred=change.preferred, valid=change.valid, seconds=self.probation_seconds,
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
            if len(self._texts) >= _CACHE_MAX:
                self._texts.clear()
            found = self._texts[key] = str(address)
        return found

    def _subnet_uuid(self, subnet_id: str) -> uuid.UUID:
        found = self._subnet_ids.get(subnet_id)
        if found is None:
            found = self._subnet_ids[subnet_id] = uuid.UUID(subnet_id)
        return found

    def send(self, ep: Endpoint, dest: tuple[Any, ...], relayed: relay.Relayed,
             decision: Decision) -> None:
        """Queue the decision's reply, wrapped for the relays it came through."""
        reply = decision.reply
        if reply is None:
            return
        self.out.add(ep, dest, relay.wrap_bytes(reply.to_bytes(), relayed.hops), reply.msg_type)

    def _send_pending(self, item: Pending) -> None:
        self.send(item.ep, item.dest, item.relayed, item.decision)

    # ------------------------------------------------------------------ after commit

    def committed(self, batch: Sequence[Pending]) -> list[Pending]:
        """A committed batch: bindings remembered, Replies sent (or left to the pacer); the
        messages a change of which the database refused, and which have not been decided
        again yet, returned."""
        refused: list[Pending] = []
        pacer = self.pacer
        pacer.measure_rate()
        for item in batch:
            self.unclaim(item)
            self.remember(item)
            if item.op.ok:
                pacer.queued.append(item)
            elif item.retried:
                self.counters.drop("conflict")
            else:
                refused.append(item)
        pacer.send_queued()
        return refused

    def remember(self, item: Pending) -> None:
        """The committed changes into this node's picture of the bindings (the ops were
        made from the decision's changes, in their order: ``decide``)."""
        leases = self.counters.leases
        for op, change in zip(item.op.ops, item.decision.changes, strict=True):
            lease_id = op.lease_id
            if not op.ok or lease_id is None:
                continue
            if op.event:
                leases[op.event] += 1
            kind = op.kind
            if kind == OpKind.RELEASE:
                self.cache.drop(lease_id)
                continue
            if kind == OpKind.INSERT:  # the IA's other binding was released with it
                self.cache.drop_ia(change.duid, op.iaid, change.ia_type)
            state = "declined" if kind == OpKind.DECLINE else "active"
            self.cache.put(lease_id, Binding(change.ia_type, change.duid, op.iaid, op.ip,
                                             op.prefix_length, state, op.expires))

