"""DHCPv6 options from the wire: one strict decoder per option, and the tables by place.

Decoding is eager and strict: every length is checked and each known option becomes its
class (``option_classes``); what does not hold raises ``Malformed`` with a countable reason.
Where an option may be found decides what is decoded (and so bounds the recursion): a
message's options (:data:`MESSAGE_OPTIONS`), an IA_NA's (:data:`IA_NA_OPTIONS`), an IA_PD's
(:data:`IA_PD_OPTIONS`), an IA Address's or IA Prefix's (:data:`LEAF_OPTIONS`); anything
else stays a ``RawOption``. The Relay Message option (9) is ``codec``'s, in relay messages.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from ipaddress import IPv6Address

from ipamd.core import dnswire
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.option_classes import (
    BootfileUrl,
    ClientFqdn,
    ClientLinkLayer,
    DnsServers,
    DomainList,
    Flag,
    InterfaceId,
    NtpServer,
    Preference,
    RapidCommit,
    ReconfigureAccept,
    RemoteId,
    SolMaxRt,
    SubscriberId,
    UserClass,
    VendorClass,
    VendorOpts,
)
from ipamd.dhcp6.option_common import (
    ClientId,
    DuidOption,
    ElapsedTime,
    Ia,
    IaAddress,
    IaNa,
    IaPd,
    IaPrefix,
    OptionRequest,
    ServerId,
    StatusCode,
)
from ipamd.dhcp6.option_framing import (
    IA_HEAD,
    IAADDR_HEAD,
    IAPREFIX_HEAD,
    Decoder,
    Option,
    decode_options,
    fixed_length,
    split,
)
from ipamd.dhcp6.protocol import Malformed


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


def _dec_duid(cls: type[DuidOption]) -> Decoder:
    return lambda value: cls(Duid.parse(value))


def _dec_flag(cls: type[Flag]) -> Decoder:
    def decode(value: bytes) -> Option:
        fixed_length(value, 0, cls.code)
        return cls()
    return decode


def _dec_uint(cls: Callable[[int], Option], code: int, size: int) -> Decoder:
    """A fixed-size unsigned integer, in network order (Preference, Elapsed Time, ...)."""
    def decode(value: bytes) -> Option:
        fixed_length(value, size, code)
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
    if len(value) < IAADDR_HEAD.size:
        raise Malformed("bad_ia_address", f"{len(value)} octets")
    raw, preferred, valid = IAADDR_HEAD.unpack_from(value)
    nested = decode_options(value[IAADDR_HEAD.size :], LEAF_OPTIONS)
    return IaAddress(IPv6Address(raw), preferred, valid, tuple(nested))


def _dec_iaprefix(value: bytes) -> Option:
    if len(value) < IAPREFIX_HEAD.size:
        raise Malformed("bad_ia_prefix", f"{len(value)} octets")
    preferred, valid, length, raw = IAPREFIX_HEAD.unpack_from(value)
    if length > 128:
        raise Malformed("bad_ia_prefix", f"prefix-length {length}")
    nested = decode_options(value[IAPREFIX_HEAD.size :], LEAF_OPTIONS)
    return IaPrefix(preferred, valid, length, IPv6Address(raw), tuple(nested))


def _dec_ia(cls: type[Ia], name: str, table: dict[int, Decoder]) -> Decoder:
    """An IA_NA or IA_PD, its own options decoded with ``table``."""
    def decode(value: bytes) -> Option:
        if len(value) < IA_HEAD.size:
            raise Malformed("bad_ia", f"{name} of {len(value)} octets")
        iaid, t1, t2 = IA_HEAD.unpack_from(value)
        return cls(iaid, t1, t2, tuple(decode_options(value[IA_HEAD.size :], table)))
    return decode


def _dec_oro(value: bytes) -> Option:
    if len(value) % 2:
        raise Malformed("bad_option_request", f"{len(value)} octets")
    return OptionRequest(struct.unpack(f"!{len(value) // 2}H", value))


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
    return DnsServers(tuple(IPv6Address(value[i : i + 16]) for i in range(0, len(value), 16)))


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
            except ValueError as bad:  # not `error`: mypyc types it Malformed, as above
                raise Malformed("bad_domain_name", f"option 56: {bad}") from None
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
