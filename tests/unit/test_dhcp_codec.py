"""DHCPv4 codec: parse, accessors, builder (RFC 2131, 2132, 3396, 4702, 3004)."""

from __future__ import annotations

import struct

import pytest

from ipamd.dhcp import options as o
from ipamd.dhcp.codec import (
    PROTECTED_OPTIONS,
    DhcpMessage,
    MalformedPacket,
    parse,
)
from ipamd.dhcp.options import REASONS, ClientFqdn, ip_from_str, ip_to_str

MAC = bytes.fromhex("000b8201fc42")
COOKIE = bytes((99, 130, 83, 99))


def ip(text: str) -> int:
    return ip_from_str(text)


def raw_packet(
    opts: bytes,
    *,
    op: int = 1,
    htype: int = 1,
    hlen: int = 6,
    hops: int = 0,
    xid: int = 0x3D1D,
    secs: int = 0,
    flags: int = 0,
    ciaddr: str = "0.0.0.0",
    yiaddr: str = "0.0.0.0",
    siaddr: str = "0.0.0.0",
    giaddr: str = "0.0.0.0",
    chaddr: bytes = MAC,
    sname: bytes = b"",
    file: bytes = b"",
    cookie: bytes = COOKIE,
    pad_to: int = 300,
) -> bytes:
    """Hand-assembled packet, independent of the builder under test."""
    head = bytes((op, htype, hlen, hops)) + struct.pack("!IHH", xid, secs, flags)
    for addr in (ciaddr, yiaddr, siaddr, giaddr):
        head += bytes(int(x) for x in addr.split("."))
    head += chaddr.ljust(16, b"\0") + sname.ljust(64, b"\0") + file.ljust(128, b"\0")
    assert len(head) == 236
    pkt = head + cookie + opts
    return pkt.ljust(pad_to, b"\0")


def opt(code: int, value: bytes) -> bytes:
    return bytes((code, len(value))) + value


def walk(region: bytes) -> list[tuple[int, bytes]]:
    """Option instances of one region in wire order (no concatenation)."""
    out = []
    pos = 0
    while pos < len(region):
        code = region[pos]
        if code == 0:
            pos += 1
            continue
        if code == 255:
            break
        ln = region[pos + 1]
        out.append((code, region[pos + 2 : pos + 2 + ln]))
        pos += 2 + ln
    return out


# Wireshark sample capture "dhcp.pcap", first packet (DHCPDISCOVER), UDP payload.
WIRESHARK_DISCOVER = (
    bytes.fromhex("0101060000003d1d00000000")  # op htype hlen hops, xid, secs, flags
    + bytes(16)  # ciaddr yiaddr siaddr giaddr
    + bytes.fromhex("000b8201fc42")
    + bytes(10 + 64 + 128)  # chaddr padding, sname, file
    + bytes.fromhex("63825363")
    + bytes.fromhex("350101")  # DHCPDISCOVER
    + bytes.fromhex("3d0701000b8201fc42")  # client id
    + bytes.fromhex("320400000000")  # requested 0.0.0.0
    + bytes.fromhex("37040103062a")  # PRL 1 3 6 42
    + bytes.fromhex("ff")
    + bytes(7)
)


# --------------------------------------------------------------------------- parse


def test_parse_wireshark_discover() -> None:
    assert len(WIRESHARK_DISCOVER) == 272
    m = parse(WIRESHARK_DISCOVER)
    assert (m.op, m.htype, m.hlen, m.hops) == (1, 1, 6, 0)
    assert m.xid == 0x3D1D
    assert m.secs == 0 and m.flags == 0 and not m.broadcast
    assert (m.ciaddr, m.yiaddr, m.siaddr, m.giaddr) == (0, 0, 0, 0)
    assert m.chaddr == MAC + bytes(10)
    assert m.hwaddr == MAC
    assert m.mac == "00:0b:82:01:fc:42"
    assert m.message_type == o.DISCOVER
    assert m.client_id == b"\x01" + MAC
    assert m.requested_ip == 0
    assert m.parameter_request_list == bytes((1, 3, 6, 42))
    assert list(m.options) == [53, 61, 50, 55]
    assert m.server_id is None
    assert m.max_message_size is None
    assert m.hostname is None
    assert m.sname == b"" and m.file == b""
    assert m.overload == 0


