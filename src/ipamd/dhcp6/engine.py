"""The DHCPv6 decision, free of sockets and SQL (RFC 8415 §18.3): what to answer, what to commit.

``decide(message, link, bindings, server_duid, now)`` takes a client's message (already
unwrapped from its relays, ``relay.unwrap``), the link its relay named (``Plan6.link_for``),
what the lease store knows (:class:`~ipamd.dhcp6.plan.Bindings`) and returns a
:class:`Decision`: the reply, the lease changes that must be committed *before* it is sent
(a Reply that grants, renews, releases or declines goes out only after its commit, as in
DHCPv4: a kill -9 loses no acknowledged binding), or a drop reason.

Per message type:

* Solicit → Advertise with the addresses/prefixes a Request would get; nothing written.
  With Rapid Commit (client asks, link allows; §18.3.1) → Reply, changes to commit.
* Request → Reply; each IA gets its address/prefix (GRANT, or RENEW when it is the one the
  client holds), or the IA's status NoAddrsAvail / NoPrefixAvail (§18.3.2).
* Renew, Rebind → Reply extending the IA's bindings (RENEW); an IA this server never bound
  gets NoBinding (the spec's rule 1: this server is authoritative, it does not make up a
  binding on Renew); on Rebind, addresses not on the link come back with lifetimes 0
  (§18.3.4, §18.3.5). Addresses the client lists but does not hold come back with
  lifetimes 0, so it stops using them.
* Release, Decline → Reply with Success; each bound address listed is RELEASEd/DECLINEd;
  IAs with nothing bound come back with NoBinding (§18.3.7, §18.3.8).
* Confirm → Success if every address is on the link, NotOnLink if not; nothing to check
  (no addresses, no link) → no answer (§18.3.3).
* Information-request → Reply with the options asked for (§18.3.6).

Which address: the client's reservation; else the address it holds for that IA; else its
hint if in a pool; else pools probed at positions hashed from (DUID, IAID, attempt), so a
Solicit and the Request after it land on the same address without holding it in between,
and a /64 pool is never enumerated (small pools are scanned whole when probing finds
nothing). Prefixes alike, from delegation pools. Excluded addresses and those reserved
for another DUID are never picked.

Options: those the client asks for in its Option Request (§21.7) that its link carries,
in the client's order. Client classes (``classify``) open the pools kept for them: a
client's classes' pools are probed first, then those without a class; an address in a
pool kept for a class the client lacks is never its (a held one is not given again).
The Client FQDN option (39, RFC 4704): on a link whose subnet performs DNS updates, the
client's name (in the subnet's zone) goes with its addresses' changes (the lease's fqdn:
its events carry it to the DDNS path, AAAA + ip6.arpa PTR + DHCID from the DUID), and the
reply's option 39 says what the server will do. Not yet here (issue 49 lists them): IA_TA,
Reconfigure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from ipaddress import IPv6Address, IPv6Network
from typing import TypeVar

from ipamd.core import dnsname, dnswire
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.classify import NO_CLASSES
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import (
    ClientFqdn,
    ClientId,
    IaAddress,
    IaNa,
    IaPd,
    IaPrefix,
    Option,
    RapidCommit,
    RawOption,
    ServerId,
    StatusCode,
)
from ipamd.dhcp6.plan import Binding, Bindings, IaType, Link
from ipamd.dhcp6.validate import DROP_REASONS as VALIDATION_DROPS
from ipamd.dhcp6.validate import validate

MAX_PROBES = 64  # hashed positions tried per pool before giving up on it (or scanning it)
SCAN_LIMIT = 4096  # pools (or delegation pools) this small are scanned whole after probing
MAX_IAS = 16  # IA_NA plus IA_PD per message: clients send one or two; more is an attack
MAX_RETIRED = 8  # addresses/prefixes per IA handed back with lifetimes 0 in one reply
T = TypeVar("T")

DROP_REASONS = VALIDATION_DROPS | {
    "no_link",  # the relay's link-address (or the interface) names no IPv6 subnet
    "nothing_to_confirm",  # a Confirm without addresses (§18.3.3: no reply)
    "too_many_ias",  # more than MAX_IAS IA options: one message would take a pool's worth
    "duplicate_iaid",  # two IAs of one type with one IAID (RFC 8415 §12: unique per type)
}


class ChangeKind(Enum):
    GRANT = "grant"  # a new binding (the lease store inserts it)
    RENEW = "renew"  # the client's binding, lifetimes extended
    RELEASE = "release"
    DECLINE = "decline"  # probation before the address is handed out again


@dataclass(frozen=True, slots=True)
class LeaseChange:
    """One binding's change for the lease store; ``prefix_length`` is 128 for an address."""

    kind: ChangeKind
    ia_type: IaType
    duid: Duid
    iaid: int
    address: IPv6Address
    prefix_length: int
    subnet_id: str
    preferred: int = 0
    valid: int = 0
    fqdn: str | None = None  # the name registered in DNS for this address (RFC 4704)


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one message: a drop, or a reply sent after ``changes`` commit."""

    reply: Message | None = None
    changes: tuple[LeaseChange, ...] = ()
    drop: str | None = None


@dataclass(slots=True)
class _Tx:
    """One message's way through the decision."""

    message: Message
    duid: Duid
    link: Link
    bindings: Bindings
    server_duid: Duid
    now: float
    classes: frozenset[str] = NO_CLASSES  # the client's classes (dhcp6.classify)
    fqdn: str | None = None  # the name this server registers for the client's addresses
    commit: bool = True
    taken: set[tuple[int, int]] = field(default_factory=set)  # picked in this reply
    changes: list[LeaseChange] = field(default_factory=list)

    def change(self, kind: ChangeKind, ia_type: IaType, iaid: int, address: IPv6Address,
               length: int, live: bool = True) -> None:
        lifetimes = self.link.lifetimes
        preferred, valid = (lifetimes.preferred, lifetimes.valid) if live else (0, 0)
        # Only addresses get a name (AAAA + PTR); a delegated prefix is a router's.
        name = self.fqdn if live and ia_type is IaType.NA else None
        self.changes.append(LeaseChange(kind, ia_type, self.duid, iaid, address, length,
                                        self.link.subnet_id, preferred, valid, name))


