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
``duid.Duid``. The option classes are frozen dataclasses or plain classes written as such
(``option_framing.Plain``): equal when their fields are.

This module is the one the room imports options by; they live in four: ``option_framing``
(the base class and code/length framing), ``option_common`` (the options nearly every
message carries, as plain classes), ``option_classes`` (the other options' classes) and
``option_decoders`` (each option's strict decoder and the tables by place).
"""

from __future__ import annotations

from ipamd.dhcp6.option_classes import (
    BootfileUrl,
    ClientFqdn,
    ClientLinkLayer,
    DnsServers,
    DomainList,
    Flag,
    InterfaceId,
    NtpServer,
    Opaque,
    Preference,
    RapidCommit,
    ReconfigureAccept,
    RemoteId,
    SolMaxRt,
    SubscriberId,
    UserClass,
    VendorClass,
    VendorOpts,
    items_data,
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
    Nested,
    OptionRequest,
    ServerId,
    StatusCode,
)
from ipamd.dhcp6.option_decoders import (
    CLASSES,
    IA_NA_OPTIONS,
    IA_PD_OPTIONS,
    LEAF_OPTIONS,
    MESSAGE_OPTIONS,
)
from ipamd.dhcp6.option_framing import (
    HEADER,
    IA_HEAD,
    IAADDR_HEAD,
    IAPREFIX_HEAD,
    INFINITY,
    OPTION_MAX,
    Decoder,
    Option,
    OptionT,
    Plain,
    RawOption,
    decode_options,
    encode_options,
    every,
    first,
    fixed_length,
    split,
)

__all__ = [
    "CLASSES",
    "HEADER",
    "IAADDR_HEAD",
    "IAPREFIX_HEAD",
    "IA_HEAD",
    "IA_NA_OPTIONS",
    "IA_PD_OPTIONS",
    "INFINITY",
    "LEAF_OPTIONS",
    "MESSAGE_OPTIONS",
    "OPTION_MAX",
    "BootfileUrl",
    "ClientFqdn",
    "ClientId",
    "ClientLinkLayer",
    "Decoder",
    "DnsServers",
    "DomainList",
    "DuidOption",
    "ElapsedTime",
    "Flag",
    "Ia",
    "IaAddress",
    "IaNa",
    "IaPd",
    "IaPrefix",
    "InterfaceId",
    "Nested",
    "NtpServer",
    "Opaque",
    "Option",
    "OptionRequest",
    "OptionT",
    "Plain",
    "Preference",
    "RapidCommit",
    "RawOption",
    "ReconfigureAccept",
    "RemoteId",
    "ServerId",
    "SolMaxRt",
    "StatusCode",
    "SubscriberId",
    "UserClass",
    "VendorClass",
    "VendorOpts",
    "decode_options",
    "encode_options",
    "every",
    "first",
    "fixed_length",
    "items_data",
    "split",
]
