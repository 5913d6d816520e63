"""The address plan as the DHCPv6 decision reads it: links, pools, delegation pools, reservations.

In memory and pure, like DHCPv4's ``dhcp.plan``; ``dhcp6.plan_loader`` builds it from the
database. Nothing here enumerates an IPv6 pool: a pool is a
range (first, last) and a delegation pool a prefix cut into ``delegated_length`` pieces;
the n-th member is computed (``nth``), so a /64 costs what a /120 costs.

What the decision also needs — which client holds what — is the lease store's, reached
through the :class:`Bindings` protocol (``engine`` takes one; the server's lease cache
will be one, tests use a dict).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from ipaddress import IPv6Address, IPv6Network
from typing import Protocol

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.classify import NO_CLASSES, ClientClass6
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import RawOption

_LINK_CACHE_MAX = 4096  # link_for's remembered answers per plan
_ANSWERS_MAX = 256  # Option Requests remembered per link


class IaType(IntEnum):
    """What a binding is for; the values are the IA options' codes."""

    NA = p.OPTION_IA_NA
    PD = p.OPTION_IA_PD


@dataclass(frozen=True, slots=True)
class Pool6:
    """Addresses ``first``..``last`` (inclusive) handed out from a link."""

    first: IPv6Address
    last: IPv6Address
    class_id: str | None = None  # only clients of this class (dhcp6.classify) get these
    # The bounds as integers: every probe asks ``in``, and IPv6Address's comparisons are
    # Python code (functools.total_ordering).
    _low: int = field(init=False, repr=False, compare=False)
    _high: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.last < self.first:
            raise ValueError(f"pool {self.first}-{self.last} ends before it starts")
        object.__setattr__(self, "_low", int(self.first))  # frozen: set once, here
        object.__setattr__(self, "_high", int(self.last))

    @property
    def size(self) -> int:
        return self._high - self._low + 1

    def nth(self, index: int) -> IPv6Address:
        return IPv6Address(self._low + index)

    def __contains__(self, address: object) -> bool:
        return isinstance(address, IPv6Address) and self._low <= int(address) <= self._high


@dataclass(frozen=True, slots=True)
class PdPool:
    """A prefix delegated in pieces of ``delegated_length`` (a /48 in /56s: 256 of them)."""

    prefix: IPv6Network
    delegated_length: int

    def __post_init__(self) -> None:
        if not self.prefix.prefixlen <= self.delegated_length <= 128:
            raise ValueError(f"cannot delegate /{self.delegated_length} from {self.prefix}")

    @property
    def count(self) -> int:
        return 1 << (self.delegated_length - self.prefix.prefixlen)

    def nth(self, index: int) -> IPv6Network:
        step = 1 << (128 - self.delegated_length)
        base = int(self.prefix.network_address) + index * step
        return IPv6Network((base, self.delegated_length))

    def holds(self, prefix: IPv6Network) -> bool:
        return prefix.prefixlen == self.delegated_length and prefix.subnet_of(self.prefix)


@dataclass(frozen=True, slots=True)
class Reservation6:
    """A DUID's own address and/or delegated prefix on a link."""

    duid: Duid
    address: IPv6Address | None = None
    prefix: IPv6Network | None = None


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """Preferred and valid lifetimes and the IA timers, in seconds (RFC 8415 §7.7, §21.4).

    T1/T2 left unset are the recommended 0.5 and 0.8 of the preferred lifetime."""

    preferred: int = 3600
    valid: int = 7200
    t1: int | None = None
    t2: int | None = None

    def __post_init__(self) -> None:
        if self.preferred > self.valid:
            raise ValueError("a preferred lifetime longer than the valid one (RFC 8415 §21.6)")

    def timers(self) -> tuple[int, int]:
        t1 = self.preferred // 2 if self.t1 is None else self.t1
        t2 = self.preferred * 4 // 5 if self.t2 is None else self.t2
        return min(t1, t2), t2  # RFC 8415 §21.4: T1 must not exceed T2


