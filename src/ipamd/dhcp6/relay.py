"""Relay-forward chains in, Relay-reply chains out (RFC 8415 §19.1-§19.3), pure.

A relayed client message reaches the server wrapped in one Relay-forward per relay, the
relay that sent it to us outermost. :func:`unwrap` takes the chain apart into the client's
message and the relays' hops, and refuses (``Malformed``) what a server must not act on:
a hop-count above ``HOP_COUNT_LIMIT`` (§19.1.2: such a message should have been dropped
by the relay), a relay message without exactly one Relay Message option, a Relay-reply in
a forward chain. How deep relays may nest is the codec's check (``relay_too_deep``).

:func:`wrap` builds the answer: one Relay-reply per hop, innermost first, each with the
hop-count, link-address and peer-address of its Relay-forward and its Interface-Id echoed
(§19.3; §21.18: the relay uses it to find the client's interface). Nothing else is echoed:
Remote-Id (RFC 4649), Subscriber-Id (RFC 4580) and the client's link-layer address
(RFC 6939) are the relay's information for the server, recorded, not returned.

Which hop names the client's link: the relay closest to the client whose link-address is
not the unspecified address (:attr:`Relayed.link_address`); a Lightweight DHCPv6 Relay
Agent (RFC 6221) leaves it unspecified and the next relay out gives its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from ipaddress import IPv6Address
from typing import TypeVar

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import RELAY_HEAD, Message, RelayMessage, RelayMsg
from ipamd.dhcp6.options import (
    HEADER,
    OPTION_MAX,
    ClientLinkLayer,
    InterfaceId,
    Option,
    RemoteId,
    SubscriberId,
)
from ipamd.dhcp6.protocol import Malformed

T = TypeVar("T")


class RelayHop:
    """What one Relay-forward said about the client's way to us.

    Immutable by convention; a plain class, not a frozen dataclass, as ``Relayed`` (made
    for every relayed message: compiled, its construction is C, a dataclass's is not)."""

    __slots__ = ("client_link_layer", "hop_count", "interface_id", "link_address",
                 "peer_address", "remote_id", "subscriber_id")

    def __init__(self, hop_count: int, link_address: IPv6Address, peer_address: IPv6Address,
                 interface_id: bytes | None = None, remote_id: RemoteId | None = None,
                 subscriber_id: bytes | None = None,
                 client_link_layer: ClientLinkLayer | None = None) -> None:
        self.hop_count = hop_count
        self.link_address = link_address
        self.peer_address = peer_address
        self.interface_id = interface_id
        self.remote_id = remote_id
        self.subscriber_id = subscriber_id
        self.client_link_layer = client_link_layer

    def _fields(self) -> tuple[object, ...]:
        return (self.hop_count, self.link_address, self.peer_address, self.interface_id,
                self.remote_id, self.subscriber_id, self.client_link_layer)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RelayHop):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"RelayHop(hop_count={self.hop_count}, link_address={self.link_address!r}, "
                f"peer_address={self.peer_address!r}, interface_id={self.interface_id!r})")

    @classmethod
    def of(cls, relay: RelayMessage) -> RelayHop:
        return _hop_and_inner(relay)[0]


def _hop_and_inner(relay: RelayMessage) -> tuple[RelayHop, list[RelayMsg]]:
    """The hop a Relay-forward describes and its Relay Message options, in one pass over
    its options (every relayed message comes through here); the first of each kind counts."""
    interface_id: InterfaceId | None = None
    remote_id: RemoteId | None = None
    subscriber_id: SubscriberId | None = None
    link_layer: ClientLinkLayer | None = None
    inner: list[RelayMsg] = []
    for option in relay.options:  # exact types, as first() matches (no ABC isinstance)
        if type(option) is RelayMsg:
            inner.append(option)
        elif type(option) is InterfaceId:
            interface_id = interface_id or option
        elif type(option) is RemoteId:
            remote_id = remote_id or option
        elif type(option) is SubscriberId:
            subscriber_id = subscriber_id or option
        elif type(option) is ClientLinkLayer:
            link_layer = link_layer or option
    hop = RelayHop(relay.hop_count, relay.link_address, relay.peer_address,
                   None if interface_id is None else interface_id.data, remote_id,
                   None if subscriber_id is None else subscriber_id.data, link_layer)
    return hop, inner