def test_parse_typical_discover_accessors() -> None:
    pkt = raw_packet(
        opt(53, b"\x01")
        + opt(61, b"\x01" + MAC)
        + opt(50, bytes((192, 168, 1, 100)))
        + opt(57, struct.pack("!H", 1500))
        + opt(12, b"laptop\x00")
        + opt(60, b"MSFT 5.0")
        + opt(55, bytes((1, 3, 6, 15, 119, 252)))
        + opt(118, bytes((10, 1, 2, 0)))
        + b"\xff",
        flags=0x8000,
        giaddr="10.1.2.1",
        hops=1,
    )
    m = parse(pkt)
    assert m.broadcast
    assert m.hops == 1
    assert m.giaddr == ip("10.1.2.1")
    assert ip_to_str(m.requested_ip or 0) == "192.168.1.100"
    assert m.max_message_size == 1500
    assert m.hostname == "laptop"
    assert m.vendor_class == b"MSFT 5.0"
    assert list(m.parameter_request_list) == [1, 3, 6, 15, 119, 252]
    assert m.subnet_selection == ip("10.1.2.0")
    assert m.user_class is None
    assert m.client_fqdn is None
    assert m.relay_agent_info is None


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_parse_accepts_buffers(kind: type) -> None:
    m = parse(kind(WIRESHARK_DISCOVER))
    assert m.message_type == o.DISCOVER
    assert all(type(v) is bytes for v in m.options.values())


def test_pad_options_and_trailing_garbage_after_end() -> None:
    pkt = raw_packet(
        b"\x00\x00" + opt(53, b"\x03") + b"\x00" + opt(12, b"h") + b"\xff" + b"\x07\xff\x13",
    )
    m = parse(pkt)
    assert m.options == {53: b"\x03", 12: b"h"}


def test_missing_end_option_is_tolerated() -> None:
    pkt = raw_packet(opt(53, b"\x01") + opt(12, b"abc"), pad_to=0)
    assert parse(pkt).options == {53: b"\x01", 12: b"abc"}


def test_minimum_length_is_240_plus_options() -> None:
    pkt = raw_packet(opt(53, b"\x01"), pad_to=0)
    assert len(pkt) == 243
    assert parse(pkt).message_type == 1


def test_unknown_and_empty_options_are_kept_raw() -> None:
    pkt = raw_packet(opt(53, b"\x01") + opt(250, b"\x01\x02") + opt(80, b"") + b"\xff")
    m = parse(pkt)
    assert m.options[250] == b"\x01\x02"
    assert m.options[80] == b""


def test_rfc3396_concatenation_in_options_field() -> None:
    pkt = raw_packet(
        opt(53, b"\x05") + opt(121, b"abc") + opt(12, b"x") + opt(121, b"def") + b"\xff"
    )
    assert parse(pkt).options[121] == b"abcdef"


def test_sname_and_file_strings_when_not_overloaded() -> None:
    pkt = raw_packet(
        opt(53, b"\x02") + b"\xff", op=2, sname=b"tftp.example\x00junk", file=b"pxelinux.0"
    )
    m = parse(pkt)
    assert m.sname == b"tftp.example"
    assert m.file == b"pxelinux.0"
    assert m.overload == 0


@pytest.mark.parametrize(
    ("value", "in_file", "in_sname"),
    [(1, True, False), (2, False, True), (3, True, True)],
)
def test_overload_fields(value: int, in_file: bool, in_sname: bool) -> None:
    file = opt(12, b"from-file") + b"\xff" if in_file else b"bootfile"
    sname = opt(15, b"from.sname") + b"\xff" if in_sname else b"server"
    pkt = raw_packet(opt(53, b"\x01") + opt(52, bytes((value,))) + b"\xff", sname=sname, file=file)
    m = parse(pkt)
    assert m.overload == value
    assert m.options[52] == bytes((value,))
    assert (m.options.get(12) == b"from-file") is in_file
    assert (m.options.get(15) == b"from.sname") is in_sname
    # An overloaded field is not a string.
    assert m.file == (b"" if in_file else b"bootfile")
    assert m.sname == (b"" if in_sname else b"server")


def test_overload_rfc3396_concatenation_order_options_file_sname() -> None:
    pkt = raw_packet(
        opt(53, b"\x01") + opt(52, b"\x03") + opt(43, b"AA") + b"\xff",
        file=b"\x00" + opt(43, b"BB") + b"\xff",
        sname=opt(43, b"CC") + b"\x00\xff",
    )
    assert parse(pkt).options[43] == b"AABBCC"


