r"""What the DHCPv6 decision produces, and one message's way through it (``engine``, ``assign``).

A :class:`Decision` is a reply (or a drop reason) and the :class:`LeaseChange`\ s the lease
store must commit before the reply is sent; :class:`Tx` carries one client message through
the decision, collecting those changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from ipaddress import IPv6Address

from ipamd.dhcp6.classify import NO_CLASSES
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import ClientFqdn, ClientId, IaNa, IaPd, OptionRequest, RapidCommit
from ipamd.dhcp6.plan import Bindings, IaType, Link


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
class Asked:
    """What a client's message holds that the decision reads, found in one pass over its
    options (every message is read so; the first of each kind counts, as ``first`` does)."""

    client_id: ClientId | None = None
    ia_nas: list[IaNa] = field(default_factory=list)
    ia_pds: list[IaPd] = field(default_factory=list)
    fqdn: ClientFqdn | None = None  # the Client FQDN option (39, RFC 4704)
    requested: tuple[int, ...] = ()  # the Option Request's codes (RFC 8415 §21.7)
    rapid_commit: bool = False

    @classmethod
    def read(cls, message: Message) -> Asked:
        asked = cls()
        oro: OptionRequest | None = None
        for option in message.options:  # exact types, as first() and every() match
            if type(option) is IaNa:
                asked.ia_nas.append(option)
            elif type(option) is IaPd:
                asked.ia_pds.append(option)
            elif type(option) is ClientId:
                asked.client_id = asked.client_id or option
            elif type(option) is OptionRequest:
                oro = oro or option
            elif type(option) is ClientFqdn:
                asked.fqdn = asked.fqdn or option
            elif type(option) is RapidCommit:
                asked.rapid_commit = True
        if oro is not None:
            asked.requested = oro.codes
        return asked


@dataclass(slots=True)
class Tx:
    """One message's way through the decision."""

    message: Message
    duid: Duid
    link: Link
    bindings: Bindings
    server_duid: Duid
    now: float
    classes: frozenset[str] = NO_CLASSES  # the client's classes (dhcp6.classify)
    asked: Asked = field(default_factory=Asked)  # what the message holds (Asked.read)
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