def decide(message: Message, link: Link | None, bindings: Bindings, server_duid: Duid,
           now: float, classes: frozenset[str] = NO_CLASSES) -> Decision:
    """The answer to one client message (see the module docstring); ``classes`` are the
    client classes it matched (``classify.classify``): pools kept for other classes are
    not its to use."""
    reason = validate(message, server_duid)
    if reason is not None:
        return Decision(drop=reason)
    if message.msg_type == p.INFORMATION_REQUEST:
        return _information_request(message, link, server_duid)
    duid = message.client_duid
    if link is None or duid is None:  # validate() saw to the Client Identifier
        return Decision(drop="no_link")
    ia_nas, ia_pds = message.ia_nas, message.ia_pds
    if len(ia_nas) + len(ia_pds) > MAX_IAS:
        return Decision(drop="too_many_ias")
    if _repeats(ia.iaid for ia in ia_nas) or _repeats(ia.iaid for ia in ia_pds):
        return Decision(drop="duplicate_iaid")
    tx = _Tx(message, duid, link, bindings, server_duid, now, classes)
    tx.fqdn = _registered_name(message, link)
    return _HANDLERS[message.msg_type](tx)


def _registered_name(message: Message, link: Link) -> str | None:
    """The name this server registers for the client (no trailing dot), from its Client
    FQDN option (39) in the link's zone (a partial name or one outside the zone becomes
    its first label in the zone, as for DHCPv4's option 81); None: no DNS update."""
    asked = message.first(ClientFqdn)
    if asked is None or link.ddns_zone is None or asked.flags & p.FQDN_N:
        return None  # RFC 4704 §6: N=1 asks the server to perform no updates; honoured
    return dnsname.ddns_fqdn(None, asked.name, link.ddns_zone)


