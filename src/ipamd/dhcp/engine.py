"""The DHCP decision, free of sockets: stages in order, then the allocate step per message.

``decide(tx, env)`` runs accept → select subnet → identify (client key, reservation)
→ classify → allocate, and returns one of:

* a drop reason (``str``),
* a ``DhcpReply`` to send now (Inform, NAK, every Offer),
* an ``Op`` for the committer (the database write this answer depends on),
* a ``pingcheck.Probe``: the subnet's ping check wants an echo to the address first;
  ``probed.after_probe`` decides again when it ends (docs/api-ipam.md, "Ping check").

An Offer writes nothing: the address is held in this node's memory
(``LeaseCache.holds``) for ``dhcp.offer_hold_seconds``. The Ack of a held address
inserts the lease, and the unique indexes on live leases judge it: another node (or a
client of this one whose lease this node did not know) may hold the address by then,
and the client gets a NAK and starts over — never two clients on one address.

After the committer ran the op, ``finish(tx, env)`` turns its outcome into a
``DhcpReply``, ``None`` (Release and Decline get no answer), a drop reason, or a new
``Op`` when the database refused our pick and another one is tried.
RFC 2131 §4.3 throughout; this server is authoritative (NAK what was never acknowledged
to this client: docs/DEVELOPING.md, "What ipamd is").
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ipamd.dhcp import pingcheck
from ipamd.dhcp.accept import accept
from ipamd.dhcp.classify import classify
from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.destination import destination
from ipamd.dhcp.identity import identify
from ipamd.dhcp.leasecache import Lease
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.options import (
    ACK,
    DECLINE,
    DISCOVER,
    INFORM,
    LEASE_TIME,
    NAK,
    OFFER,
    RELEASE,
    REQUEST,
    SERVER_ID,
    MalformedPacket,
)
from ipamd.dhcp.plan import Subnet
from ipamd.dhcp.reply import build
from ipamd.dhcp.shared import move_to, pick_beyond, settle
from ipamd.dhcp.subnet_select import select_subnet

MAX_ATTEMPTS = 4  # picks per transaction when the database keeps refusing them


class DhcpReply:
    __slots__ = ("data", "dest", "mtype")

    def __init__(self, data: bytes, mtype: int, dest: tuple[int, int]) -> None:
        self.data = data
        self.mtype = mtype
        self.dest = dest


Decision = str | DhcpReply | Op | pingcheck.Probe | None


def _reply(
    tx: Exchange, env: Env, mtype: int, yiaddr: int = 0, message: str | None = None
) -> DhcpReply:
    data = build(tx, env, mtype, yiaddr, message)
    return DhcpReply(data, mtype, destination(tx.msg, mtype, env.config.reply_port,
                                          env.config.client_port))


def _requested(tx: Exchange) -> int | None:
    try:
        return tx.msg.requested_ip
    except MalformedPacket:  # a wrong length is ignored: as if no address was asked for
        return None


def clamp_lease_time(asked: int, bounds: tuple[int, int]) -> int:
    """A requested lease time inside the subnet's bounds as it is, outside raised or lowered
    to the nearer bound (docs/api-ipam.md, "Lease time")."""
    low, high = bounds
    return low if asked < low else high if asked > high else asked


def _ask_lease_time(tx: Exchange, subnet: Subnet) -> int:
    """The lease time for this Discover or Request: RFC 2131 §4.3.1 lets the server honour
    a client's option 51; it does within the subnet's bounds. Without bounds the option is
    not even read (Kea's rule: the subnet's time), so the common case costs one test."""
    bounds = subnet.lease_bounds
    if bounds is None:
        return subnet.lease_time
    raw = tx.msg.options.get(LEASE_TIME)
    if raw is None or len(raw) != 4:  # absent, or malformed: as if not asked
        return subnet.lease_time
    granted = clamp_lease_time(int.from_bytes(raw, "big"), bounds)
    if granted != subnet.lease_time:
        tx.lease_time = granted  # the reply's 51/58/59 follow it (reply.build)
    return granted


def _allowed(tx: Exchange, subnet: Subnet, ip: int) -> bool:
    """May this client hold ``ip``: its reservation, or a dynamic address of its classes."""
    res = tx.reservation
    if res is not None and res.ip == ip:
        return subnet.contains(ip)
    return subnet.usable(ip) and subnet.dynamic_ok(ip, tx.classes)


def _free(env: Env, tx: Exchange, subnet: Subnet, ip: int) -> bool:
    """No lease, no commit in flight, and no Offer hold of another client on ``ip``."""
    if env.cache.at(subnet.id, ip) is not None or ip in env.pending_in(subnet.id):
        return False
    hold = env.cache.holds.at(subnet.id, ip)
    return hold is None or hold.client_key == tx.client_key


def _lapse_holds(env: Env) -> None:
    for subnet_id in env.cache.holds.lapse(time.time()):
        env.picker.freed(subnet_id)


def _offer(tx: Exchange, env: Env, ip: int) -> DhcpReply:
    """Hold ``ip`` for the client in memory and offer it: no write (the Ack will judge)."""
    env.cache.holds.hold(tx.subnet.id, ip, tx.client_key,  # type: ignore[union-attr]  # subnet_select set it
                         time.time() + env.config.offer_hold_seconds)
    return _reply(tx, env, OFFER, ip)


def _offer_fresh(tx: Exchange, env: Env, ip: int) -> Decision:
    """Offer an address the client has no lease on: with the subnet's ping check on, once
    nothing answered an echo to it (the address is held for the client meanwhile)."""
    subnet = tx.subnet
    assert subnet is not None
    ping = env.ping
    if not subnet.ping_timeout or ping is None:
        return _offer(tx, env, ip)
    verdict = ping.verdict(subnet.id, ip, time.time())
    if verdict == pingcheck.OFFER:
        return _offer(tx, env, ip)
    if verdict == pingcheck.BUSY:
        return "ping_busy"
    env.cache.holds.hold(subnet.id, ip, tx.client_key,
                         time.time() + env.config.offer_hold_seconds)
    if verdict == pingcheck.PENDING:
        return "ping_pending"  # a retransmitted Discover: its probe is under way
    ping.begin(subnet.id, ip)
    return pingcheck.Probe(subnet.id, ip, tx.local_ip, subnet.ping_timeout)


def _pick_again(tx: Exchange, env: Env) -> Decision:
    """Decide again after the database refused a pick or held a ping conflict's address."""
    tx.attempts += 1
    if tx.attempts >= MAX_ATTEMPTS:
        return "conflict_retries"
    tx.op = None
    return ALLOCATE[tx.mtype](tx, env)


