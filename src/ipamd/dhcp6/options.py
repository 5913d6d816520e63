"""DHCPv6 options (RFC 8415 §21 and the RFCs named below): one small class per option.

Every option is an :class:`Option` with a ``code`` and ``encode()`` (its data, without code
and length). Decoding is eager and strict: ``decode_options`` checks every length and turns
each known option into its class, raising :class:`~ipamd.dhcp6.protocol.Malformed` with a
countable reason for anything that does not hold; an option this module does not know (or
one found where it does not belong, e.g. an IA Address outside an IA) stays a
:class:`RawOption` — its code and octets, re-encoded exactly as received.

Where an option may be found decides what is decoded (and so bounds the recursion): a
message's options (:data:`MESSAGE_OPTIONS`), an IA_NA's (:data:`IA_NA_OPTIONS`), an
IA_PD's (:data:`IA_PD_OPTIONS`), an IA Address's or IA Prefix's (:data:`LEAF_OPTIONS`).
The Relay Message option (9) is decoded by ``codec`` in relay messages only.

Values: addresses are ``ipaddress.IPv6Address``; domain names are tuples of raw labels
(``core.dnswire``), so a client's name round-trips whatever octets it holds; DUIDs are
``duid.Duid``. The option classes are frozen dataclasses: equal when their fields are.
"""

from __future__ import annotations

import abc
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address, IPv6Network
from typing import ClassVar, TypeVar

from ipamd.core import dnswire
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.protocol import Malformed

_HDR = struct.Struct("!HH")
_IA = struct.Struct("!III")  # IAID, T1, T2 (RFC 8415 §21.4, §21.21)
_IAADDR = struct.Struct("!16sII")  # address, preferred, valid (§21.6)
_IAPREFIX = struct.Struct("!IIB16s")  # preferred, valid, prefix-length, prefix (§21.22)
OPTION_MAX = 0xFFFF  # option-len is two octets
INFINITY = 0xFFFFFFFF  # RFC 8415 §7.7: a lifetime or T1/T2 of all ones never ends

OptionT = TypeVar("OptionT", bound="Option")


class Option(abc.ABC):
    """An option: ``code`` and ``encode()`` (the option-data; code and length are added by
    :func:`encode_options`). Abstract: every option class says how it is written."""

    __slots__ = ()
    code: ClassVar[int]

    @abc.abstractmethod
    def encode(self) -> bytes:
        """The option-data, without the code and length."""


# --------------------------------------------------------------------------- framing


def split(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, bytes]]:
    """The (code, data) of each option in ``data[start:end]``, every length checked."""
    stop = len(data) if end is None else end
    out: list[tuple[int, bytes]] = []
    pos = start
    while pos < stop:
        if stop - pos < 4:
            raise Malformed("truncated_option", f"{stop - pos} octets left at {pos}")
        code, size = _HDR.unpack_from(data, pos)
        pos += 4
        if pos + size > stop:
            raise Malformed("option_too_long", f"option {code} of {size} octets at {pos - 4}")
        out.append((code, data[pos : pos + size]))
        pos += size
    return out


Decoder = Callable[[bytes], "Option"]


def decode_options(data: bytes, table: dict[int, Decoder]) -> list[Option]:
    """Options of ``data`` decoded with ``table`` (code → decoder); others stay raw."""
    out: list[Option] = []
    for code, value in split(data):
        decoder = table.get(code)
        out.append(RawOption(code, value) if decoder is None else decoder(value))
    return out


def encode_options(options: Iterable[Option]) -> bytes:
    parts: list[bytes] = []
    for option in options:
        value = option.encode()
        if len(value) > OPTION_MAX:
            raise ValueError(f"option {option.code} has {len(value)} octets; at most 65535")
        parts.append(_HDR.pack(option.code, len(value)))
        parts.append(value)
    return b"".join(parts)


def first(options: Iterable[Option], kind: type[OptionT]) -> OptionT | None:
    for option in options:
        if type(option) is kind:
            return option
    return None


def every(options: Iterable[Option], kind: type[OptionT]) -> list[OptionT]:
    return [option for option in options if type(option) is kind]


def _fixed(value: bytes, size: int, code: int) -> None:
    if len(value) != size:
        raise Malformed("bad_option_length", f"option {code}: {len(value)} octets, not {size}")


def _address(raw: bytes) -> IPv6Address:
    return IPv6Address(raw)


# --------------------------------------------------------------------------- the options