def test_overload_without_end_in_field_and_stray_52_ignored() -> None:
    pkt = raw_packet(
        opt(53, b"\x01") + opt(52, b"\x01") + b"\xff",
        file=opt(52, b"\x02") + opt(66, b"tftp"),  # no end: runs to the end of the field
        sname=opt(12, b"must-not-be-read") + b"\xff",
    )
    m = parse(pkt)
    assert m.options[52] == b"\x01"
    assert m.options[66] == b"tftp"
    assert 12 not in m.options
    assert m.sname.startswith(b"\x0c")  # sname not overloaded: kept as (odd) bytes


def test_message_type_inform_and_extended_types() -> None:
    for mt in (o.INFORM, o.LEASEQUERY, o.TLS):
        m = parse(raw_packet(opt(53, bytes((mt,))) + b"\xff"))
        assert m.message_type == mt


# --------------------------------------------------------------------------- malformed


def _malformed_cases() -> list[tuple[str, bytes]]:
    good = opt(53, b"\x01") + b"\xff"
    return [
        ("too_short", raw_packet(good)[:239]),
        ("too_short", b""),
        ("bad_op", raw_packet(good, op=3)),
        ("bad_op", raw_packet(good, op=0)),
        ("bad_hlen", raw_packet(good, hlen=17)),
        ("bad_cookie", raw_packet(good, cookie=b"\x63\x82\x53\x64")),
        ("truncated_option", raw_packet(opt(53, b"\x01") + b"\x0c\x10abc", pad_to=0)),
        ("truncated_option", raw_packet(opt(53, b"\x01") + b"\x0c", pad_to=0)),
        (
            "truncated_option",
            raw_packet(opt(53, b"\x01") + opt(52, b"\x01") + b"\xff", file=b"\x0c\xf0abc"),
        ),
        (
            "truncated_option",
            raw_packet(opt(53, b"\x01") + opt(52, b"\x02") + b"\xff", sname=b"\x00" * 63 + b"\x0c"),
        ),
        ("bad_overload", raw_packet(opt(53, b"\x01") + opt(52, b"\x04") + b"\xff")),
        ("bad_overload", raw_packet(opt(53, b"\x01") + opt(52, b"\x00") + b"\xff")),
        ("bad_overload", raw_packet(opt(53, b"\x01") + opt(52, b"\x01\x01") + b"\xff")),
        ("no_message_type", raw_packet(b"\xff")),
        ("no_message_type", raw_packet(opt(12, b"bootp-client") + b"\xff")),
        ("bad_message_type", raw_packet(opt(53, b"\x00") + b"\xff")),
        ("bad_message_type", raw_packet(opt(53, b"\x13") + b"\xff")),
        ("bad_message_type", raw_packet(opt(53, b"") + b"\xff")),
        ("bad_message_type", raw_packet(opt(53, b"\x01") + opt(53, b"\x01") + b"\xff")),
    ]


@pytest.mark.parametrize(("reason", "data"), _malformed_cases())
def test_malformed_reasons(reason: str, data: bytes) -> None:
    with pytest.raises(MalformedPacket) as exc_info:
        parse(data)
    assert exc_info.value.reason == reason
    assert reason in REASONS


def test_malformed_packet_is_value_error_and_picklable() -> None:
    import pickle

    err = MalformedPacket("bad_cookie", "detail")
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert again.reason == "bad_cookie" and again.detail == "detail"
    with pytest.raises(AssertionError):
        MalformedPacket("not_a_reason")


def test_hlen_16_is_accepted() -> None:
    m = parse(raw_packet(opt(53, b"\x01") + b"\xff", htype=32, hlen=16, chaddr=bytes(range(16))))
    assert m.hwaddr == bytes(range(16))
    assert m.mac is None


@pytest.mark.parametrize(
    ("code", "attr"),
    [(50, "requested_ip"), (54, "server_id"), (118, "subnet_selection")],
)
@pytest.mark.parametrize("value", [b"", b"\x01\x02\x03", b"\x01\x02\x03\x04\x05"])
def test_address_option_bad_length(code: int, attr: str, value: bytes) -> None:
    m = parse(raw_packet(opt(53, b"\x03") + opt(code, value) + b"\xff"))
    with pytest.raises(MalformedPacket) as exc_info:
        getattr(m, attr)
    assert exc_info.value.reason == "bad_option_length"


# --------------------------------------------------------------------------- accessors


