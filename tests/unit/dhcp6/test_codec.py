"""The DHCPv6 codec on hand-built packets (tests/unit/dhcp6/wire.py), RFC sections cited."""

from __future__ import annotations

import pickle
import struct
from ipaddress import IPv6Address, IPv6Network

import pytest

from ipamd.dhcp6 import codec
from ipamd.dhcp6 import options as o
from ipamd.dhcp6.codec import Message, RelayMessage, RelayMsg, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.protocol import REASONS, Malformed
from tests.unit.dhcp6.wire import (
    DHCLIENT_SOLICIT,
    DHCRELAY_FORWARD,
    DUID_EN,
    DUID_LL,
    DUID_LLT,
    DUID_UUID,
    MAC,
    PERFDHCP_FORWARD,
    PERFDHCP_SOLICIT,
    client,
    ia,
    iaaddr,
    iaprefix,
    name,
    opt,
    relay,
)


def _solicit_with(*options: bytes) -> Message:
    message = parse(client(1, 1, opt(1, DUID_LL), *options))
    assert isinstance(message, Message)
    return message


def _one(*options: bytes) -> o.Option:
    """The option after the Client Identifier in a Solicit carrying ``options``."""
    return _solicit_with(*options).options[1]


# --------------------------------------------------------------------------- messages


def test_a_dhclient_solicit_decodes_field_by_field():
    message = parse(DHCLIENT_SOLICIT)
    assert isinstance(message, Message)
    assert (message.msg_type, message.transaction_id) == (1, 0x5A0C11)  # RFC 8415 §8
    assert message.type_name == "SOLICIT"
    duid = message.client_duid
    assert duid is not None and duid.kind == 1 and duid.mac == MAC.hex(":")
    assert message.requested_codes == (23, 24, 39)
    assert message.elapsed_hundredths == 0
    (ia_na,) = message.ia_nas
    assert (ia_na.iaid, ia_na.t1, ia_na.t2, ia_na.options) == (0x5E100001, 0, 0, ())
    assert message.ia_pds == [] and message.server_duid is None and not message.rapid_commit


def test_a_message_builds_back_to_the_same_octets():
    for packet in (DHCLIENT_SOLICIT, PERFDHCP_SOLICIT, DHCRELAY_FORWARD, PERFDHCP_FORWARD):
        assert parse(packet).to_bytes() == packet


def test_a_relay_forward_from_dhcrelay_carries_only_the_relay_message():
    outer = parse(DHCRELAY_FORWARD)
    assert isinstance(outer, RelayMessage)
    assert (outer.msg_type, outer.hop_count) == (12, 0)  # RFC 8415 §9
    assert outer.link_address == IPv6Address("2001:db8:77:1::1")
    assert outer.peer_address == IPv6Address("fe80::5eff:fe10:1")
    assert [option.code for option in outer.options] == [9]
    assert outer.interface_id is None
    assert outer.relayed == parse(DHCLIENT_SOLICIT)


def test_a_relay_forward_from_perfdhcp_a1():
    outer = parse(PERFDHCP_FORWARD)
    assert isinstance(outer, RelayMessage)
    assert outer.link_address == outer.peer_address == IPv6Address("2001:db8:77::2")
    inner = outer.relayed
    assert isinstance(inner, Message)
    assert [option.code for option in inner.options] == [8, 14, 1, 6, 3]
    assert inner.rapid_commit and inner.requested_codes == (23, 24)
    (ia_na,) = inner.ia_nas
    assert (ia_na.iaid, ia_na.t1, ia_na.t2) == (1, 3600, 5400)


def test_relays_nest_to_the_depth_a_hop_count_allows():
    # RFC 8415 §19.1.2: hop-counts 0..8 reach a server, so nine Relay-forwards at most.
    packet = DHCLIENT_SOLICIT
    for hops in range(9):
        packet = relay(12, hops, "2001:db8::1", "fe80::1", opt(9, packet))
    depth, current = 0, parse(packet)
    while isinstance(current, RelayMessage):
        depth, current = depth + 1, current.relayed
    assert depth == 9 and current == parse(DHCLIENT_SOLICIT)
    deeper = relay(12, 9, "2001:db8::1", "fe80::1", opt(9, packet))
    with pytest.raises(Malformed) as caught:
        parse(deeper)
    assert caught.value.reason == "relay_too_deep"


