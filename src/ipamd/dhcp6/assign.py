"""Which address or delegated prefix a client's IA gets, and its bindings extended (RFC 8415 §18.3).

Which address: the client's reservation; else the address it holds for that IA; else its
hint if in a pool; else pools probed at positions hashed from (DUID, IAID, attempt), so a
Solicit and the Request after it land on the same address without holding it in between,
and a /64 pool is never enumerated (small pools are scanned whole when probing finds
nothing). Prefixes alike, from delegation pools. Excluded addresses and those reserved
for another DUID are never picked; a client's classes' pools are probed first.

Renew and Rebind extend what the IA holds on the link (``extend_na``, ``extend_pd``); an IA
this server never bound gets NoBinding; on Rebind, what is not on the link comes back with
lifetimes 0 (§18.3.4, §18.3.5).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from ipaddress import IPv6Address, IPv6Network
from typing import TypeVar

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.decision import ChangeKind, Tx
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import IaAddress, IaNa, IaPd, IaPrefix, Option, StatusCode
from ipamd.dhcp6.plan import Binding, IaType

MAX_PROBES = 64  # hashed positions tried per pool before giving up on it (or scanning it)
SCAN_LIMIT = 4096  # pools (or delegation pools) this small are scanned whole after probing
MAX_RETIRED = 8  # addresses/prefixes per IA handed back with lifetimes 0 in one reply
T = TypeVar("T")


def assign_all(tx: Tx) -> list[Option]:
    body: list[Option] = [_assign_na(tx, ia) for ia in tx.asked.ia_nas]
    body += [_assign_pd(tx, ia) for ia in tx.asked.ia_pds]
    return body


def _assign_na(tx: Tx, ia: IaNa) -> IaNa:
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


def _assign_pd(tx: Tx, ia: IaPd) -> IaPd:
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


def _pick_address(tx: Tx, ia: IaNa, bound: Sequence[Binding]) -> IPv6Address | None:
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


def _pick_prefix(tx: Tx, ia: IaPd, bound: Sequence[Binding]) -> IPv6Network | None:
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


def _probe(tx: Tx, iaid: int, size: int, nth: Callable[[int], T],
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


def _mine(tx: Tx, iaid: int, ia_type: IaType, holder: Binding) -> bool:
    return (holder.duid == tx.duid and holder.iaid == iaid and holder.ia_type == ia_type
            and holder.state == "active")


def _free(tx: Tx, iaid: int, ia_type: IaType, address: IPv6Address, length: int) -> bool:
    """Nobody else holds it (and this reply has not given it to another IA)."""
    if (int(address), length) in tx.taken:
        return False
    holder = tx.bindings.holder(address, length, tx.now)
    return holder is None or _mine(tx, iaid, ia_type, holder)


def _assignable(tx: Tx, iaid: int, address: IPv6Address) -> bool:
    link = tx.link
    return (not link.excluded(address) and not link.reserved_for_another(address, tx.duid)
            and not link.kept_from(address, tx.classes)
            and _free(tx, iaid, IaType.NA, address, 128))


def _prefix_free(tx: Tx, iaid: int, prefix: IPv6Network) -> bool:
    return _free(tx, iaid, IaType.PD, prefix.network_address, prefix.prefixlen)


def _prefix_assignable(tx: Tx, iaid: int, prefix: IPv6Network) -> bool:
    return (not tx.link.prefix_excluded(prefix)
            and not tx.link.prefix_reserved_for_another(prefix, tx.duid)
            and _prefix_free(tx, iaid, prefix))


# --------------------------------------------------------------------------- extending


def extend_na(tx: Tx, ia: IaNa, *, rebind: bool) -> IaNa:
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


def extend_pd(tx: Tx, ia: IaPd, *, rebind: bool) -> IaPd:
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