def _op(tx: Exchange, kind: OpKind, ip: int | None, seconds: int, **extra: object) -> Op:
    msg = tx.msg
    cid = msg.client_id
    op = Op(
        kind, tx.subnet.id, ip, tx.client_key, seconds,  # type: ignore[union-attr]  # subnet_select set it
        mac=msg.chaddr[:6].hex() if msg.htype == 1 and msg.hlen == 6 else None,
        client_id=cid,
        duid=cid[5:].hex(":") if cid and len(cid) > 5 and cid[0] == 255 else None,
        hostname=tx.hostname, fqdn=tx.fqdn, circuit_id=tx.circuit_id, remote_id=tx.remote_id,
        giaddr=msg.giaddr or None, **extra,  # type: ignore[arg-type]  # Op checks its keywords
    )
    return op


def _claim(env: Env, tx: Exchange, op: Op) -> Op:
    """Reserve the op's new address against parallel picks until the commit is done."""
    env.pending_in(op.subnet_id).add(op.ip)  # type: ignore[arg-type]  # a claim has its address
    tx.op = op
    return op


# ---------------------------------------------------------------------- allocate, per message


def _discover(tx: Exchange, env: Env) -> Decision:
    subnet = tx.subnet
    assert subnet is not None
    if subnet.shared:
        subnet = settle(tx, env)  # the member where the client already has an address
    cache = env.cache
    _lapse_holds(env)
    _ask_lease_time(tx, subnet)  # the Offer's 51/58/59
    lease = cache.client(subnet.id, tx.client_key)
    res = tx.reservation
    if (res is not None and (lease is None or lease.ip != res.ip)
            and subnet.contains(res.ip) and _free(env, tx, subnet, res.ip)):
        return _offer(tx, env, res.ip)  # the Ack ends the client's other lease, if any
    # A reserved address still held by a lease from before the reservation: serve the
    # client dynamically meanwhile.
    if lease is not None and _allowed(tx, subnet, lease.ip):
        return _reply(tx, env, OFFER, lease.ip)
    hold = cache.holds.client(subnet.id, tx.client_key)
    if (hold is not None and _allowed(tx, subnet, hold.ip) and (res is None or res.ip == hold.ip)
            and _free(env, tx, subnet, hold.ip)):
        return _offer_fresh(tx, env, hold.ip)  # a retransmitted Discover: the same address
    wanted = _requested(tx)
    if (wanted is not None and _allowed(tx, subnet, wanted)
            and _free(env, tx, subnet, wanted) and (res is None or res.ip == wanted)):
        ip: int | None = wanted
    else:
        ip = env.picker.pick(subnet, tx.classes, cache.ips(subnet.id), env.pending_in(subnet.id),
                             cache.holds.ips(subnet.id))
        if ip is None and subnet.shared:
            beyond = pick_beyond(tx, env)  # the other members' pools, in the group's order
            if beyond is not None:
                subnet, ip = beyond
                _ask_lease_time(tx, subnet)  # the Offer's 51/58/59 are that member's
    if ip is None:
        return "no_address"
    return _offer_fresh(tx, env, ip)