def test_an_interface_id_and_the_relay_options_decode():
    packet = relay(
        12, 0, "2001:db8:1::1", "fe80::1",
        opt(18, b"ge-0/0/1.100"),
        opt(37, (4491).to_bytes(4, "big") + b"port7"),  # RFC 4649 §3
        opt(38, b"sub-42"),  # RFC 4580 §2
        opt(79, b"\x00\x01" + MAC),  # RFC 6939 §4
        opt(9, DHCLIENT_SOLICIT),
    )
    outer = parse(packet)
    assert isinstance(outer, RelayMessage)
    assert outer.interface_id == b"ge-0/0/1.100"
    assert outer.first(o.RemoteId) == o.RemoteId(4491, b"port7")
    assert outer.first(o.SubscriberId) == o.SubscriberId(b"sub-42")
    link_layer = outer.first(o.ClientLinkLayer)
    assert link_layer is not None and link_layer.mac == MAC.hex(":")
    assert outer.to_bytes() == packet


def test_relay_message_is_a_message_only_inside_a_relay():
    # In a client's message option 9 means nothing (RFC 8415 §21.10): kept raw, not parsed.
    message = _solicit_with(opt(9, DHCLIENT_SOLICIT))
    assert message.options[1] == o.RawOption(9, DHCLIENT_SOLICIT)


def test_options_out_of_their_place_stay_raw():
    address = iaaddr("2001:db8::5", 100, 200)
    message = _solicit_with(opt(5, address), opt(3, ia(7, 0, 0, opt(1, DUID_LL))))
    assert message.options[1] == o.RawOption(5, address)  # an IA Address outside an IA
    assert message.ia_nas[0].options == (o.RawOption(1, DUID_LL),)


def test_unknown_options_are_kept_and_sent_back_as_they_came():
    packet = client(1, 9, opt(1, DUID_LL), opt(0xFFEE, b"\x00\xffjunk"), opt(4, b"\x00" * 12))
    message = parse(packet)
    assert message.options[1] == o.RawOption(0xFFEE, b"\x00\xffjunk")
    assert message.options[2] == o.RawOption(4, b"\x00" * 12)  # IA_TA: not decoded here
    assert message.to_bytes() == packet
    assert message.raw(0xFFEE) == [b"\x00\xffjunk"]


def test_a_message_without_options_is_fine_for_the_codec():
    message = parse(b"\x0b\x00\x00\x01")  # an Information-request, nothing else
    assert message == Message(11, 1, [])


def test_a_server_message_with_status_and_server_identifier():
    packet = client(7, 0x10203, opt(2, DUID_EN), opt(1, DUID_LLT),
                    opt(13, b"\x00\x02" + "no addresses — sorry".encode()))
    message = parse(packet)
    assert isinstance(message, Message)
    assert message.server_duid == Duid(DUID_EN)
    status = message.first(o.StatusCode)
    assert status == o.StatusCode(2, "no addresses — sorry") and status.name == "NoAddrsAvail"


# --------------------------------------------------------------------------- options one by one


def test_duid_types_are_read_and_unknown_ones_kept():
    llt, en, ll, uid = (Duid(raw) for raw in (DUID_LLT, DUID_EN, DUID_LL, DUID_UUID))
    assert (llt.kind, llt.hw_type, llt.time, llt.link_layer) == (1, 1, 0x2E5B1C00, MAC)
    assert (en.kind, en.enterprise, en.identifier) == (2, 2495, bytes(range(1, 9)))
    assert (ll.kind, ll.hw_type, ll.mac) == (3, 1, MAC.hex(":"))
    assert uid.uuid is not None and str(uid.uuid) == "9f0bd52f-8e0c-4a0f-b5a7-c7d53c3e2a11"
    for raw in (DUID_LLT, DUID_EN, DUID_LL, DUID_UUID, b"\x00\x63opaque"):
        assert _one(opt(2, raw)) == o.ServerId(Duid(raw))


def test_ia_na_with_addresses_and_status_codes():
    # RFC 8415 §21.4 / §21.6: an IA Address carries its own options (a Status Code here).
    value = ia(
        0xDEADBEEF, 1800, 2880,
        opt(5, iaaddr("2001:db8:77::10", 3600, 7200)),
        opt(5, iaaddr("2001:db8:77::11", 0, 0, opt(13, b"\x00\x00ok"))),
        opt(13, b"\x00\x03"),
    )
    ia_na = _one(opt(3, value))
    assert isinstance(ia_na, o.IaNa)
    assert (ia_na.iaid, ia_na.t1, ia_na.t2) == (0xDEADBEEF, 1800, 2880)
    first, second = ia_na.addresses
    assert (first.address, first.preferred, first.valid) == (
        IPv6Address("2001:db8:77::10"), 3600, 7200)
    assert first.status is None and second.status == o.StatusCode(0, "ok")
    assert ia_na.status == o.StatusCode(3, "")  # NoBinding, no message
    assert ia_na.encode() == value