@dataclass(frozen=True, slots=True)
class RawOption(Option):
    """An option kept as received: unknown, or known but out of its place."""

    code: int  # type: ignore[misc]  # an instance field here, a class constant elsewhere
    data: bytes

    def encode(self) -> bytes:
        return self.data


@dataclass(frozen=True, slots=True)
class _DuidOption(Option):
    """An option whose data is a DUID (Client or Server Identifier)."""

    duid: Duid

    def encode(self) -> bytes:
        return self.duid.raw


@dataclass(frozen=True, slots=True)
class ClientId(_DuidOption):
    """Client Identifier (RFC 8415 §21.2)."""

    code: ClassVar[int] = p.OPTION_CLIENTID


@dataclass(frozen=True, slots=True)
class ServerId(_DuidOption):
    """Server Identifier (RFC 8415 §21.3)."""

    code: ClassVar[int] = p.OPTION_SERVERID


@dataclass(frozen=True, slots=True)
class StatusCode(Option):
    """Status Code (RFC 8415 §21.13): a code and a UTF-8 message for people."""

    code: ClassVar[int] = p.OPTION_STATUS_CODE
    status: int
    message: str = ""

    def encode(self) -> bytes:
        return self.status.to_bytes(2, "big") + self.message.encode("utf-8")

    @property
    def name(self) -> str:
        return p.STATUS_NAMES.get(self.status, str(self.status))


class _Nested(Option):
    """An option that carries options of its own: an IA, an IA Address or an IA Prefix."""

    __slots__ = ()
    options: tuple[Option, ...]

    @property
    def status(self) -> StatusCode | None:
        return first(self.options, StatusCode)


@dataclass(frozen=True, slots=True)
class IaAddress(_Nested):
    """IA Address (RFC 8415 §21.6), inside an IA_NA."""

    code: ClassVar[int] = p.OPTION_IAADDR
    address: IPv6Address
    preferred: int
    valid: int
    options: tuple[Option, ...] = ()

    def encode(self) -> bytes:
        head = _IAADDR.pack(self.address.packed, self.preferred, self.valid)
        return head + encode_options(self.options)


@dataclass(frozen=True, slots=True)
class IaPrefix(_Nested):
    """IA Prefix (RFC 8415 §21.22), inside an IA_PD."""

    code: ClassVar[int] = p.OPTION_IAPREFIX
    preferred: int
    valid: int
    prefix_length: int
    prefix: IPv6Address
    options: tuple[Option, ...] = ()

    def encode(self) -> bytes:
        head = _IAPREFIX.pack(self.preferred, self.valid, self.prefix_length, self.prefix.packed)
        return head + encode_options(self.options)

    @property
    def network(self) -> IPv6Network:
        """The prefix as a network (host bits a client sent as a hint are cleared)."""
        return IPv6Network((self.prefix, self.prefix_length), strict=False)


@dataclass(frozen=True, slots=True)
class _Ia(_Nested):
    """An IA_NA or IA_PD: the same framing, IAID, T1, T2 and options (§21.4, §21.21)."""

    iaid: int
    t1: int
    t2: int
    options: tuple[Option, ...] = ()

    def encode(self) -> bytes:
        return _IA.pack(self.iaid, self.t1, self.t2) + encode_options(self.options)


@dataclass(frozen=True, slots=True)
class IaNa(_Ia):
    """Identity Association for Non-temporary Addresses (RFC 8415 §21.4)."""

    code: ClassVar[int] = p.OPTION_IA_NA

    @property
    def addresses(self) -> list[IaAddress]:
        return every(self.options, IaAddress)


@dataclass(frozen=True, slots=True)
class IaPd(_Ia):
    """Identity Association for Prefix Delegation (RFC 8415 §21.21)."""

    code: ClassVar[int] = p.OPTION_IA_PD

    @property
    def prefixes(self) -> list[IaPrefix]:
        return every(self.options, IaPrefix)


@dataclass(frozen=True, slots=True)
class OptionRequest(Option):
    """Option Request (RFC 8415 §21.7): the codes a client asks for, in its order."""

    code: ClassVar[int] = p.OPTION_ORO
    codes: tuple[int, ...]

    def encode(self) -> bytes:
        return b"".join(c.to_bytes(2, "big") for c in self.codes)


@dataclass(frozen=True, slots=True)
class Preference(Option):
    """Preference (RFC 8415 §21.8): 0..255; 255 makes a client take this Advertise at once."""

    code: ClassVar[int] = p.OPTION_PREFERENCE
    value: int

    def encode(self) -> bytes:
        return bytes((self.value,))