def _grant(tx: Exchange, env: Env, ip: int, seconds: int, superseding: bool) -> Op:
    """The Ack of an address with no lease yet: insert it, the unique indexes judge."""
    return _claim(env, tx, _op(tx, OpKind.INSERT, ip, seconds, supersede=superseding))


def _request(tx: Exchange, env: Env) -> Decision:
    subnet = tx.subnet
    assert subnet is not None
    msg = tx.msg
    wanted = _requested(tx)
    selecting = SERVER_ID in msg.options
    if selecting or (wanted is not None and not msg.ciaddr):
        if wanted is None:
            return "bad_request"  # SELECTING without option 50
        ip = wanted  # SELECTING or INIT-REBOOT
    elif msg.ciaddr:
        ip = msg.ciaddr  # RENEWING (unicast) or REBINDING (broadcast)
    else:
        return "bad_request"
    if subnet.shared and not subnet.contains(ip):
        subnet = move_to(tx, env, ip)  # an address of another member of the group
    if not subnet.contains(ip):
        return _reply(tx, env, NAK, message="requested address is not on this network")
    seconds = _ask_lease_time(tx, subnet)
    cache = env.cache
    lease = cache.client(subnet.id, tx.client_key)
    if lease is not None and lease.ip == ip:
        if not _allowed(tx, subnet, ip):
            return _reply(tx, env, NAK, message="address no longer available to this client")
        tx.op = _op(tx, OpKind.ACK, ip, seconds)
        return tx.op
    if selecting:
        hold = cache.holds.client(subnet.id, tx.client_key)
        if hold is not None and hold.ip == ip:
            # Our Offer (a reserved address replaces the client's older lease at the Ack).
            if ip in env.pending_in(subnet.id):
                return "client_busy"  # only this client may claim it: its grant is in flight
            if _allowed(tx, subnet, ip) and _free(env, tx, subnet, ip):
                return _grant(tx, env, ip, seconds, superseding=lease is not None)
            cache.holds.drop(subnet.id, tx.client_key)
            return _reply(tx, env, NAK, message="requested address is not available")
    if lease is not None:
        return _reply(tx, env, NAK, message="requested address is not this client's lease")
    if selecting:
        # Our Offer lapsed (or another node made it): grant the address if still free.
        if _allowed(tx, subnet, ip) and _free(env, tx, subnet, ip):
            return _grant(tx, env, ip, seconds, superseding=False)
        return _reply(tx, env, NAK, message="requested address is not available")
    # INIT-REBOOT / RENEWING / REBINDING with no lease known here: the database decides
    # (another node may hold it); nothing found means never acknowledged -> NAK.
    if cache.at(subnet.id, ip) is not None:
        return _reply(tx, env, NAK, message="requested address belongs to another client")
    tx.op = _op(tx, OpKind.ACK, ip, seconds)
    return tx.op


def _decline(tx: Exchange, env: Env) -> Decision:
    ip = _requested(tx)
    if ip is None:
        return "bad_request"
    subnet = tx.subnet
    assert subnet is not None
    if subnet.shared and not subnet.contains(ip):
        subnet = move_to(tx, env, ip)
    probation = env.config.decline_probation_seconds
    hold = env.cache.holds.client(subnet.id, tx.client_key)
    lease = env.cache.client(subnet.id, tx.client_key)
    if hold is not None and hold.ip == ip and (lease is None or lease.ip != ip):
        # Declined before any Ack (it has no row): the address is quarantined all the same.
        env.cache.holds.drop(subnet.id, tx.client_key)
        if not _free(env, tx, subnet, ip):
            return "unknown_lease"
        return _claim(env, tx, _op(tx, OpKind.INSERT, ip, probation, state="declined"))
    tx.op = _op(tx, OpKind.DECLINE, ip, probation)
    return tx.op