def test_ia_pd_with_a_prefix():
    value = ia(1, 0, 0, opt(26, iaprefix("2001:db8:4400::", 40, 3600, 7200)))
    ia_pd = _one(opt(25, value))
    assert isinstance(ia_pd, o.IaPd)
    (prefix,) = ia_pd.prefixes
    assert (prefix.prefix_length, prefix.preferred, prefix.valid) == (40, 3600, 7200)
    assert prefix.network == IPv6Network("2001:db8:4400::/40")
    # RFC 8415 §18.2.1: a client may hint a length alone (prefix ::)
    hint = _one(opt(25, ia(2, 0, 0, opt(26, iaprefix("::", 56, 0, 0)))))
    assert isinstance(hint, o.IaPd) and hint.prefixes[0].network == IPv6Network("::/56")


@pytest.mark.parametrize(("data", "expected"), [
    (opt(6, b""), o.OptionRequest(())),
    (opt(7, b"\xff"), o.Preference(255)),
    (opt(8, b"\xff\xff"), o.ElapsedTime(0xFFFF)),
    (opt(14), o.RapidCommit()),
    (opt(20), o.ReconfigureAccept()),
    (opt(15, b"\x00\x04iPXE\x00\x00"), o.UserClass((b"iPXE", b""))),
    (opt(16, (311).to_bytes(4, "big") + b"\x00\x08MSFT 5.0"), o.VendorClass(311, (b"MSFT 5.0",))),
    (opt(18, b""), o.InterfaceId(b"")),
    (opt(23, IPv6Address("2001:db8::53").packed + IPv6Address("2001:db8::35").packed),
     o.DnsServers((IPv6Address("2001:db8::53"), IPv6Address("2001:db8::35")))),
    (opt(59, b"tftp://[2001:db8::69]/boot.efi"), o.BootfileUrl("tftp://[2001:db8::69]/boot.efi")),
    (opt(82, (3600).to_bytes(4, "big")), o.SolMaxRt(3600)),
])
def test_simple_options(data: bytes, expected: o.Option):
    assert _one(data) == expected
    assert expected.encode() == data[4:]


def test_vendor_specific_information_keeps_its_data_and_reads_suboptions():
    data = (4491).to_bytes(4, "big") + opt(1, b"\x01\x02") + opt(32, b"")
    vendor = _one(opt(17, data))
    assert vendor == o.VendorOpts(4491, data[4:])
    assert isinstance(vendor, o.VendorOpts)
    assert vendor.suboptions() == [(1, b"\x01\x02"), (32, b"")]
    assert o.VendorOpts.of(4491, [(1, b"\x01\x02"), (32, b"")]) == vendor
    odd = _one(opt(17, (9).to_bytes(4, "big") + b"\x00\x01\x00"))  # not option-shaped: kept
    assert isinstance(odd, o.VendorOpts)
    with pytest.raises(Malformed) as caught:
        odd.suboptions()
    assert caught.value.reason == "bad_vendor_opts"


def test_domain_search_list_names():
    # RFC 3646 §4 with names in RFC 1035 §3.1 form, uncompressed (RFC 8415 §10).
    domains = _one(opt(24, name("example.com") + name("lab.example.net")))
    assert isinstance(domains, o.DomainList)
    assert domains.names == ((b"example", b"com"), (b"lab", b"example", b"net"))
    assert domains.texts == ["example.com.", "lab.example.net."]


@pytest.mark.parametrize(("data", "flags", "text", "absolute"), [
    (b"\x01" + name("host.example.com"), 1, "host.example.com.", True),  # S set, full name
    (b"\x00\x04host", 0, "host", False),  # a partial name (RFC 4704 §4.2)
    (b"\x04", 4, "", False),  # N set, no name: let the server choose
    (b"\xf9\x00", 0xF9, ".", True),  # must-be-zero bits ignored on receipt, kept (§4.1)
])
def test_client_fqdn(data: bytes, flags: int, text: str, absolute: bool):
    fqdn = _one(opt(39, data))
    assert isinstance(fqdn, o.ClientFqdn)
    assert (fqdn.flags, fqdn.name, fqdn.absolute) == (flags, text, absolute)
    assert fqdn.encode() == data


def test_ntp_server_suboptions():
    # RFC 5908 §4: server address (1), multicast address (2), server FQDN (3).
    data = (opt(1, IPv6Address("2001:db8::123").packed) + opt(2, IPv6Address("ff05::101").packed)
            + opt(3, name("ntp.example.com")))
    ntp = _one(opt(56, data))
    assert isinstance(ntp, o.NtpServer)
    assert ntp.addresses == [IPv6Address("2001:db8::123"), IPv6Address("ff05::101")]
    assert ntp.names == ["ntp.example.com."]
    assert ntp.encode() == data
    assert o.NtpServer.of_addresses([IPv6Address("2001:db8::123")]).encode() == data[:20]