class Relayed:
    """A client's message and the relays it came through, outermost (our peer) first."""

    __slots__ = ("hops", "message")

    def __init__(self, message: Message, hops: tuple[RelayHop, ...] = ()) -> None:
        self.message = message
        self.hops = hops

    def __repr__(self) -> str:
        return f"Relayed(message={self.message!r}, hops={self.hops!r})"

    @property
    def relayed(self) -> bool:
        return bool(self.hops)

    @property
    def link_address(self) -> IPv6Address | None:
        """The address naming the client's link: the link-address of the relay closest to
        the client that gave one; None when not relayed or no relay did."""
        for hop in reversed(self.hops):
            if int(hop.link_address):  # not the unspecified address (RFC 6221)
                return hop.link_address
        return None

    @property
    def peer_address(self) -> IPv6Address | None:
        """The client's own address as the first relay saw it (its link-local, usually)."""
        return self.hops[-1].peer_address if self.hops else None

    @property
    def remote_id(self) -> RemoteId | None:
        return _innermost(hop.remote_id for hop in self.hops)

    @property
    def subscriber_id(self) -> bytes | None:
        return _innermost(hop.subscriber_id for hop in self.hops)

    @property
    def client_link_layer(self) -> ClientLinkLayer | None:
        """RFC 6939's option; only the relay on the client's link can give it."""
        return self.hops[-1].client_link_layer if self.hops else None

    @property
    def interface_ids(self) -> list[bytes | None]:
        return [hop.interface_id for hop in self.hops]


def _innermost(values: Iterable[T | None]) -> T | None:
    """The last value given (the hop closest to the client) that is not None."""
    found: T | None = None
    for value in values:
        if value is not None:
            found = value
    return found


def unwrap(message: Message | RelayMessage) -> Relayed:
    """The client's message inside a Relay-forward chain (or a message not relayed)."""
    hops: list[RelayHop] = []
    current: Message | RelayMessage = message
    while isinstance(current, RelayMessage):
        if current.msg_type != p.RELAY_FORW:
            raise Malformed("bad_relay_nesting", f"{current.type_name} in a forward chain")
        if current.hop_count > p.HOP_COUNT_LIMIT:
            raise Malformed("hop_limit", f"hop-count {current.hop_count}")
        hop, inner = _hop_and_inner(current)
        if len(inner) != 1:
            raise Malformed("no_relay_message", f"{len(inner)} Relay Message options")
        hops.append(hop)
        current = inner[0].message
    return Relayed(current, tuple(hops))


def wrap(reply: Message, hops: Sequence[RelayHop]) -> Message | RelayMessage:
    """``reply`` inside one Relay-reply per hop (outermost first, as :func:`unwrap` gives
    them); the reply itself when there are no hops."""
    answer: Message | RelayMessage = reply
    for hop in reversed(hops):
        options: list[Option] = []
        if hop.interface_id is not None:
            options.append(InterfaceId(hop.interface_id))
        options.append(RelayMsg(answer))
        answer = RelayMessage(p.RELAY_REPL, hop.hop_count, hop.link_address, hop.peer_address,
                              options)
    return answer


def wrap_bytes(reply: bytes, hops: Sequence[RelayHop]) -> bytes:
    """``wrap(message, hops).to_bytes()`` from the message's octets: the same Relay-replies
    (RFC 8415 §19.3), written straight out (every answer the server sends is wrapped)."""
    data = reply
    for hop in reversed(hops):
        if len(data) > OPTION_MAX:  # as encode_options refuses it
            raise ValueError(f"option {p.OPTION_RELAY_MSG} has {len(data)} octets; "
                             "at most 65535")
        head = RELAY_HEAD.pack(p.RELAY_REPL, hop.hop_count, hop.link_address.packed,
                               hop.peer_address.packed)
        if hop.interface_id is not None:
            if len(hop.interface_id) > OPTION_MAX:
                raise ValueError(f"option {p.OPTION_INTERFACE_ID} has "
                                 f"{len(hop.interface_id)} octets; at most 65535")
            head += HEADER.pack(p.OPTION_INTERFACE_ID, len(hop.interface_id)) + hop.interface_id
        data = head + HEADER.pack(p.OPTION_RELAY_MSG, len(data)) + data
    return data