def test_mac_only_for_ethernet() -> None:
    assert parse(raw_packet(opt(53, b"\x01") + b"\xff", htype=6)).mac is None
    assert parse(raw_packet(opt(53, b"\x01") + b"\xff", hlen=8)).mac is None
    m = parse(raw_packet(opt(53, b"\x01") + b"\xff", chaddr=bytes.fromhex("AABBCCDDEEFF")))
    assert m.mac == "aa:bb:cc:dd:ee:ff"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x05\xdc", 1500),
        (b"\x01\x2c", 576),
        (b"\x02\x40", 576),
        (b"\x02\x41", 577),
        (b"\x05", None),
    ],
)
def test_max_message_size_clamped(value: bytes, expected: int | None) -> None:
    m = parse(raw_packet(opt(53, b"\x01") + opt(57, value) + b"\xff"))
    assert m.max_message_size == expected


def test_hostname_is_lenient() -> None:
    m = parse(raw_packet(opt(53, b"\x01") + opt(12, b"caf\xe9\xff-pc\x00\x00") + b"\xff"))
    assert m.hostname is not None
    assert m.hostname.startswith("caf") and m.hostname.endswith("-pc")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x04iPXE\x03foo", [b"iPXE", b"foo"]),  # RFC 3004
        (b"iPXE", [b"iPXE"]),  # bare string: 'i' (105) overruns -> one instance
        (b"\x03ab", [b"\x03ab"]),  # truncated instance -> raw
        (b"\x00abc", [b"\x00abc"]),  # zero-length instance is not RFC 3004
        (b"", []),
    ],
)
def test_user_class(value: bytes, expected: list[bytes]) -> None:
    m = parse(raw_packet(opt(53, b"\x01") + opt(77, value) + b"\xff"))
    assert m.user_class == expected


def test_user_class_encode_roundtrip() -> None:
    assert o.encode_user_class([b"iPXE", b"x"]) == b"\x04iPXE\x01x"
    assert o.decode_user_class(o.encode_user_class([b"a" * 255])) == [b"a" * 255]
    with pytest.raises(ValueError):
        o.encode_user_class([b""])


# --------------------------------------------------------------------------- FQDN (81)


def test_fqdn_wire_format_fully_qualified() -> None:
    value = b"\x05\x00\x00\x04host\x07example\x03com\x00"  # flags S|E
    m = parse(raw_packet(opt(53, b"\x01") + opt(81, value) + b"\xff"))
    fqdn = m.client_fqdn
    assert fqdn == ClientFqdn(0x05, 0, 0, "host.example.com", True)
    assert fqdn is not None and fqdn.wire


def test_fqdn_wire_format_partial_name() -> None:
    fqdn = o.decode_client_fqdn(b"\x04\x00\x00\x04host")
    assert fqdn.name == "host" and not fqdn.fully_qualified and fqdn.wire


def test_fqdn_ascii_format() -> None:
    fqdn = o.decode_client_fqdn(b"\x01\xff\xffhost.example.com\x00")
    assert fqdn == ClientFqdn(0x01, 255, 255, "host.example.com", False)
    assert not fqdn.wire
    fqdn = o.decode_client_fqdn(b"\x00\x00\x00host.example.com.")
    assert fqdn.name == "host.example.com" and fqdn.fully_qualified


def test_fqdn_empty_name() -> None:
    assert o.decode_client_fqdn(b"\x04\x00\x00") == ClientFqdn(4, 0, 0, "", False)
    assert o.decode_client_fqdn(b"\x04\x00\x00\x00") == ClientFqdn(4, 0, 0, "", True)


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"\x04\x00",
        b"\x04\x00\x00\x05host",  # label overruns
        b"\x04\x00\x00\xc0\x0c",  # compression pointer
        b"\x04\x00\x00\x04host\x00\x03com",  # data after the root label
    ],
)
def test_fqdn_malformed(value: bytes) -> None:
    m = parse(raw_packet(opt(53, b"\x01") + opt(81, value) + b"\xff"))
    with pytest.raises(MalformedPacket) as exc_info:
        _ = m.client_fqdn
    assert exc_info.value.reason == "bad_fqdn"


def test_fqdn_encode_both_forms() -> None:
    flags = o.FQDN_S | o.FQDN_E | o.FQDN_O
    wire = o.encode_client_fqdn(flags, "host.example.com.")
    assert wire == b"\x07\xff\xff\x04host\x07example\x03com\x00"
    assert o.decode_client_fqdn(wire) == ClientFqdn(flags, 255, 255, "host.example.com", True)
    partial = o.encode_client_fqdn(o.FQDN_E, "host", fully_qualified=False, rcode1=0, rcode2=0)
    assert partial == b"\x04\x00\x00\x04host"
    ascii_ = o.encode_client_fqdn(o.FQDN_S, "host.example.com")
    assert ascii_ == b"\x01\xff\xffhost.example.com."
    assert o.decode_client_fqdn(ascii_).name == "host.example.com"
    ascii_partial = o.encode_client_fqdn(0, "host", fully_qualified=False)
    assert o.decode_client_fqdn(ascii_partial) == ClientFqdn(0, 255, 255, "host", False)
    with pytest.raises(ValueError):
        o.encode_client_fqdn(o.FQDN_E, "a" * 64 + ".com")
    with pytest.raises(ValueError):
        o.encode_client_fqdn(o.FQDN_E, "a..b")