# --------------------------------------------------------------------------- malformed


def _deep_ia_overrun() -> bytes:
    # The IA Address claims more octets than its IA_NA holds (RFC 8415 §21.1's option-len).
    inner = struct.pack("!HH", 5, 40) + IPv6Address("2001:db8::1").packed + bytes(8)
    return opt(3, ia(1, 0, 0) + inner)


MALFORMED = [
    (b"", "too_short"),
    (b"\x01\x00\x00", "too_short"),
    (relay(12, 0, "::", "::")[:33], "too_short"),
    (b"\x00\x00\x00\x00", "unknown_message_type"),
    (b"\x0e\x00\x00\x00", "unknown_message_type"),  # Leasequery (RFC 5007): not ours
    (b"\xff" + bytes(40), "unknown_message_type"),
    (client(1, 1, b"\x00\x01\x00"), "truncated_option"),
    (client(1, 1, opt(8, b"\0\0")[:5]), "option_too_long"),
    (client(1, 1, struct.pack("!HH", 1, 200) + DUID_LL), "option_too_long"),
    (client(1, 1, _deep_ia_overrun()), "option_too_long"),
    (relay(12, 0, "::1", "::1", struct.pack("!HH", 9, 4) + b"\x01"), "option_too_long"),
    (relay(12, 0, "::1", "::1", opt(9, b"\x0b\x00")), "too_short"),  # the inner one
    (relay(12, 0, "::1", "::1", opt(9, b"\x2a\x00\x00\x00")), "unknown_message_type"),
    (client(1, 1, opt(1, b"\x00\x03")), "bad_duid"),
    (client(1, 1, opt(1, b"\x00\x01\x00\x01\x00\x00\x00\x00")), "bad_duid"),  # LLT, no address
    (client(1, 1, opt(1, DUID_UUID + b"\x00")), "bad_duid"),
    (client(1, 1, opt(2, b"\x00\x02" + bytes(129))), "bad_duid"),  # over 130 octets
    (client(1, 1, opt(3, bytes(11))), "bad_ia"),
    (client(1, 1, opt(25, bytes(4))), "bad_ia"),
    (client(1, 1, opt(3, ia(1, 0, 0, opt(5, bytes(23))))), "bad_ia_address"),
    (client(1, 1, opt(25, ia(1, 0, 0, opt(26, bytes(24))))), "bad_ia_prefix"),
    (client(1, 1, opt(25, ia(1, 0, 0, opt(26, iaprefix("::", 129, 0, 0))))), "bad_ia_prefix"),
    (client(1, 1, opt(13, b"\x00")), "bad_status_code"),
    (client(1, 1, opt(13, b"\x00\x01\xff\xfe")), "bad_status_code"),
    (client(1, 1, opt(3, ia(1, 0, 0, opt(5, iaaddr("::1", 0, 0, opt(13, b"\x00")))))),
     "bad_status_code"),
    (client(1, 1, opt(6, b"\x00\x17\x00")), "bad_option_request"),
    (client(1, 1, opt(7, b"")), "bad_option_length"),
    (client(1, 1, opt(8, b"\x00")), "bad_option_length"),
    (client(1, 1, opt(14, b"\x00")), "bad_option_length"),
    (client(1, 1, opt(20, b"\x01")), "bad_option_length"),
    (client(1, 1, opt(23, bytes(15))), "bad_option_length"),
    (client(1, 1, opt(82, bytes(2))), "bad_option_length"),
    (client(1, 1, opt(15, b"\x00\x05abc")), "bad_user_class"),
    (client(1, 1, opt(15, b"\x00")), "bad_user_class"),
    (client(1, 1, opt(16, b"\x00\x00\x01")), "bad_vendor_class"),
    (client(1, 1, opt(16, bytes(4) + b"\x00\x09MSFT")), "bad_vendor_class"),
    (client(1, 1, opt(17, bytes(3))), "bad_vendor_opts"),
    (client(1, 1, opt(24, b"\x07example\xc0\x0c")), "bad_domain_name"),  # compression
    (client(1, 1, opt(24, b"\x07example\x03com")), "bad_domain_name"),  # no root label
    (client(1, 1, opt(24, b"\x40" + bytes(64) + b"\x00")), "bad_domain_name"),  # label > 63
    (client(1, 1, opt(24, (b"\x3f" + b"a" * 63) * 4 + b"\x00")), "bad_domain_name"),  # > 255
    (client(1, 1, opt(39, b"")), "bad_fqdn"),
    (client(1, 1, opt(39, b"\x01\x04host\x00trailing")), "bad_domain_name"),
    (client(1, 1, opt(56, opt(1, bytes(15)))), "bad_ntp_server"),
    (client(1, 1, opt(56, b"\x00\x01\x00")), "bad_ntp_server"),
    (client(1, 1, opt(56, opt(3, b"\x03ntp"))), "bad_domain_name"),
    (client(1, 1, opt(56, opt(3, name("ntp.example") + b"x"))), "bad_ntp_server"),
    (client(1, 1, opt(59, "tftp://hôte/boot".encode())), "bad_bootfile_url"),
    (client(1, 1, opt(37, bytes(4))), "bad_remote_id"),
    (client(1, 1, opt(38, b"")), "bad_subscriber_id"),
    (client(1, 1, opt(79, b"\x00\x01")), "bad_client_link_layer"),
]


