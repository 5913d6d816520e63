"""The DHCPv6 options nearly every message carries, as plain classes (RFC 8415 §21).

Client and Server Identifier, Status Code, IA_NA, IA_PD and what they hold (IA Address, IA
Prefix), Option Request and Elapsed Time: each Solicit, Request and answer makes several.
They are ``option_framing.Plain`` classes, not frozen dataclasses: compiled
(``ipamd.dhcp.compiled``) their construction is C, a dataclass's generated ``__init__`` is
interpreted Python. Like the dataclasses of ``option_classes`` (the other options): equal
when their fields are, a ``code`` set on the class after it, ``encode()`` their data.
"""

from __future__ import annotations

from ipaddress import IPv6Address, IPv6Network

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.option_framing import (
    IA_HEAD,
    IAADDR_HEAD,
    IAPREFIX_HEAD,
    Option,
    Plain,
    encode_options,
    every,
    first,
)


class DuidOption(Plain):
    """An option whose data is a DUID (Client or Server Identifier)."""

    __slots__ = ("duid",)

    def __init__(self, duid: Duid) -> None:
        self.duid = duid

    def _fields(self) -> tuple[object, ...]:
        return (self.duid,)

    def encode(self) -> bytes:
        return self.duid.raw


class ClientId(DuidOption):
    """Client Identifier (RFC 8415 §21.2)."""

    __slots__ = ()


ClientId.code = p.OPTION_CLIENTID


class ServerId(DuidOption):
    """Server Identifier (RFC 8415 §21.3)."""

    __slots__ = ()


ServerId.code = p.OPTION_SERVERID


class StatusCode(Plain):
    """Status Code (RFC 8415 §21.13): a code and a UTF-8 message for people."""

    __slots__ = ("message", "status")

    def __init__(self, status: int, message: str = "") -> None:
        self.status = status
        self.message = message

    def _fields(self) -> tuple[object, ...]:
        return (self.status, self.message)

    def encode(self) -> bytes:
        return self.status.to_bytes(2, "big") + self.message.encode("utf-8")

    @property
    def name(self) -> str:
        return p.STATUS_NAMES.get(self.status, str(self.status))


StatusCode.code = p.OPTION_STATUS_CODE


class Nested(Plain):
    """An option that carries options of its own: an IA, an IA Address or an IA Prefix."""

    __slots__ = ("options",)
    options: tuple[Option, ...]

    @property
    def status(self) -> StatusCode | None:
        return first(self.options, StatusCode)


class IaAddress(Nested):
    """IA Address (RFC 8415 §21.6), inside an IA_NA."""

    __slots__ = ("address", "preferred", "valid")

    def __init__(self, address: IPv6Address, preferred: int, valid: int,
                 options: tuple[Option, ...] = ()) -> None:
        self.address = address
        self.preferred = preferred
        self.valid = valid
        self.options = options

    def _fields(self) -> tuple[object, ...]:
        return (self.address, self.preferred, self.valid, self.options)

    def encode(self) -> bytes:
        head = IAADDR_HEAD.pack(self.address.packed, self.preferred, self.valid)
        return head + encode_options(self.options)


IaAddress.code = p.OPTION_IAADDR


class IaPrefix(Nested):
    """IA Prefix (RFC 8415 §21.22), inside an IA_PD."""

    __slots__ = ("preferred", "prefix", "prefix_length", "valid")

    def __init__(self, preferred: int, valid: int, prefix_length: int, prefix: IPv6Address,
                 options: tuple[Option, ...] = ()) -> None:
        self.preferred = preferred
        self.valid = valid
        self.prefix_length = prefix_length
        self.prefix = prefix
        self.options = options

    def _fields(self) -> tuple[object, ...]:
        return (self.preferred, self.valid, self.prefix_length, self.prefix, self.options)

    def encode(self) -> bytes:
        head = IAPREFIX_HEAD.pack(self.preferred, self.valid, self.prefix_length,
                                  self.prefix.packed)
        return head + encode_options(self.options)

    @property
    def network(self) -> IPv6Network:
        """The prefix as a network (host bits a client sent as a hint are cleared)."""
        return IPv6Network((self.prefix, self.prefix_length), strict=False)


IaPrefix.code = p.OPTION_IAPREFIX


class Ia(Nested):
    """An IA_NA or IA_PD: the same framing, IAID, T1, T2 and options (§21.4, §21.21)."""

    __slots__ = ("iaid", "t1", "t2")

    def __init__(self, iaid: int, t1: int, t2: int, options: tuple[Option, ...] = ()) -> None:
        self.iaid = iaid
        self.t1 = t1
        self.t2 = t2
        self.options = options

    def _fields(self) -> tuple[object, ...]:
        return (self.iaid, self.t1, self.t2, self.options)

    def encode(self) -> bytes:
        return IA_HEAD.pack(self.iaid, self.t1, self.t2) + encode_options(self.options)


class IaNa(Ia):
    """Identity Association for Non-temporary Addresses (RFC 8415 §21.4)."""

    __slots__ = ()

    @property
    def addresses(self) -> list[IaAddress]:
        return every(self.options, IaAddress)


IaNa.code = p.OPTION_IA_NA


class IaPd(Ia):
    """Identity Association for Prefix Delegation (RFC 8415 §21.21)."""

    __slots__ = ()

    @property
    def prefixes(self) -> list[IaPrefix]:
        return every(self.options, IaPrefix)


IaPd.code = p.OPTION_IA_PD


class OptionRequest(Plain):
    """Option Request (RFC 8415 §21.7): the codes a client asks for, in its order."""

    __slots__ = ("codes",)

    def __init__(self, codes: tuple[int, ...]) -> None:
        self.codes = codes

    def _fields(self) -> tuple[object, ...]:
        return (self.codes,)

    def encode(self) -> bytes:
        return b"".join(c.to_bytes(2, "big") for c in self.codes)


OptionRequest.code = p.OPTION_ORO


class ElapsedTime(Plain):
    """Elapsed Time (RFC 8415 §21.9), in hundredths of a second; 0xffff is "longer"."""

    __slots__ = ("hundredths",)

    def __init__(self, hundredths: int) -> None:
        self.hundredths = hundredths

    def _fields(self) -> tuple[object, ...]:
        return (self.hundredths,)

    def encode(self) -> bytes:
        return self.hundredths.to_bytes(2, "big")


ElapsedTime.code = p.OPTION_ELAPSED_TIME