def _release(tx: Exchange, env: Env) -> Decision:
    if not tx.msg.ciaddr:
        return "bad_request"
    subnet = tx.subnet
    assert subnet is not None
    if subnet.shared and not subnet.contains(tx.msg.ciaddr):
        subnet = move_to(tx, env, tx.msg.ciaddr)
    subnet_id = subnet.id
    hold = env.cache.holds.client(subnet_id, tx.client_key)
    if hold is not None and hold.ip == tx.msg.ciaddr:
        env.cache.holds.drop(hold.subnet_id, hold.client_key)  # never acknowledged
    tx.op = _op(tx, OpKind.RELEASE, tx.msg.ciaddr, 0)
    return tx.op


def _inform(tx: Exchange, env: Env) -> Decision:
    ciaddr = tx.msg.ciaddr
    if not ciaddr and not tx.msg.giaddr:
        return "bad_request"
    subnet = tx.subnet
    if subnet is not None and subnet.shared and ciaddr and not subnet.contains(ciaddr):
        move_to(tx, env, ciaddr)  # the options of the member the client's address is in
    return _reply(tx, env, ACK)


ALLOCATE: dict[int, Callable[[Exchange, Env], Decision]] = {
    DISCOVER: _discover, REQUEST: _request, DECLINE: _decline, RELEASE: _release,
    INFORM: _inform,
}


def decide(tx: Exchange, env: Env) -> Decision:
    """Run the stages for a fresh packet."""
    reason = accept(tx, env)
    if reason is None:
        reason = select_subnet(tx, env)
    if reason is not None:
        return reason
    identify(tx, env)
    classify(tx, env)
    return ALLOCATE[tx.mtype](tx, env)


# ---------------------------------------------------------------------- after the commit


def release_claim(tx: Exchange, env: Env) -> None:
    """Give back the address picked for the op (committed or not, it is no longer pending)."""
    op = tx.op
    if op is not None and op.kind == OpKind.INSERT:
        env.pending_in(op.subnet_id).discard(op.ip)


def finish(tx: Exchange, env: Env) -> Decision:
    op = tx.op
    assert op is not None and tx.subnet is not None
    release_claim(tx, env)
    cache = env.cache
    if op.superseded is not None:
        cache.drop(op.superseded[0])
        env.picker.freed(op.subnet_id)
        if op.superseded[1]:
            env.counters.leases["released"] += 1
    kind = op.kind
    if op.ok:
        if op.event is not None:
            env.counters.leases[op.event] += 1
        if kind == OpKind.RELEASE:
            cache.drop(op.lease_id)  # type: ignore[arg-type]  # a committed op has its lease id
            stale = cache.client(op.subnet_id, op.client_key)
            if stale is not None and stale.ip == op.ip:
                cache.drop(stale.lease_id)
            env.picker.freed(op.subnet_id)
            if env.ping is not None and tx.subnet.ping_timeout:
                env.ping.seen(op.subnet_id, op.ip, time.time())  # type: ignore[arg-type]  # committed: ip set
            return None
        if kind == OpKind.INSERT:
            cache.holds.drop(op.subnet_id, op.client_key)  # a lease now, or quarantined
        state = "declined" if kind == OpKind.DECLINE else op.state
        cache.put(Lease(op.lease_id, op.subnet_id, op.ip, state,  # type: ignore[arg-type]  # committed: id and ip set
                        op.client_key, op.expires))
        if state == "declined":
            return _pick_again(tx, env) if tx.mtype == DISCOVER else None  # a ping conflict
        return _reply(tx, env, ACK, op.ip)  # type: ignore[arg-type]  # committed: ip set
    # Refused or not found: bring the cache in line with the database, then decide again.
    if op.refreshed:
        env.counters.conflicts += 1
    for lease_id, subnet_id, ip, state, key, expires in op.refreshed:
        cache.put(Lease(lease_id, subnet_id, ip, state, key, expires))
    if kind in (OpKind.RELEASE, OpKind.DECLINE, OpKind.ACK) and not op.refreshed:
        # The database has no live lease of this client there: forget ours if we had one.
        stale = cache.client(op.subnet_id, op.client_key)
        if stale is not None and stale.ip == op.ip:
            cache.drop(stale.lease_id)
    if op.state == "declined" and tx.mtype == DISCOVER:
        return _pick_again(tx, env)  # the ping conflict's address has a lease already
    if kind in (OpKind.RELEASE, OpKind.DECLINE) or op.state == "declined":
        return "unknown_lease"
    if kind == OpKind.ACK:
        return _reply(tx, env, NAK, message="no lease for this client at that address")
    # A refused grant: the address (or this client) has a lease this node did not know of.
    # The hold goes; deciding again with the refreshed view NAKs, or renews the lease
    # another node granted this very client there.
    cache.holds.drop(op.subnet_id, op.client_key)
    return _pick_again(tx, env)
