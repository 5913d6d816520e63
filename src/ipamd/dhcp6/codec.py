"""DHCPv6 message parse/build (RFC 8415 §8, §9), pure; raises only ``Malformed``.

Two shapes of message:

* :class:`Message` — client/server messages (§8): msg-type, a 3-octet transaction-id,
  options.
* :class:`RelayMessage` — Relay-forward (12) and Relay-reply (13) (§9): msg-type,
  hop-count, link-address, peer-address, options. Its Relay Message option (9) holds the
  relayed message, parsed too (:class:`RelayMsg`); relays nest at most
  ``protocol.MAX_RELAY_DEPTH`` deep (``relay_too_deep`` beyond).

``parse`` decodes every option it knows (``dhcp6.options``) and checks every length; what
cannot be decoded raises :class:`~ipamd.dhcp6.protocol.Malformed` with a reason from
``protocol.REASONS``, the drop counter's key. Message types outside RFC 8415's 1..13 are
``unknown_message_type``. Whether a message holds the options its type needs (a Solicit
without a Client Identifier...) is the server's stage ``dhcp6.validate``, not the codec's.

``to_bytes`` re-encodes options in their order; an option kept raw goes out as it came in,
so a message parsed and built again is the same octets (tests/unit/dhcp6/ fuzz it).
"""

from __future__ import annotations

import struct
from ipaddress import IPv6Address
from typing import Final

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import (
    MESSAGE_OPTIONS,
    ClientId,
    ElapsedTime,
    IaNa,
    IaPd,
    InterfaceId,
    Option,
    OptionRequest,
    OptionT,
    Plain,
    RapidCommit,
    RawOption,
    ServerId,
    encode_options,
    every,
    first,
    split,
)
from ipamd.dhcp6.protocol import Malformed

__all__ = ["Malformed", "Message", "RelayMessage", "RelayMsg", "parse"]

RELAY_HEAD = struct.Struct("!BB16s16s")
CLIENT_HEADER_SIZE = 4  # msg-type + transaction-id
RELAY_HEADER_SIZE = RELAY_HEAD.size  # 34
# A relay header's addresses, built once each: a relay's link-address comes in every message
# it forwards and IPv6Address(bytes) is interpreted Python (~1.5 µs, 4 a relayed SARR). Peer
# addresses are one per client behind a relay: bounded, the table starts again when full.
_ADDRESSES_MAX = 4096
_addresses: Final[dict[bytes, IPv6Address]] = {}


# What both message shapes share (their type's name, typed look-ups over ``options``) is
# written in each: two small classes, no base class between them.


def _raw(options: list[Option], code: int) -> list[bytes]:
    """The data of every instance of ``code``, typed or not (as on the wire)."""
    return [o.encode() for o in options if o.code == code]


class Message:
    """A client/server message (RFC 8415 §8).

    Plain classes, these two, not dataclasses: compiled (``ipamd.dhcp.compiled``) their
    construction is C, a dataclass's generated ``__init__`` is interpreted Python (each
    message parsed or answered makes one or two). Equal when their fields are."""

    __slots__ = ("msg_type", "options", "transaction_id")

    def __init__(self, msg_type: int, transaction_id: int,
                 options: list[Option] | None = None) -> None:
        self.msg_type = msg_type
        self.transaction_id = transaction_id
        self.options: list[Option] = [] if options is None else options

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.msg_type == other.msg_type and self.transaction_id == other.transaction_id
                and self.options == other.options)

    @property
    def type_name(self) -> str:
        return p.MESSAGE_TYPE_NAMES.get(self.msg_type, str(self.msg_type))

    def first(self, kind: type[OptionT]) -> OptionT | None:
        return first(self.options, kind)

    def every(self, kind: type[OptionT]) -> list[OptionT]:
        return every(self.options, kind)

    def raw(self, code: int) -> list[bytes]:
        return _raw(self.options, code)

    def to_bytes(self) -> bytes:
        if not 0 <= self.msg_type <= 0xFF or not 0 <= self.transaction_id < 1 << 24:
            raise ValueError("a msg-type is one octet and a transaction-id three")
        head = ((self.msg_type << 24) | self.transaction_id).to_bytes(4, "big")
        return head + encode_options(self.options)

    # The server's stages read these (one place that knows where each lives).

    @property
    def client_duid(self) -> Duid | None:
        option = self.first(ClientId)
        return None if option is None else option.duid

    @property
    def server_duid(self) -> Duid | None:
        option = self.first(ServerId)
        return None if option is None else option.duid

    @property
    def ia_nas(self) -> list[IaNa]:
        return self.every(IaNa)

    @property
    def ia_pds(self) -> list[IaPd]:
        return self.every(IaPd)

    @property
    def requested_codes(self) -> tuple[int, ...]:
        option = self.first(OptionRequest)
        return () if option is None else option.codes

    @property
    def rapid_commit(self) -> bool:
        return self.first(RapidCommit) is not None

    @property
    def elapsed_hundredths(self) -> int | None:
        option = self.first(ElapsedTime)
        return None if option is None else option.hundredths

    def __repr__(self) -> str:
        codes = [o.code for o in self.options]
        return f"Message({self.type_name}, xid={self.transaction_id:#08x}, options={codes})"