@dataclass(frozen=True, slots=True)
class ElapsedTime(Option):
    """Elapsed Time (RFC 8415 §21.9), in hundredths of a second; 0xffff is "longer"."""

    code: ClassVar[int] = p.OPTION_ELAPSED_TIME
    hundredths: int

    def encode(self) -> bytes:
        return self.hundredths.to_bytes(2, "big")


@dataclass(frozen=True, slots=True)
class _Flag(Option):
    """An option with no data: its presence is what it says."""

    def encode(self) -> bytes:
        return b""


@dataclass(frozen=True, slots=True)
class RapidCommit(_Flag):
    """Rapid Commit (RFC 8415 §21.14): no data."""

    code: ClassVar[int] = p.OPTION_RAPID_COMMIT


@dataclass(frozen=True, slots=True)
class ReconfigureAccept(_Flag):
    """Reconfigure Accept (RFC 8415 §21.20): no data."""

    code: ClassVar[int] = p.OPTION_RECONF_ACCEPT


@dataclass(frozen=True, slots=True)
class UserClass(Option):
    """User Class (RFC 8415 §21.15): opaque items, each with a 2-octet length."""

    code: ClassVar[int] = p.OPTION_USER_CLASS
    items: tuple[bytes, ...]

    def encode(self) -> bytes:
        return _items(self.items)


@dataclass(frozen=True, slots=True)
class VendorClass(Option):
    """Vendor Class (RFC 8415 §21.16): an enterprise number and opaque items."""

    code: ClassVar[int] = p.OPTION_VENDOR_CLASS
    enterprise: int
    items: tuple[bytes, ...]

    def encode(self) -> bytes:
        return self.enterprise.to_bytes(4, "big") + _items(self.items)


@dataclass(frozen=True, slots=True)
class VendorOpts(Option):
    """Vendor-specific Information (RFC 8415 §21.17): an enterprise number and data.

    §21.17 recommends sub-options shaped as options; not every vendor follows it, so the
    data is kept as sent and :meth:`suboptions` reads it as such when asked."""

    code: ClassVar[int] = p.OPTION_VENDOR_OPTS
    enterprise: int
    data: bytes

    def encode(self) -> bytes:
        return self.enterprise.to_bytes(4, "big") + self.data

    def suboptions(self) -> list[tuple[int, bytes]]:
        try:
            return split(self.data)
        except Malformed as error:
            raise Malformed("bad_vendor_opts", error.detail) from None

    @classmethod
    def of(cls, enterprise: int, suboptions: Sequence[tuple[int, bytes]]) -> VendorOpts:
        data = b"".join(_HDR.pack(c, len(v)) + v for c, v in suboptions)
        return cls(enterprise, data)


@dataclass(frozen=True, slots=True)
class _Opaque(Option):
    """An option whose data is kept as octets, as sent."""

    data: bytes

    def encode(self) -> bytes:
        return self.data


@dataclass(frozen=True, slots=True)
class InterfaceId(_Opaque):
    """Interface-Id (RFC 8415 §21.18): opaque, set by a relay, echoed in the Relay-reply."""

    code: ClassVar[int] = p.OPTION_INTERFACE_ID


@dataclass(frozen=True, slots=True)
class DnsServers(Option):
    """DNS Recursive Name Server (RFC 3646 §3)."""

    code: ClassVar[int] = p.OPTION_DNS_SERVERS
    addresses: tuple[IPv6Address, ...]

    def encode(self) -> bytes:
        return b"".join(a.packed for a in self.addresses)


@dataclass(frozen=True, slots=True)
class DomainList(Option):
    """Domain Search List (RFC 3646 §4): absolute names, uncompressed (RFC 8415 §10)."""

    code: ClassVar[int] = p.OPTION_DOMAIN_LIST
    names: tuple[dnswire.Labels, ...]

    def encode(self) -> bytes:
        return b"".join(dnswire.encode(name) for name in self.names)

    @property
    def texts(self) -> list[str]:
        return [dnswire.text(name) for name in self.names]


@dataclass(frozen=True, slots=True)
class RemoteId(Option):
    """Relay Agent Remote-ID (RFC 4649 §3): an enterprise number and the relay's identifier."""

    code: ClassVar[int] = p.OPTION_REMOTE_ID
    enterprise: int
    remote_id: bytes

    def encode(self) -> bytes:
        return self.enterprise.to_bytes(4, "big") + self.remote_id