@dataclass(frozen=True, slots=True)
class Link:
    """One IPv6 subnet as the server sees it: where a relay's link-address points."""

    subnet_id: str
    network: IPv6Network
    lifetimes: Lifetimes = field(default_factory=Lifetimes)
    pools: tuple[Pool6, ...] = ()
    pd_pools: tuple[PdPool, ...] = ()
    excludes: tuple[Pool6, ...] = ()  # ranges never handed out, inside pools or not
    pd_excludes: tuple[IPv6Network, ...] = ()  # delegated prefixes never handed out
    reservations: tuple[Reservation6, ...] = ()
    options: dict[int, bytes] = field(default_factory=dict)  # option data by code
    rapid_commit: bool = True  # RFC 8415 §18.3.1: the server must be configured to allow it
    # The forward zone this server registers clients' names in (AAAA, PTR, DHCID: RFC 4704),
    # set only when the subnet's DDNS adapter performs updates; None: no DNS updates.
    ddns_zone: str | None = None
    # Reservations by DUID and by address, made once: the decision asks for every address
    # it probes (up to MAX_PROBES per pool), and a site may reserve thousands.
    _by_duid: dict[Duid, Reservation6] = field(init=False, repr=False, compare=False)
    _address_owner: dict[int, Duid] = field(init=False, repr=False, compare=False)  # by int
    _prefixed: tuple[Reservation6, ...] = field(init=False, repr=False, compare=False)
    # The pools open to every client, and those kept for a class (most links have none).
    _open: tuple[Pool6, ...] = field(init=False, repr=False, compare=False)
    _kept: tuple[Pool6, ...] = field(init=False, repr=False, compare=False)
    # The options answered per Option Request (clients of one kind all send one ORO): made
    # once, not per message; a link never changes (a reload builds new ones). Bounded.
    _answers: dict[tuple[int, ...], tuple[RawOption, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_duid: dict[Duid, Reservation6] = {}
        owners: dict[int, Duid] = {}  # by int: IPv6Address hashes slowly
        for reservation in self.reservations:
            by_duid.setdefault(reservation.duid, reservation)  # the first one wins, as before
            if reservation.address is not None:
                owners.setdefault(int(reservation.address), reservation.duid)
        object.__setattr__(self, "_by_duid", by_duid)  # frozen: set once, here
        object.__setattr__(self, "_address_owner", owners)
        object.__setattr__(self, "_prefixed",
                           tuple(r for r in self.reservations if r.prefix is not None))
        object.__setattr__(self, "_open", tuple(p for p in self.pools if p.class_id is None))
        object.__setattr__(self, "_kept", tuple(p for p in self.pools if p.class_id is not None))

    def requested(self, codes: tuple[int, ...]) -> tuple[RawOption, ...]:
        """The link's options a client asked for, in its order, each once (RFC 8415 §21.7)."""
        answers = self._answers
        found = answers.get(codes)
        if found is None:
            if len(answers) >= _ANSWERS_MAX:
                answers.clear()
            found = answers[codes] = tuple(RawOption(code, self.options[code])
                                           for code in dict.fromkeys(codes)
                                           if code in self.options)
        return found

    def reservation(self, duid: Duid) -> Reservation6 | None:
        return self._by_duid.get(duid)

    def reserved_for_another(self, address: IPv6Address, duid: Duid) -> bool:
        if int(address) not in self._address_owner:
            return False
        return any(r.address == address and r.duid != duid for r in self.reservations)

    def prefix_reserved_for_another(self, prefix: IPv6Network, duid: Duid) -> bool:
        return any(r.prefix is not None and r.prefix.overlaps(prefix) and r.duid != duid
                   for r in self._prefixed)

    def excluded(self, address: IPv6Address) -> bool:
        return any(address in exclude for exclude in self.excludes)

    def prefix_excluded(self, prefix: IPv6Network) -> bool:
        return any(prefix.overlaps(exclude) for exclude in self.pd_excludes)

    def in_pool(self, address: IPv6Address, classes: frozenset[str] = NO_CLASSES) -> bool:
        """In a pool open to a client of ``classes`` (one without a class, or of one of them)."""
        return any(address in pool for pool in self.pools_for(classes))

    def pools_for(self, classes: frozenset[str]) -> list[Pool6]:
        """The pools a client of ``classes`` may draw from, its classes' pools first (as
        DHCPv4's free-address picker prefers them)."""
        if not classes or not self._kept:
            return list(self._open)
        return [pool for pool in self._kept if pool.class_id in classes] + list(self._open)

    def kept_from(self, address: IPv6Address, classes: frozenset[str]) -> bool:
        """Inside a pool kept for a class the client lacks, and no pool open to it."""
        return any(address in pool and pool.class_id not in classes for pool in self._kept) \
            and not self.in_pool(address, classes)

    def pd_pool_of(self, prefix: IPv6Network) -> PdPool | None:
        for pool in self.pd_pools:
            if pool.holds(prefix):
                return pool
        return None


@dataclass(frozen=True, slots=True)
class Plan6:
    links: tuple[Link, ...] = ()
    classes: tuple[ClientClass6, ...] = ()  # every client class (pools name them)
    # link_for's answers: every message asks, for one of a few relays' link-addresses, and
    # the plan never changes (a new one is built on reload). Bounded: sources are relays.
    _found: dict[int, Link | None] = field(default_factory=dict, init=False, repr=False,
                                           compare=False)  # by int: IPv6Address hashes slowly

    def link_for(self, address: IPv6Address | None) -> Link | None:
        """The link whose network holds ``address`` (the longest prefix wins)."""
        if address is None:
            return None
        key, found = int(address), self._found
        if key in found:
            return found[key]
        if len(found) >= _LINK_CACHE_MAX:
            found.clear()
        best = found[key] = self._longest_match(address)
        return best

    def _longest_match(self, address: IPv6Address) -> Link | None:
        best: Link | None = None
        for link in self.links:
            if address in link.network and (
                    best is None or link.network.prefixlen > best.network.prefixlen):
                best = link
        return best


# --------------------------------------------------------------------------- bindings


class Binding:
    """One lease as the lease store knows it: an address (IA_NA, length 128) or a
    delegated prefix (IA_PD) of one client's IA.

    Immutable by convention; a plain class, not a frozen dataclass: compiled, its
    construction (every committed change, every binding loaded) is C, a dataclass's is not."""

    __slots__ = ("address", "duid", "expires", "ia_type", "iaid", "prefix_length", "state")

    def __init__(self, ia_type: IaType, duid: Duid, iaid: int, address: IPv6Address,
                 prefix_length: int, state: str, expires: float) -> None:
        self.ia_type = ia_type
        self.duid = duid
        self.iaid = iaid
        self.address = address
        self.prefix_length = prefix_length
        self.state = state  # "active" or "declined" (probation); ended leases are not bindings
        self.expires = expires  # seconds since the epoch

    def _fields(self) -> tuple[object, ...]:
        return (self.ia_type, self.duid, self.iaid, self.address, self.prefix_length,
                self.state, self.expires)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Binding):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "Binding(" + ", ".join(repr(value) for value in self._fields()) + ")"

    @property
    def prefix(self) -> IPv6Network:
        return IPv6Network((self.address, self.prefix_length))


class Bindings(Protocol):
    """What the decision asks the lease store (answers as of ``now``)."""

    def of(self, duid: Duid, iaid: int, ia_type: IaType, now: float) -> Sequence[Binding]:
        """The client's active bindings of that IA."""
        ...

    def holder(self, address: IPv6Address, prefix_length: int, now: float) -> Binding | None:
        """The live binding (active, or declined in probation) on that address, or of a
        delegated prefix overlapping that prefix, whoever holds it."""
        ...


def overlapping(bindings: Iterable[Binding], prefix: IPv6Network) -> Binding | None:
    """The first binding whose address or prefix overlaps ``prefix`` (a helper for stores)."""
    for binding in bindings:
        if binding.prefix.overlaps(prefix):
            return binding
    return None