class RelayMessage:
    """A Relay-forward or Relay-reply (RFC 8415 §9)."""

    __slots__ = ("hop_count", "link_address", "msg_type", "options", "peer_address")

    def __init__(self, msg_type: int, hop_count: int, link_address: IPv6Address,
                 peer_address: IPv6Address, options: list[Option] | None = None) -> None:
        self.msg_type = msg_type
        self.hop_count = hop_count
        self.link_address = link_address
        self.peer_address = peer_address
        self.options: list[Option] = [] if options is None else options

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RelayMessage):
            return NotImplemented
        return (self.msg_type == other.msg_type and self.hop_count == other.hop_count
                and self.link_address == other.link_address
                and self.peer_address == other.peer_address and self.options == other.options)

    @property
    def type_name(self) -> str:
        return p.MESSAGE_TYPE_NAMES.get(self.msg_type, str(self.msg_type))

    def first(self, kind: type[OptionT]) -> OptionT | None:
        return first(self.options, kind)

    def every(self, kind: type[OptionT]) -> list[OptionT]:
        return every(self.options, kind)

    def raw(self, code: int) -> list[bytes]:
        return _raw(self.options, code)

    def to_bytes(self) -> bytes:
        if not 0 <= self.msg_type <= 0xFF or not 0 <= self.hop_count <= 0xFF:
            raise ValueError("a msg-type and a hop-count are one octet each")
        head = RELAY_HEAD.pack(self.msg_type, self.hop_count, self.link_address.packed,
                                self.peer_address.packed)
        return head + encode_options(self.options)

    @property
    def relayed(self) -> Message | RelayMessage | None:
        """The message inside the Relay Message option (None when there is none)."""
        option = self.first(RelayMsg)
        return None if option is None else option.message

    @property
    def interface_id(self) -> bytes | None:
        option = self.first(InterfaceId)
        return None if option is None else option.data

    def __repr__(self) -> str:
        codes = [o.code for o in self.options]
        return (f"RelayMessage({self.type_name}, hops={self.hop_count}, "
                f"link={self.link_address}, peer={self.peer_address}, options={codes})")


class RelayMsg(Plain):
    """Relay Message (RFC 8415 §21.10): the relayed message, parsed."""

    __slots__ = ("message",)

    def __init__(self, message: Message | RelayMessage) -> None:
        self.message = message

    def _fields(self) -> tuple[object, ...]:
        return (self.message,)

    def encode(self) -> bytes:
        return self.message.to_bytes()


RelayMsg.code = p.OPTION_RELAY_MSG


# --------------------------------------------------------------------------- parsing


def parse(data: bytes | bytearray | memoryview) -> Message | RelayMessage:
    """Decode one DHCPv6 message (UDP payload); raises only :class:`Malformed`."""
    if type(data) is not bytes:
        data = bytes(data)
    return _parse(data, 0)


def _parse(data: bytes, depth: int) -> Message | RelayMessage:
    if not data:
        raise Malformed("too_short", "empty")
    msg_type = data[0]
    if msg_type not in p.MESSAGE_TYPE_NAMES:
        raise Malformed("unknown_message_type", str(msg_type))
    if msg_type in p.RELAY_TYPES:
        return _parse_relay(data, depth + 1)
    if len(data) < CLIENT_HEADER_SIZE:
        raise Malformed("too_short", f"{len(data)} octets")
    options = _decode(data, CLIENT_HEADER_SIZE, depth, relay=False)
    return Message(msg_type, int.from_bytes(data[1:4], "big"), options)


def _parse_relay(data: bytes, depth: int) -> RelayMessage:
    if depth > p.MAX_RELAY_DEPTH:
        raise Malformed("relay_too_deep", f"more than {p.MAX_RELAY_DEPTH} relay messages")
    if len(data) < RELAY_HEADER_SIZE:
        raise Malformed("too_short", f"relay message of {len(data)} octets")
    msg_type, hops, link, peer = RELAY_HEAD.unpack_from(data)
    options = _decode(data, RELAY_HEADER_SIZE, depth, relay=True)
    return RelayMessage(msg_type, hops, _address(link), _address(peer), options)


def _address(raw: bytes) -> IPv6Address:
    found = _addresses.get(raw)
    if found is None:
        if len(_addresses) >= _ADDRESSES_MAX:
            _addresses.clear()
        found = _addresses[raw] = IPv6Address(raw)
    return found


def _decode(data: bytes, start: int, depth: int, *, relay: bool) -> list[Option]:
    """A message's options; option 9 is a nested message in a relay message only."""
    out: list[Option] = []
    for code, value in split(data, start):
        if code == p.OPTION_RELAY_MSG and relay:
            out.append(RelayMsg(_parse(value, depth)))
            continue
        decoder = MESSAGE_OPTIONS.get(code)
        out.append(RawOption(code, value) if decoder is None else decoder(value))
    return out