@pytest.mark.parametrize(("packet", "reason"), MALFORMED)
def test_malformed_packets_are_refused_with_a_countable_reason(packet: bytes, reason: str):
    with pytest.raises(Malformed) as caught:
        parse(packet)
    assert caught.value.reason == reason


def test_every_codec_reason_is_exercised_above_or_belongs_to_a_later_check():
    exercised = {reason for _, reason in MALFORMED} | {"relay_too_deep"}
    # Relay-chain rules are dhcp6.relay's (tests/unit/dhcp6/test_relay.py).
    later = {"hop_limit", "no_relay_message", "bad_relay_nesting"}
    assert REASONS - exercised == later


def test_malformed_is_a_value_error_with_a_known_reason_and_pickles():
    error = Malformed("bad_duid", "2 octets")
    assert isinstance(error, ValueError) and str(error) == "bad_duid: 2 octets"
    again = pickle.loads(pickle.dumps(error))
    assert (again.reason, again.detail) == ("bad_duid", "2 octets")
    with pytest.raises(AssertionError):
        Malformed("not_a_reason")


def test_parse_takes_bytearray_and_memoryview():
    assert parse(bytearray(DHCLIENT_SOLICIT)) == parse(memoryview(DHCLIENT_SOLICIT))


# --------------------------------------------------------------------------- building


def test_a_reply_built_from_classes_has_the_wire_layout_of_rfc_8415():
    reply = Message(7, 0x5A0C11, [
        o.ServerId(Duid(DUID_EN)),
        o.ClientId(Duid(DUID_LLT)),
        o.IaNa(0x5E100001, 1800, 2880, (
            o.IaAddress(IPv6Address("2001:db8:77:1::100"), 3600, 7200),)),
        o.DnsServers((IPv6Address("2001:db8::53"),)),
        o.DomainList(((b"example", b"com"),)),
    ])
    expected = client(
        7, 0x5A0C11, opt(2, DUID_EN), opt(1, DUID_LLT),
        opt(3, ia(0x5E100001, 1800, 2880, opt(5, iaaddr("2001:db8:77:1::100", 3600, 7200)))),
        opt(23, IPv6Address("2001:db8::53").packed), opt(24, name("example.com")),
    )
    assert reply.to_bytes() == expected


def test_a_relay_reply_nests_the_reply():
    reply = parse(client(7, 1, opt(2, DUID_EN)))
    assert isinstance(reply, Message)
    outer = RelayMessage(13, 0, IPv6Address("2001:db8:77:1::1"), IPv6Address("fe80::1"),
                         [o.InterfaceId(b"eth1"), RelayMsg(reply)])
    expected = relay(13, 0, "2001:db8:77:1::1", "fe80::1", opt(18, b"eth1"),
                     opt(9, client(7, 1, opt(2, DUID_EN))))
    assert outer.to_bytes() == expected


def test_building_refuses_what_the_wire_cannot_hold():
    with pytest.raises(ValueError, match="transaction-id three"):
        Message(1, 1 << 24).to_bytes()
    with pytest.raises(ValueError, match="msg-type is one octet"):
        Message(256, 1).to_bytes()
    with pytest.raises(ValueError, match="hop-count are one octet"):
        RelayMessage(12, 256, IPv6Address(0), IPv6Address(0)).to_bytes()
    with pytest.raises(ValueError, match="65535"):
        Message(1, 1, [o.RawOption(99, bytes(65536))]).to_bytes()


def test_the_codec_exports_what_the_server_uses():
    assert set(codec.__all__) == {"Malformed", "Message", "RelayMessage", "RelayMsg", "parse"}