def fqdn_flags(client_flags: int, updates: bool) -> int:
    """Our option 39's flags, what this server will do (RFC 4704 §4.1, §6): S=1 when it
    updates the AAAA (and PTR) records; N=1 when it performs no update (then S=0); O=1
    exactly when our S differs from the client's."""
    flags = p.FQDN_S if updates else p.FQDN_N
    if (flags ^ client_flags) & p.FQDN_S:
        flags |= p.FQDN_O
    return flags


def _fqdn_answer(tx: _Tx) -> list[Option]:
    """RFC 4704 §6: the option goes back only when the client sent it and asked for it in
    its Option Request; its name is the one registered (else the client's, echoed)."""
    asked = tx.message.first(ClientFqdn)
    if asked is None or p.OPTION_CLIENT_FQDN not in tx.message.requested_codes:
        return []
    if tx.fqdn is None:
        return [ClientFqdn(fqdn_flags(asked.flags, False), asked.labels, asked.absolute)]
    return [ClientFqdn(fqdn_flags(asked.flags, True), dnswire.labels_of(tx.fqdn), True)]


def _repeats(iaids: Iterable[int]) -> bool:
    seen: set[int] = set()
    for iaid in iaids:
        if iaid in seen:
            return True
        seen.add(iaid)
    return False


# --------------------------------------------------------------------------- messages


def _solicit(tx: _Tx) -> Decision:
    tx.commit = tx.message.rapid_commit and tx.link.rapid_commit
    body: list[Option] = [RapidCommit()] if tx.commit else []
    body += _assign_all(tx)
    if not tx.commit:
        return Decision(_reply(tx, p.ADVERTISE, body))
    return Decision(_reply(tx, p.REPLY, body), tuple(tx.changes))


def _request(tx: _Tx) -> Decision:
    return Decision(_reply(tx, p.REPLY, _assign_all(tx)), tuple(tx.changes))


def _renew(tx: _Tx) -> Decision:
    body: list[Option] = [_extend_na(tx, ia, rebind=False) for ia in tx.message.ia_nas]
    body += [_extend_pd(tx, ia, rebind=False) for ia in tx.message.ia_pds]
    return Decision(_reply(tx, p.REPLY, body), tuple(tx.changes))


def _rebind(tx: _Tx) -> Decision:
    body: list[Option] = [_extend_na(tx, ia, rebind=True) for ia in tx.message.ia_nas]
    body += [_extend_pd(tx, ia, rebind=True) for ia in tx.message.ia_pds]
    return Decision(_reply(tx, p.REPLY, body), tuple(tx.changes))


def _release(tx: _Tx) -> Decision:
    return _end(tx, ChangeKind.RELEASE, with_prefixes=True)


def _decline(tx: _Tx) -> Decision:
    # §18.3.8: Decline is about addresses found in use on the link; IA_PDs are not declined.
    return _end(tx, ChangeKind.DECLINE, with_prefixes=False)


def _confirm(tx: _Tx) -> Decision:
    addresses = [a.address for ia in tx.message.ia_nas for a in ia.addresses]
    if not addresses:
        return Decision(drop="nothing_to_confirm")
    on_link = all(address in tx.link.network for address in addresses)
    status = StatusCode(p.STATUS_SUCCESS, "all addresses on link") if on_link else \
        StatusCode(p.STATUS_NOT_ON_LINK, "not on this link")
    return Decision(_reply(tx, p.REPLY, [status], with_options=False))


def _information_request(message: Message, link: Link | None, server_duid: Duid) -> Decision:
    body: list[Option] = [ServerId(server_duid)]
    if message.client_duid is not None:
        body.append(ClientId(message.client_duid))
    body += _requested(message, link)
    return Decision(Message(p.REPLY, message.transaction_id, body))


_HANDLERS: dict[int, Callable[[_Tx], Decision]] = {
    p.SOLICIT: _solicit,
    p.REQUEST: _request,
    p.RENEW: _renew,
    p.REBIND: _rebind,
    p.RELEASE: _release,
    p.DECLINE: _decline,
    p.CONFIRM: _confirm,
}


