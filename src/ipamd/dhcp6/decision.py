r"""What the DHCPv6 decision produces, and one message's way through it (``engine``, ``assign``).

A :class:`Decision` is a reply (or a drop reason) and the :class:`LeaseChange`\ s the lease
store must commit before the reply is sent; :class:`Tx` carries one client message through
the decision, collecting those changes.
"""

from __future__ import annotations

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


class LeaseChange:
    """One binding's change for the lease store; ``prefix_length`` is 128 for an address.

    This module's records are plain classes, immutable by convention where they were frozen
    dataclasses: compiled (``ipamd.dhcp.compiled``), their construction is C, where a
    dataclass's generated ``__init__`` stays interpreted Python (and every message makes
    several)."""

    __slots__ = ("address", "duid", "fqdn", "ia_type", "iaid", "kind", "preferred",
                 "prefix_length", "subnet_id", "valid")

    def __init__(self, kind: ChangeKind, ia_type: IaType, duid: Duid, iaid: int,
                 address: IPv6Address, prefix_length: int, subnet_id: str, preferred: int = 0,
                 valid: int = 0, fqdn: str | None = None) -> None:
        self.kind = kind
        self.ia_type = ia_type
        self.duid = duid
        self.iaid = iaid
        self.address = address
        self.prefix_length = prefix_length
        self.subnet_id = subnet_id
        self.preferred = preferred
        self.valid = valid
        self.fqdn = fqdn  # the name registered in DNS for this address (RFC 4704)

    def _fields(self) -> tuple[object, ...]:
        return (self.kind, self.ia_type, self.duid, self.iaid, self.address,
                self.prefix_length, self.subnet_id, self.preferred, self.valid, self.fqdn)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LeaseChange):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return ("LeaseChange(" + ", ".join(repr(value) for value in self._fields()) + ")")


class Decision:
    """What to do with one message: a drop, or a reply sent after ``changes`` commit."""

    __slots__ = ("changes", "drop", "reply")

    def __init__(self, reply: Message | None = None, changes: tuple[LeaseChange, ...] = (),
                 drop: str | None = None) -> None:
        self.reply = reply
        self.changes = changes
        self.drop = drop

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.reply, self.changes, self.drop) == (other.reply, other.changes,
                                                        other.drop)

    def __hash__(self) -> int:
        return hash((self.changes, self.drop))

    def __repr__(self) -> str:
        return f"Decision(reply={self.reply!r}, changes={self.changes!r}, drop={self.drop!r})"


class Asked:
    """What a client's message holds that the decision reads, found in one pass over its
    options (every message is read so; the first of each kind counts, as ``first`` does)."""

    __slots__ = ("client_id", "fqdn", "ia_nas", "ia_pds", "rapid_commit", "requested")

    def __init__(self) -> None:
        self.client_id: ClientId | None = None
        self.ia_nas: list[IaNa] = []
        self.ia_pds: list[IaPd] = []
        self.fqdn: ClientFqdn | None = None  # the Client FQDN option (39, RFC 4704)
        self.requested: tuple[int, ...] = ()  # the Option Request's codes (RFC 8415 §21.7)
        self.rapid_commit = False

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


class Tx:
    """One message's way through the decision."""

    __slots__ = ("asked", "bindings", "changes", "classes", "commit", "duid", "fqdn", "link",
                 "message", "now", "server_duid", "taken")

    def __init__(self, message: Message, duid: Duid, link: Link, bindings: Bindings,
                 server_duid: Duid, now: float, classes: frozenset[str] = NO_CLASSES,
                 asked: Asked | None = None) -> None:
        self.message = message
        self.duid = duid
        self.link = link
        self.bindings = bindings
        self.server_duid = server_duid
        self.now = now
        self.classes = classes  # the client's classes (dhcp6.classify)
        self.asked = Asked() if asked is None else asked  # what the message holds
        # The name this server registers for the client's addresses.
        self.fqdn: str | None = None
        self.commit = True
        self.taken: set[tuple[int, int]] = set()  # picked in this reply
        self.changes: list[LeaseChange] = []

    def change(self, kind: ChangeKind, ia_type: IaType, iaid: int, address: IPv6Address,
               length: int, live: bool = True) -> None:
        lifetimes = self.link.lifetimes
        preferred, valid = (lifetimes.preferred, lifetimes.valid) if live else (0, 0)
        # Only addresses get a name (AAAA + PTR); a delegated prefix is a router's.
        name = self.fqdn if live and ia_type is IaType.NA else None
        self.changes.append(LeaseChange(kind, ia_type, self.duid, iaid, address, length,
                                        self.link.subnet_id, preferred, valid, name))