# --------------------------------------------------------------------------- option helpers


def test_option_value_helpers() -> None:
    assert o.encode_ip(ip("192.0.2.1")) == b"\xc0\x00\x02\x01"
    assert o.encode_ips([ip("192.0.2.1"), ip("8.8.8.8")]) == b"\xc0\x00\x02\x01\x08\x08\x08\x08"
    assert o.decode_ips(b"\xc0\x00\x02\x01\x08\x08\x08\x08") == [ip("192.0.2.1"), ip("8.8.8.8")]
    assert o.encode_u32(3600) == b"\x00\x00\x0e\x10" and o.decode_u32(b"\x00\x00\x0e\x10") == 3600
    assert o.encode_u16(1500) == b"\x05\xdc" and o.decode_u16(b"\x05\xdc") == 1500
    assert o.encode_u8(7) == b"\x07" and o.decode_u8(b"\x07") == 7
    assert o.encode_i32(-3600) == b"\xff\xff\xf1\xf0"
    assert o.encode_str("example.com") == b"example.com"
    assert o.decode_str(b"example.com\x00") == "example.com"
    assert ip_to_str(ip("10.20.30.40")) == "10.20.30.40"
    for bad in ("1.2.3", "1.2.3.256", "a.b.c.d", "1.2.3.4.5", "01.2.3.4444", ""):
        with pytest.raises(ValueError):
            ip_from_str(bad)


@pytest.mark.parametrize(
    ("decoder", "value"),
    [
        (o.decode_ips, b""),
        (o.decode_ips, b"\x01\x02\x03\x04\x05"),
        (o.decode_ip, b"\x01\x02\x03"),
        (o.decode_u32, b"\x01\x02"),
        (o.decode_u16, b"\x01"),
        (o.decode_u8, b""),
    ],
)
def test_option_decoders_validate_length(decoder: object, value: bytes) -> None:
    with pytest.raises(MalformedPacket) as exc_info:
        decoder(value)  # type: ignore[operator]
    assert exc_info.value.reason == "bad_option_length"


def test_constants() -> None:
    assert (o.SUBNET_MASK, o.ROUTER, o.DNS, o.HOSTNAME, o.DOMAIN_NAME) == (1, 3, 6, 12, 15)
    assert (o.NTP, o.VENDOR_SPECIFIC, o.REQUESTED_IP, o.LEASE_TIME, o.OVERLOAD) == (
        42,
        43,
        50,
        51,
        52,
    )
    assert (o.MESSAGE_TYPE, o.SERVER_ID, o.PRL, o.MESSAGE, o.MAX_SIZE) == (53, 54, 55, 56, 57)
    assert (o.RENEWAL, o.REBINDING, o.VENDOR_CLASS, o.CLIENT_ID) == (58, 59, 60, 61)
    assert (o.TFTP_SERVER, o.BOOTFILE, o.USER_CLASS, o.FQDN, o.RELAY_AGENT) == (66, 67, 77, 81, 82)
    assert (o.SUBNET_SELECTION, o.PAD, o.END) == (118, 0, 255)
    types = (o.DISCOVER, o.OFFER, o.REQUEST, o.DECLINE, o.ACK, o.NAK, o.RELEASE, o.INFORM)
    assert types == (1, 2, 3, 4, 5, 6, 7, 8)
    assert set(o.MESSAGE_TYPE_NAMES) == set(range(1, 19))


# --------------------------------------------------------------------------- builder


def _request(**extra: bytes) -> DhcpMessage:
    opts = opt(53, b"\x01") + opt(61, b"\x01" + MAC)
    for code, value in extra.items():
        opts += opt(int(code.lstrip("o")), value)
    return parse(raw_packet(opts + b"\xff", xid=0xDEADBEEF, flags=0x8000, giaddr="10.0.0.1"))