@dataclass(frozen=True, slots=True)
class SubscriberId(_Opaque):
    """Relay Agent Subscriber-ID (RFC 4580 §2): opaque, at least one octet."""

    code: ClassVar[int] = p.OPTION_SUBSCRIBER_ID


@dataclass(frozen=True, slots=True)
class ClientFqdn(Option):
    """Client FQDN (RFC 4704 §4): flags (N, O, S) and a name, possibly partial or empty."""

    code: ClassVar[int] = p.OPTION_CLIENT_FQDN
    flags: int
    labels: dnswire.Labels = ()
    absolute: bool = False

    def encode(self) -> bytes:
        if not self.labels and not self.absolute:
            return bytes((self.flags,))
        return bytes((self.flags,)) + dnswire.encode(self.labels, self.absolute)

    @property
    def name(self) -> str:
        return dnswire.text(self.labels, self.absolute)


@dataclass(frozen=True, slots=True)
class NtpServer(Option):
    """NTP Server (RFC 5908 §4): sub-options, each a server address (1), a multicast
    address (2) or a server name (3); kept in their order as (code, data)."""

    code: ClassVar[int] = p.OPTION_NTP_SERVER
    suboptions: tuple[tuple[int, bytes], ...]

    def encode(self) -> bytes:
        return b"".join(_HDR.pack(c, len(v)) + v for c, v in self.suboptions)

    @classmethod
    def of_addresses(cls, addresses: Iterable[IPv6Address]) -> NtpServer:
        return cls(tuple((p.NTP_SUBOPTION_SRV_ADDR, a.packed) for a in addresses))

    @property
    def addresses(self) -> list[IPv6Address]:
        kinds = (p.NTP_SUBOPTION_SRV_ADDR, p.NTP_SUBOPTION_MC_ADDR)
        return [IPv6Address(v) for c, v in self.suboptions if c in kinds]

    @property
    def names(self) -> list[str]:
        return [dnswire.text(dnswire.decode(v)[0])
                for c, v in self.suboptions if c == p.NTP_SUBOPTION_SRV_FQDN]


@dataclass(frozen=True, slots=True)
class BootfileUrl(Option):
    """Boot File URL (RFC 5970 §3.1): a URL in US-ASCII."""

    code: ClassVar[int] = p.OPTION_BOOTFILE_URL
    url: str

    def encode(self) -> bytes:
        return self.url.encode("ascii")


@dataclass(frozen=True, slots=True)
class ClientLinkLayer(Option):
    """Client Link-Layer Address (RFC 6939 §4), added by the relay next to the client."""

    code: ClassVar[int] = p.OPTION_CLIENT_LINKLAYER_ADDR
    link_type: int
    address: bytes

    def encode(self) -> bytes:
        return self.link_type.to_bytes(2, "big") + self.address

    @property
    def mac(self) -> str | None:
        if self.link_type == p.HTYPE_ETHER and len(self.address) == 6:
            return self.address.hex(":")
        return None


@dataclass(frozen=True, slots=True)
class SolMaxRt(Option):
    """SOL_MAX_RT (RFC 8415 §21.24): the most seconds between a client's Solicits."""

    code: ClassVar[int] = p.OPTION_SOL_MAX_RT
    seconds: int

    def encode(self) -> bytes:
        return self.seconds.to_bytes(4, "big")


# --------------------------------------------------------------------------- decoders


def _items(items: Iterable[bytes]) -> bytes:
    return b"".join(len(i).to_bytes(2, "big") + i for i in items)


def _split_items(value: bytes, reason: str) -> tuple[bytes, ...]:
    """Length-prefixed items (2-octet lengths) filling ``value`` exactly."""
    out: list[bytes] = []
    pos, end = 0, len(value)
    while pos < end:
        if end - pos < 2:
            raise Malformed(reason, "item length cut short")
        size = int.from_bytes(value[pos : pos + 2], "big")
        pos += 2
        if pos + size > end:
            raise Malformed(reason, "item runs past the option")
        out.append(value[pos : pos + size])
        pos += size
    return tuple(out)


def _dec_duid(cls: type[_DuidOption]) -> Decoder:
    return lambda value: cls(Duid.parse(value))


def _dec_flag(cls: type[_Flag]) -> Decoder:
    def decode(value: bytes) -> Option:
        _fixed(value, 0, cls.code)
        return cls()
    return decode