def _reply(tx: _Tx, msg_type: int, body: list[Option], with_options: bool = True) -> Message:
    options: list[Option] = [ServerId(tx.server_duid), ClientId(tx.duid), *body]
    if with_options:
        options += _fqdn_answer(tx)
        options += _requested(tx.message, tx.link)
    return Message(msg_type, tx.message.transaction_id, options)


def _requested(message: Message, link: Link | None) -> list[Option]:
    """The link's options the client asked for, in its order (RFC 8415 §21.7)."""
    if link is None:
        return []
    out: list[Option] = []
    seen: set[int] = set()
    for code in message.requested_codes:
        data = link.options.get(code)
        if data is not None and code not in seen:
            seen.add(code)
            out.append(RawOption(code, data))
    return out


# --------------------------------------------------------------------------- assigning


def _assign_all(tx: _Tx) -> list[Option]:
    body: list[Option] = [_assign_na(tx, ia) for ia in tx.message.ia_nas]
    body += [_assign_pd(tx, ia) for ia in tx.message.ia_pds]
    return body


def _assign_na(tx: _Tx, ia: IaNa) -> IaNa:
    bound = tx.bindings.of(tx.duid, ia.iaid, IaType.NA, tx.now)
    address = _pick_address(tx, ia, bound)
    if address is None:
        return IaNa(ia.iaid, 0, 0, (StatusCode(p.STATUS_NO_ADDRS_AVAIL, "no addresses available"),))
    tx.taken.add((int(address), 128))
    lifetimes = tx.link.lifetimes
    held = {b.address for b in bound}
    if tx.commit:
        kind = ChangeKind.RENEW if address in held else ChangeKind.GRANT
        tx.change(kind, IaType.NA, ia.iaid, address, 128)
    t1, t2 = lifetimes.timers()
    given: list[Option] = [IaAddress(address, lifetimes.preferred, lifetimes.valid)]
    if tx.commit:  # what else the client listed or held is not its to use (lifetimes 0)
        others = {a.address for a in ia.addresses} | held
        retired = sorted(others - {address})[:MAX_RETIRED]
        given += [IaAddress(other, 0, 0) for other in retired]
    return IaNa(ia.iaid, t1, t2, tuple(given))


def _assign_pd(tx: _Tx, ia: IaPd) -> IaPd:
    bound = tx.bindings.of(tx.duid, ia.iaid, IaType.PD, tx.now)
    prefix = _pick_prefix(tx, ia, bound)
    if prefix is None:
        return IaPd(ia.iaid, 0, 0, (StatusCode(p.STATUS_NO_PREFIX_AVAIL, "no prefixes available"),))
    tx.taken.add((int(prefix.network_address), prefix.prefixlen))
    lifetimes = tx.link.lifetimes
    held = {b.prefix for b in bound}
    if tx.commit:
        kind = ChangeKind.RENEW if prefix in held else ChangeKind.GRANT
        tx.change(kind, IaType.PD, ia.iaid, prefix.network_address, prefix.prefixlen)
    t1, t2 = lifetimes.timers()
    given: list[Option] = [IaPrefix(lifetimes.preferred, lifetimes.valid, prefix.prefixlen,
                                    prefix.network_address)]
    if tx.commit:
        given += [IaPrefix(0, 0, old.prefixlen, old.network_address)
                  for old in sorted(held - {prefix})[:MAX_RETIRED]]
    return IaPd(ia.iaid, t1, t2, tuple(given))