def test_golden_offer_bytes() -> None:
    """Byte-exact reply: header copy rules, option order, end, pad to 300."""
    req = _request(o55=bytes((3, 1, 6)), o57=b"\x05\xdc")
    reply = DhcpMessage.reply_to(req, o.OFFER, yiaddr=ip("10.0.0.50"), server_id=ip("10.0.0.2"))
    reply.options[o.LEASE_TIME] = o.encode_u32(3600)
    reply.options[o.DNS] = o.encode_ips([ip("10.0.0.2")])
    reply.options[o.SUBNET_MASK] = o.encode_ip(ip("255.255.255.0"))
    reply.options[o.ROUTER] = o.encode_ip(ip("10.0.0.1"))
    out = reply.to_bytes()

    expected_head = (
        bytes((2, 1, 6, 0))
        + b"\xde\xad\xbe\xef"
        + b"\x00\x00\x80\x00"  # secs 0, broadcast flag copied
        + bytes(4)  # ciaddr
        + bytes((10, 0, 0, 50))  # yiaddr
        + bytes(4)  # siaddr
        + bytes((10, 0, 0, 1))  # giaddr
        + MAC
        + bytes(10 + 64 + 128)
        + COOKIE
    )
    expected_opts = (
        opt(53, b"\x02")
        + opt(54, bytes((10, 0, 0, 2)))
        + opt(3, bytes((10, 0, 0, 1)))  # then in PRL order: 3, 1, 6
        + opt(1, bytes((255, 255, 255, 0)))
        + opt(6, bytes((10, 0, 0, 2)))
        + opt(61, b"\x01" + MAC)  # then the rest in insertion order
        + opt(51, b"\x00\x00\x0e\x10")
        + b"\xff"
    )
    assert out == (expected_head + expected_opts).ljust(300, b"\0")


def test_builder_order_relay_agent_last_and_roundtrip() -> None:
    rai = b"\x01\x04port\x02\x06" + MAC
    req = _request(o55=bytes((15, 6, 3, 1, 55, 53, 82)), o82=rai)
    reply = DhcpMessage.reply_to(req, o.ACK, yiaddr=ip("10.0.0.9"), server_id=ip("10.0.0.2"))
    opts = reply.options
    opts[o.LEASE_TIME] = o.encode_u32(600)
    opts[200] = b"vendor"
    opts[o.SUBNET_MASK] = o.encode_ip(ip("255.255.255.0"))
    opts[o.DOMAIN_NAME] = b"example.com"
    opts[o.ROUTER] = o.encode_ip(ip("10.0.0.1"))
    opts[o.OVERLOAD] = b"\x03"  # builder-owned: must be ignored
    out = reply.to_bytes()
    codes = [code for code, _ in walk(out[240:])]
    # 53, 54, then PRL order (6 absent), then the rest in insertion order, 82 last.
    assert codes == [53, 54, 15, 3, 1, 61, 51, 200, 82]
    assert out[240:].rstrip(b"\0").endswith(opt(82, rai) + b"\xff")
    back = parse(out)
    assert back.options == {k: v for k, v in opts.items() if k != o.OVERLOAD}
    for attr in ("op", "htype", "hlen", "hops", "xid", "secs", "flags", "ciaddr", "yiaddr"):
        assert getattr(back, attr) == getattr(reply, attr)
    assert back.giaddr == ip("10.0.0.1")
    assert back.relay_agent_info is not None
    assert back.relay_agent_info.circuit_id == b"port"


def test_builder_pads_to_bootp_minimum() -> None:
    m = DhcpMessage(op=1, xid=1, chaddr=MAC, options={53: b"\x01"})
    out = m.to_bytes()
    assert len(out) == 300
    assert out[240:244] == b"\x35\x01\x01\xff"
    assert out[244:] == bytes(56)


def test_builder_header_field_roundtrip() -> None:
    m = DhcpMessage(
        op=1,
        htype=1,
        hlen=6,
        hops=3,
        xid=0xFFFFFFFF,
        secs=65535,
        flags=0x8000,
        ciaddr=ip("1.2.3.4"),
        yiaddr=ip("5.6.7.8"),
        siaddr=ip("9.10.11.12"),
        giaddr=ip("13.14.15.16"),
        chaddr=MAC,
        sname=b"server-name",
        file=b"/boot/file",
        options={53: b"\x08"},
    )
    back = parse(m.to_bytes())
    for attr in ("op", "htype", "hlen", "hops", "xid", "secs", "flags", "ciaddr", "yiaddr"):
        assert getattr(back, attr) == getattr(m, attr)
    assert (back.siaddr, back.giaddr) == (m.siaddr, m.giaddr)
    assert back.hwaddr == MAC
    assert (back.sname, back.file) == (b"server-name", b"/boot/file")
    assert back.message_type == o.INFORM