def _dec_uint(cls: Callable[[int], Option], code: int, size: int) -> Decoder:
    """A fixed-size unsigned integer, in network order (Preference, Elapsed Time, ...)."""
    def decode(value: bytes) -> Option:
        _fixed(value, size, code)
        return cls(int.from_bytes(value, "big"))
    return decode


def _dec_status(value: bytes) -> Option:
    if len(value) < 2:
        raise Malformed("bad_status_code", f"{len(value)} octets")
    try:
        message = value[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("bad_status_code", "message not UTF-8") from None
    return StatusCode(int.from_bytes(value[:2], "big"), message)


def _dec_iaaddr(value: bytes) -> Option:
    if len(value) < _IAADDR.size:
        raise Malformed("bad_ia_address", f"{len(value)} octets")
    raw, preferred, valid = _IAADDR.unpack_from(value)
    nested = decode_options(value[_IAADDR.size :], LEAF_OPTIONS)
    return IaAddress(_address(raw), preferred, valid, tuple(nested))


def _dec_iaprefix(value: bytes) -> Option:
    if len(value) < _IAPREFIX.size:
        raise Malformed("bad_ia_prefix", f"{len(value)} octets")
    preferred, valid, length, raw = _IAPREFIX.unpack_from(value)
    if length > 128:
        raise Malformed("bad_ia_prefix", f"prefix-length {length}")
    nested = decode_options(value[_IAPREFIX.size :], LEAF_OPTIONS)
    return IaPrefix(preferred, valid, length, _address(raw), tuple(nested))


def _dec_ia(cls: type[_Ia], name: str, table: dict[int, Decoder]) -> Decoder:
    """An IA_NA or IA_PD, its own options decoded with ``table``."""
    def decode(value: bytes) -> Option:
        if len(value) < _IA.size:
            raise Malformed("bad_ia", f"{name} of {len(value)} octets")
        iaid, t1, t2 = _IA.unpack_from(value)
        return cls(iaid, t1, t2, tuple(decode_options(value[_IA.size :], table)))
    return decode


def _dec_oro(value: bytes) -> Option:
    if len(value) % 2:
        raise Malformed("bad_option_request", f"{len(value)} octets")
    return OptionRequest(tuple(int.from_bytes(value[i : i + 2], "big")
                               for i in range(0, len(value), 2)))


def _dec_user_class(value: bytes) -> Option:
    return UserClass(_split_items(value, "bad_user_class"))


def _dec_vendor_class(value: bytes) -> Option:
    if len(value) < 4:
        raise Malformed("bad_vendor_class", f"{len(value)} octets")
    items = _split_items(value[4:], "bad_vendor_class")
    return VendorClass(int.from_bytes(value[:4], "big"), items)


def _dec_vendor_opts(value: bytes) -> Option:
    if len(value) < 4:
        raise Malformed("bad_vendor_opts", f"{len(value)} octets")
    return VendorOpts(int.from_bytes(value[:4], "big"), value[4:])


def _dec_dns_servers(value: bytes) -> Option:
    if len(value) % 16:
        raise Malformed("bad_option_length", f"option 23: {len(value)} octets")
    return DnsServers(tuple(_address(value[i : i + 16]) for i in range(0, len(value), 16)))


def _dec_domain_list(value: bytes) -> Option:
    try:
        return DomainList(dnswire.decode_list(value))
    except ValueError as error:
        raise Malformed("bad_domain_name", f"option 24: {error}") from None


def _dec_remote_id(value: bytes) -> Option:
    if len(value) < 5:  # RFC 4649 §3: "The minimum option-len is 5 octets"
        raise Malformed("bad_remote_id", f"{len(value)} octets")
    return RemoteId(int.from_bytes(value[:4], "big"), value[4:])


def _dec_subscriber_id(value: bytes) -> Option:
    if not value:
        raise Malformed("bad_subscriber_id", "empty")
    return SubscriberId(value)


def _dec_fqdn(value: bytes) -> Option:
    if not value:
        raise Malformed("bad_fqdn", "no flags")
    # RFC 4704 §4.1: the must-be-zero bits are ignored on receipt, so kept as they came.
    if len(value) == 1:
        return ClientFqdn(value[0])
    try:
        labels, absolute, end = dnswire.decode(value, 1, partial=True)
    except ValueError as error:
        raise Malformed("bad_domain_name", f"option 39: {error}") from None
    if end != len(value):
        raise Malformed("bad_domain_name", "option 39: data after the root label")
    return ClientFqdn(value[0], labels, absolute)


def _dec_ntp_server(value: bytes) -> Option:
    try:
        subs = split(value)
    except Malformed as error:
        raise Malformed("bad_ntp_server", error.detail) from None
    for code, data in subs:
        if code in (p.NTP_SUBOPTION_SRV_ADDR, p.NTP_SUBOPTION_MC_ADDR) and len(data) != 16:
            raise Malformed("bad_ntp_server", f"sub-option {code} of {len(data)} octets")
        if code == p.NTP_SUBOPTION_SRV_FQDN:
            try:
                _, _, end = dnswire.decode(data)
            except ValueError as error:
                raise Malformed("bad_domain_name", f"option 56: {error}") from None
            if end != len(data):
                raise Malformed("bad_ntp_server", "data after the server name")
    return NtpServer(tuple(subs))


def _dec_bootfile_url(value: bytes) -> Option:
    try:
        return BootfileUrl(value.decode("ascii"))
    except UnicodeDecodeError:
        raise Malformed("bad_bootfile_url", "not US-ASCII") from None


def _dec_client_link_layer(value: bytes) -> Option:
    if len(value) < 3:
        raise Malformed("bad_client_link_layer", f"{len(value)} octets")
    return ClientLinkLayer(int.from_bytes(value[:2], "big"), value[2:])


# --------------------------------------------------------------------------- tables

LEAF_OPTIONS: dict[int, Decoder] = {p.OPTION_STATUS_CODE: _dec_status}
IA_NA_OPTIONS: dict[int, Decoder] = {**LEAF_OPTIONS, p.OPTION_IAADDR: _dec_iaaddr}
IA_PD_OPTIONS: dict[int, Decoder] = {**LEAF_OPTIONS, p.OPTION_IAPREFIX: _dec_iaprefix}
MESSAGE_OPTIONS: dict[int, Decoder] = {
    p.OPTION_CLIENTID: _dec_duid(ClientId),
    p.OPTION_SERVERID: _dec_duid(ServerId),
    p.OPTION_IA_NA: _dec_ia(IaNa, "IA_NA", IA_NA_OPTIONS),
    p.OPTION_ORO: _dec_oro,
    p.OPTION_PREFERENCE: _dec_uint(Preference, p.OPTION_PREFERENCE, 1),
    p.OPTION_ELAPSED_TIME: _dec_uint(ElapsedTime, p.OPTION_ELAPSED_TIME, 2),
    p.OPTION_STATUS_CODE: _dec_status,
    p.OPTION_RAPID_COMMIT: _dec_flag(RapidCommit),
    p.OPTION_USER_CLASS: _dec_user_class,
    p.OPTION_VENDOR_CLASS: _dec_vendor_class,
    p.OPTION_VENDOR_OPTS: _dec_vendor_opts,
    p.OPTION_INTERFACE_ID: InterfaceId,
    p.OPTION_RECONF_ACCEPT: _dec_flag(ReconfigureAccept),
    p.OPTION_DNS_SERVERS: _dec_dns_servers,
    p.OPTION_DOMAIN_LIST: _dec_domain_list,
    p.OPTION_IA_PD: _dec_ia(IaPd, "IA_PD", IA_PD_OPTIONS),
    p.OPTION_REMOTE_ID: _dec_remote_id,
    p.OPTION_SUBSCRIBER_ID: _dec_subscriber_id,
    p.OPTION_CLIENT_FQDN: _dec_fqdn,
    p.OPTION_NTP_SERVER: _dec_ntp_server,
    p.OPTION_BOOTFILE_URL: _dec_bootfile_url,
    p.OPTION_CLIENT_LINKLAYER_ADDR: _dec_client_link_layer,
    p.OPTION_SOL_MAX_RT: _dec_uint(SolMaxRt, p.OPTION_SOL_MAX_RT, 4),
}
# The option classes by code (tests, and builders that take a code).
CLASSES: dict[int, type[Option]] = {
    cls.code: cls
    for cls in (ClientId, ServerId, IaNa, IaAddress, OptionRequest, Preference, ElapsedTime,
                StatusCode, RapidCommit, UserClass, VendorClass, VendorOpts, InterfaceId,
                ReconfigureAccept, DnsServers, DomainList, IaPd, IaPrefix, RemoteId,
                SubscriberId, ClientFqdn, NtpServer, BootfileUrl, ClientLinkLayer, SolMaxRt)
}