def _pick_address(tx: _Tx, ia: IaNa, bound: Sequence[Binding]) -> IPv6Address | None:
    link, duid = tx.link, tx.duid
    reservation = link.reservation(duid)
    if reservation is not None and reservation.address is not None \
            and _free(tx, ia.iaid, IaType.NA, reservation.address, 128):
        return reservation.address
    for binding in bound:
        if binding.address in link.network and _assignable(tx, ia.iaid, binding.address):
            return binding.address
    for hint in ia.addresses:
        if link.in_pool(hint.address, tx.classes) and _assignable(tx, ia.iaid, hint.address):
            return hint.address
    for pool in link.pools_for(tx.classes):
        found = _probe(tx, ia.iaid, pool.size, pool.nth,
                       lambda a: _assignable(tx, ia.iaid, a))
        if found is not None:
            return found
    return None


def _pick_prefix(tx: _Tx, ia: IaPd, bound: Sequence[Binding]) -> IPv6Network | None:
    link, duid = tx.link, tx.duid
    reservation = link.reservation(duid)
    if reservation is not None and reservation.prefix is not None \
            and _prefix_free(tx, ia.iaid, reservation.prefix):
        return reservation.prefix
    for binding in bound:
        if link.pd_pool_of(binding.prefix) and _prefix_assignable(tx, ia.iaid, binding.prefix):
            return binding.prefix
    for hint in ia.prefixes:
        if int(hint.prefix) and link.pd_pool_of(hint.network) \
                and _prefix_assignable(tx, ia.iaid, hint.network):
            return hint.network
    for pool in link.pd_pools:
        found = _probe(tx, ia.iaid, pool.count, pool.nth,
                       lambda n: _prefix_assignable(tx, ia.iaid, n))
        if found is not None:
            return found
    return None


def _probe(tx: _Tx, iaid: int, size: int, nth: Callable[[int], T],
           ok: Callable[[T], bool]) -> T | None:
    for attempt in range(MAX_PROBES):
        candidate = nth(_position(tx.duid, iaid, attempt) % size)
        if ok(candidate):
            return candidate
    if size <= SCAN_LIMIT:
        for index in range(size):
            candidate = nth(index)
            if ok(candidate):
                return candidate
    return None


def _position(duid: Duid, iaid: int, attempt: int) -> int:
    """A stable pseudo-random position for this client's IA (the same in every process:
    Python's ``hash`` is salted per process, BLAKE2 is not)."""
    key = duid.raw + iaid.to_bytes(4, "big") + attempt.to_bytes(2, "big")
    return int.from_bytes(hashlib.blake2b(key, digest_size=16).digest(), "big")


def _mine(tx: _Tx, iaid: int, ia_type: IaType, holder: Binding) -> bool:
    return (holder.duid == tx.duid and holder.iaid == iaid and holder.ia_type == ia_type
            and holder.state == "active")


def _free(tx: _Tx, iaid: int, ia_type: IaType, address: IPv6Address, length: int) -> bool:
    """Nobody else holds it (and this reply has not given it to another IA)."""
    if (int(address), length) in tx.taken:
        return False
    holder = tx.bindings.holder(address, length, tx.now)
    return holder is None or _mine(tx, iaid, ia_type, holder)


def _assignable(tx: _Tx, iaid: int, address: IPv6Address) -> bool:
    link = tx.link
    return (not link.excluded(address) and not link.reserved_for_another(address, tx.duid)
            and not link.kept_from(address, tx.classes)
            and _free(tx, iaid, IaType.NA, address, 128))


def _prefix_free(tx: _Tx, iaid: int, prefix: IPv6Network) -> bool:
    return _free(tx, iaid, IaType.PD, prefix.network_address, prefix.prefixlen)


def _prefix_assignable(tx: _Tx, iaid: int, prefix: IPv6Network) -> bool:
    return (not tx.link.prefix_excluded(prefix)
            and not tx.link.prefix_reserved_for_another(prefix, tx.duid)
            and _prefix_free(tx, iaid, prefix))


# --------------------------------------------------------------------------- extending, ending