def test_builder_rejects_oversized_sname_file() -> None:
    with pytest.raises(ValueError):
        DhcpMessage(options={53: b"\x02"}, file=b"x" * 129).to_bytes()
    with pytest.raises(ValueError):
        DhcpMessage(options={53: b"\x02"}, sname=b"x" * 65).to_bytes()


def test_rfc3396_split_long_option() -> None:
    value = bytes(range(256)) * 2 + b"tail"  # 516 bytes
    m = DhcpMessage(options={53: b"\x05", 43: value})
    out = m.to_bytes(max_size=1500)
    instances = walk(out[240:])
    assert [(c, len(v)) for c, v in instances] == [(53, 1), (43, 255), (43, 255), (43, 6)]
    assert parse(out).options[43] == value


def test_split_exactly_255_is_one_instance() -> None:
    out = DhcpMessage(options={53: b"\x05", 43: b"x" * 255}).to_bytes()
    assert [(c, len(v)) for c, v in walk(out[240:])] == [(53, 1), (43, 255)]


def _big_reply(file: bytes = b"", sname: bytes = b"") -> DhcpMessage:
    opts = {
        53: b"\x05",
        54: o.encode_ip(ip("10.0.0.2")),
        51: o.encode_u32(3600),
        1: o.encode_ip(ip("255.255.255.0")),
        3: o.encode_ip(ip("10.0.0.1")),
    }
    for code in range(160, 170):  # 10 x 42 bytes of low-priority site options
        opts[code] = bytes((code,)) * 40
    opts[82] = b"\x01\x08circuit1"
    return DhcpMessage(xid=7, chaddr=MAC, options=opts, file=file, sname=sname)


def test_max_size_uses_overload_when_fields_free() -> None:
    m = _big_reply()
    out = m.to_bytes(max_size=576)
    assert len(out) <= 576 - 28
    back = parse(out)
    assert back.overload == 3
    # Everything survives: 6 site options in the options field, 3 in file, 1 in sname.
    assert {k: v for k, v in back.options.items() if k != 52} == m.options
    main = walk(out[240:])
    assert [c for c, _ in main][:3] == [53, 54, 52]
    assert main[-1][0] == 82  # relay info still last in the options field


def test_overload_only_sname_when_file_in_use() -> None:
    m = _big_reply(file=b"pxelinux.0")
    out = m.to_bytes(max_size=576)
    assert len(out) <= 548
    back = parse(out)
    assert back.overload == 2
    assert back.file == b"pxelinux.0"
    assert back.sname == b""
    for code in PROTECTED_OPTIONS:
        assert back.options[code] == m.options[code]
    # Some low-priority options had to go; the dropped ones are the last ones.
    kept = [c for c in range(160, 170) if c in back.options]
    assert kept == list(range(160, 160 + len(kept)))
    assert len(kept) < 10
    for code in kept:
        assert back.options[code] == m.options[code]


def test_drop_lowest_priority_without_overload_room() -> None:
    m = _big_reply(file=b"f", sname=b"s")
    out = m.to_bytes()  # no size_limit: 576
    assert len(out) <= 548
    back = parse(out)
    assert back.overload == 0
    assert (back.file, back.sname) == (b"f", b"s")
    kept = [c for c in range(160, 170) if c in back.options]
    assert kept == list(range(160, 160 + len(kept)))
    assert 0 < len(kept) < 10
    for code in PROTECTED_OPTIONS:
        assert back.options[code] == m.options[code]


def test_prl_order_decides_what_is_dropped() -> None:
    m = _big_reply(file=b"f", sname=b"s")
    out = m.to_bytes(prl=bytes(range(169, 159, -1)))  # client wants the high codes most
    back = parse(out)
    kept = [c for c in range(160, 170) if c in back.options]
    assert kept == list(range(170 - len(kept), 170))


def test_large_max_size_keeps_everything_in_options_field() -> None:
    m = _big_reply()
    out = m.to_bytes(max_size=1500)
    back = parse(out)
    assert back.overload == 0 and 52 not in back.options
    assert back.options == m.options
    assert len(out) == 240 + sum(len(v) + 2 for v in m.options.values()) + 1


def test_client_max_size_below_576_is_clamped() -> None:
    m = _big_reply(file=b"f", sname=b"s")
    assert m.to_bytes(max_size=300) == m.to_bytes(max_size=576)


