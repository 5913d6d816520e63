"""The DHCPv6 options (RFC 8415 §21 and the RFCs named below): one small class per option.

Every class is a frozen dataclass (equal when its fields are) with a ``code`` (set on the
class after it, ``option_framing.Option`` says why) and ``encode()`` (its data, without code
and length; ``option_framing``); the options nearly every message carries (identifiers,
IAs, Option Request, Elapsed Time, Status Code) are ``option_common``'s plain classes.
Decoding them from the wire is ``option_decoders``'; values: addresses are
``ipaddress.IPv6Address``, domain names tuples of raw labels (``core.dnswire``), DUIDs
``duid.Duid``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address

from ipamd.core import dnswire
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.option_framing import (
    HEADER,
    Option,
    split,
)
from ipamd.dhcp6.protocol import Malformed


@dataclass(frozen=True, slots=True)
class Preference(Option):
    """Preference (RFC 8415 §21.8): 0..255; 255 makes a client take this Advertise at once."""

    value: int

    def encode(self) -> bytes:
        return bytes((self.value,))


Preference.code = p.OPTION_PREFERENCE


@dataclass(frozen=True, slots=True)
class Flag(Option):
    """An option with no data: its presence is what it says."""

    def encode(self) -> bytes:
        return b""


@dataclass(frozen=True, slots=True)
class RapidCommit(Flag):
    """Rapid Commit (RFC 8415 §21.14): no data."""


RapidCommit.code = p.OPTION_RAPID_COMMIT


@dataclass(frozen=True, slots=True)
class ReconfigureAccept(Flag):
    """Reconfigure Accept (RFC 8415 §21.20): no data."""


ReconfigureAccept.code = p.OPTION_RECONF_ACCEPT


@dataclass(frozen=True, slots=True)
class UserClass(Option):
    """User Class (RFC 8415 §21.15): opaque items, each with a 2-octet length."""

    items: tuple[bytes, ...]

    def encode(self) -> bytes:
        return items_data(self.items)


UserClass.code = p.OPTION_USER_CLASS


@dataclass(frozen=True, slots=True)
class VendorClass(Option):
    """Vendor Class (RFC 8415 §21.16): an enterprise number and opaque items."""

    enterprise: int
    items: tuple[bytes, ...]

    def encode(self) -> bytes:
        return self.enterprise.to_bytes(4, "big") + items_data(self.items)


VendorClass.code = p.OPTION_VENDOR_CLASS


@dataclass(frozen=True, slots=True)
class VendorOpts(Option):
    """Vendor-specific Information (RFC 8415 §21.17): an enterprise number and data.

    §21.17 recommends sub-options shaped as options; not every vendor follows it, so the
    data is kept as sent and :meth:`suboptions` reads it as such when asked."""

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
        data = b"".join(HEADER.pack(c, len(v)) + v for c, v in suboptions)
        return cls(enterprise, data)


VendorOpts.code = p.OPTION_VENDOR_OPTS


@dataclass(frozen=True, slots=True)
class Opaque(Option):
    """An option whose data is kept as octets, as sent."""

    data: bytes

    def encode(self) -> bytes:
        return self.data


@dataclass(frozen=True, slots=True)
class InterfaceId(Opaque):
    """Interface-Id (RFC 8415 §21.18): opaque, set by a relay, echoed in the Relay-reply."""


InterfaceId.code = p.OPTION_INTERFACE_ID


@dataclass(frozen=True, slots=True)
class DnsServers(Option):
    """DNS Recursive Name Server (RFC 3646 §3)."""

    addresses: tuple[IPv6Address, ...]

    def encode(self) -> bytes:
        return b"".join(a.packed for a in self.addresses)


DnsServers.code = p.OPTION_DNS_SERVERS


@dataclass(frozen=True, slots=True)
class DomainList(Option):
    """Domain Search List (RFC 3646 §4): absolute names, uncompressed (RFC 8415 §10)."""

    names: tuple[dnswire.Labels, ...]

    def encode(self) -> bytes:
        return b"".join(dnswire.encode(name) for name in self.names)

    @property
    def texts(self) -> list[str]:
        return [dnswire.text(name) for name in self.names]


DomainList.code = p.OPTION_DOMAIN_LIST


@dataclass(frozen=True, slots=True)
class RemoteId(Option):
    """Relay Agent Remote-ID (RFC 4649 §3): an enterprise number and the relay's identifier."""

    enterprise: int
    remote_id: bytes

    def encode(self) -> bytes:
        return self.enterprise.to_bytes(4, "big") + self.remote_id


RemoteId.code = p.OPTION_REMOTE_ID


@dataclass(frozen=True, slots=True)
class SubscriberId(Opaque):
    """Relay Agent Subscriber-ID (RFC 4580 §2): opaque, at least one octet."""


SubscriberId.code = p.OPTION_SUBSCRIBER_ID


@dataclass(frozen=True, slots=True)
class ClientFqdn(Option):
    """Client FQDN (RFC 4704 §4): flags (N, O, S) and a name, possibly partial or empty."""

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


ClientFqdn.code = p.OPTION_CLIENT_FQDN


@dataclass(frozen=True, slots=True)
class NtpServer(Option):
    """NTP Server (RFC 5908 §4): sub-options, each a server address (1), a multicast
    address (2) or a server name (3); kept in their order as (code, data)."""

    suboptions: tuple[tuple[int, bytes], ...]

    def encode(self) -> bytes:
        return b"".join(HEADER.pack(c, len(v)) + v for c, v in self.suboptions)

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


NtpServer.code = p.OPTION_NTP_SERVER


@dataclass(frozen=True, slots=True)
class BootfileUrl(Option):
    """Boot File URL (RFC 5970 §3.1): a URL in US-ASCII."""

    url: str

    def encode(self) -> bytes:
        return self.url.encode("ascii")


BootfileUrl.code = p.OPTION_BOOTFILE_URL


@dataclass(frozen=True, slots=True)
class ClientLinkLayer(Option):
    """Client Link-Layer Address (RFC 6939 §4), added by the relay next to the client."""

    link_type: int
    address: bytes

    def encode(self) -> bytes:
        return self.link_type.to_bytes(2, "big") + self.address

    @property
    def mac(self) -> str | None:
        if self.link_type == p.HTYPE_ETHER and len(self.address) == 6:
            return self.address.hex(":")
        return None


ClientLinkLayer.code = p.OPTION_CLIENT_LINKLAYER_ADDR


@dataclass(frozen=True, slots=True)
class SolMaxRt(Option):
    """SOL_MAX_RT (RFC 8415 §21.24): the most seconds between a client's Solicits."""

    seconds: int

    def encode(self) -> bytes:
        return self.seconds.to_bytes(4, "big")


SolMaxRt.code = p.OPTION_SOL_MAX_RT


def items_data(items: Iterable[bytes]) -> bytes:
    return b"".join(len(i).to_bytes(2, "big") + i for i in items)