def _extend_na(tx: _Tx, ia: IaNa, *, rebind: bool) -> IaNa:
    network = tx.link.network
    bound = [b for b in tx.bindings.of(tx.duid, ia.iaid, IaType.NA, tx.now)
             if b.address in network]
    listed = [a.address for a in ia.addresses]
    if not bound:
        if rebind and listed and not any(a in network for a in listed):
            return IaNa(ia.iaid, 0, 0, tuple(IaAddress(a, 0, 0) for a in listed[:MAX_RETIRED]))
        return IaNa(ia.iaid, 0, 0, (StatusCode(p.STATUS_NO_BINDING, "no binding for this IA"),))
    lifetimes = tx.link.lifetimes
    given: list[Option] = []
    for binding in bound:
        tx.change(ChangeKind.RENEW, IaType.NA, ia.iaid, binding.address, 128)
        given.append(IaAddress(binding.address, lifetimes.preferred, lifetimes.valid))
    held = {b.address for b in bound}
    given += [IaAddress(a, 0, 0) for a in listed if a not in held][:MAX_RETIRED]
    t1, t2 = lifetimes.timers()
    return IaNa(ia.iaid, t1, t2, tuple(given))


def _extend_pd(tx: _Tx, ia: IaPd, *, rebind: bool) -> IaPd:
    link = tx.link
    reserved = link.reservation(tx.duid)
    bound = [b for b in tx.bindings.of(tx.duid, ia.iaid, IaType.PD, tx.now)
             if link.pd_pool_of(b.prefix) or (reserved is not None and reserved.prefix == b.prefix)]
    listed = [hint.network for hint in ia.prefixes if int(hint.prefix)]
    if not bound:
        if rebind and listed and not any(link.pd_pool_of(n) for n in listed):
            return IaPd(ia.iaid, 0, 0, tuple(IaPrefix(0, 0, n.prefixlen, n.network_address)
                                             for n in listed[:MAX_RETIRED]))
        return IaPd(ia.iaid, 0, 0, (StatusCode(p.STATUS_NO_BINDING, "no binding for this IA"),))
    lifetimes = tx.link.lifetimes
    given: list[Option] = []
    for binding in bound:
        tx.change(ChangeKind.RENEW, IaType.PD, ia.iaid, binding.address, binding.prefix_length)
        given.append(IaPrefix(lifetimes.preferred, lifetimes.valid, binding.prefix_length,
                              binding.address))
    held = {b.prefix for b in bound}
    given += [IaPrefix(0, 0, n.prefixlen, n.network_address)
              for n in listed if n not in held][:MAX_RETIRED]
    t1, t2 = lifetimes.timers()
    return IaPd(ia.iaid, t1, t2, tuple(given))


def _end(tx: _Tx, kind: ChangeKind, *, with_prefixes: bool) -> Decision:
    """Release or Decline: end each listed binding of the client; NoBinding per IA that has
    none of them; Success on the whole (§18.3.7, §18.3.8)."""
    body: list[Option] = []
    for ia in tx.message.ia_nas:
        held = {b.address for b in tx.bindings.of(tx.duid, ia.iaid, IaType.NA, tx.now)}
        ending = [a.address for a in ia.addresses if a.address in held]
        for address in dict.fromkeys(ending):
            tx.change(kind, IaType.NA, ia.iaid, address, 128, live=False)
        if not ending:
            body.append(IaNa(ia.iaid, 0, 0, (StatusCode(p.STATUS_NO_BINDING, "no binding"),)))
    for pd in tx.message.ia_pds if with_prefixes else ():
        owned = {b.prefix for b in tx.bindings.of(tx.duid, pd.iaid, IaType.PD, tx.now)}
        prefixes = [n.network for n in pd.prefixes if n.network in owned]
        for prefix in dict.fromkeys(prefixes):
            tx.change(kind, IaType.PD, pd.iaid, prefix.network_address, prefix.prefixlen,
                      live=False)
        if not prefixes:
            body.append(IaPd(pd.iaid, 0, 0, (StatusCode(p.STATUS_NO_BINDING, "no binding"),)))
    done = "released" if kind is ChangeKind.RELEASE else "declined"
    body.insert(0, StatusCode(p.STATUS_SUCCESS, done))
    return Decision(_reply(tx, p.REPLY, body, with_options=False), tuple(tx.changes))