def test_max_size_with_long_split_option_across_fields() -> None:
    value = bytes(range(256)) + bytes(range(100))  # 356 bytes, needs 2 instances
    m = DhcpMessage(options={53: b"\x05", 54: b"\x0a\x00\x00\x02", 43: value, 12: b"h" * 200})
    out = m.to_bytes(max_size=576)
    assert len(out) <= 548
    back = parse(out)
    assert back.options[43] == value  # RFC 3396 order options -> file -> sname kept
    assert back.options[53] == b"\x05" and back.options[54] == b"\x0a\x00\x00\x02"
    assert back.overload != 0


def test_protected_options_survive_even_if_oversized() -> None:
    huge_82 = b"\x01\xff" + b"c" * 255 + b"\x02\xff" + b"r" * 255  # 514 bytes
    m = DhcpMessage(options={53: b"\x02", 54: b"\x0a\x00\x00\x02", 82: huge_82, 12: b"x"})
    back = parse(m.to_bytes(max_size=576))
    assert back.options[82] == huge_82
    assert back.options[53] == b"\x02"


def test_reply_size_limit_from_request_option_57() -> None:
    req = _request(o57=struct.pack("!H", 576))
    reply = DhcpMessage.reply_to(req, o.ACK, server_id=ip("10.0.0.2"))
    for code in range(160, 175):
        reply.options[code] = b"z" * 60
    assert len(reply.to_bytes()) <= 548
    assert len(reply.to_bytes(max_size=1500)) > 548


# --------------------------------------------------------------------------- reply_to


def test_reply_to_copies_header_per_rfc2131_table3() -> None:
    req = parse(
        raw_packet(
            opt(53, b"\x03") + opt(61, b"\x01" + MAC) + opt(55, b"\x01\x03") + b"\xff",
            xid=0x1234,
            flags=0x8000,
            hops=2,
            secs=30,
            ciaddr="10.0.0.7",
            giaddr="10.0.0.1",
            htype=1,
            hlen=6,
        )
    )
    ack = DhcpMessage.reply_to(
        req, o.ACK, yiaddr=ip("10.0.0.7"), siaddr=ip("10.0.0.3"), server_id=ip("10.0.0.2")
    )
    assert (ack.op, ack.htype, ack.hlen, ack.hops, ack.secs) == (2, 1, 6, 0, 0)
    assert ack.xid == 0x1234 and ack.flags == 0x8000
    assert ack.ciaddr == ip("10.0.0.7")  # ACK keeps ciaddr (RENEW/REBIND/INFORM)
    assert ack.yiaddr == ip("10.0.0.7") and ack.siaddr == ip("10.0.0.3")
    assert ack.giaddr == ip("10.0.0.1")
    assert ack.chaddr == req.chaddr
    assert ack.options[53] == b"\x05"
    assert ack.server_id == ip("10.0.0.2")
    assert ack.client_id == b"\x01" + MAC  # RFC 6842
    assert ack.prl_hint == b"\x01\x03"
    assert ack.size_limit is None

    offer = DhcpMessage.reply_to(req, o.OFFER, yiaddr=ip("10.0.0.7"))
    assert offer.ciaddr == 0
    assert 54 not in offer.options


def test_reply_to_nak() -> None:
    relayed = parse(raw_packet(opt(53, b"\x03") + b"\xff", giaddr="10.0.0.1"))
    nak = DhcpMessage.reply_to(relayed, o.NAK, yiaddr=ip("10.0.0.9"), server_id=1)
    assert nak.yiaddr == 0 and nak.ciaddr == 0
    assert nak.broadcast  # RFC 2131 4.3.2: NAK via relay is broadcast
    direct = parse(raw_packet(opt(53, b"\x03") + b"\xff"))
    assert not DhcpMessage.reply_to(direct, o.NAK).broadcast


def test_reply_echoes_relay_agent_info_raw() -> None:
    rai = b"\x02\x02ab\x01\x02cd\x05\x04\x0a\x00\x00\x00\xb7\x01z"  # non-canonical order
    req = parse(raw_packet(opt(53, b"\x01") + opt(82, rai) + b"\xff", giaddr="10.0.0.1"))
    out = DhcpMessage.reply_to(req, o.OFFER, server_id=1).to_bytes()
    assert parse(out).options[82] == rai


def test_broadcast_setter() -> None:
    m = DhcpMessage(flags=0x0001)
    m.broadcast = True
    assert m.flags == 0x8001
    m.broadcast = False
    assert m.flags == 0x0001


def test_repr_does_not_fail() -> None:
    assert "DhcpMessage" in repr(parse(WIRESHARK_DISCOVER))
