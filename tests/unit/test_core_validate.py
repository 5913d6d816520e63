"""The value parsers: canonical forms, and refusals whose message says why."""

import ipaddress

import pytest

from ipamd.core import identifiers, validate


@pytest.mark.parametrize("text", [
    "aa:bb:cc:dd:ee:f0", "AA:BB:CC:DD:EE:F0", "aa-bb-cc-dd-ee-f0", "aabb.ccdd.eef0",
    "aabbccddeef0", "AABBCCDDEEF0", " aa:bb:cc:dd:ee:f0 ",
])
def test_mac_in_any_common_notation_is_stored_lowercase_colon_separated(text):
    assert identifiers.mac(text) == "aa:bb:cc:dd:ee:f0"


def test_mac_single_digit_octets_are_padded():
    assert identifiers.mac("2:0:c:d:e:f") == "02:00:0c:0d:0e:0f"


@pytest.mark.parametrize("text, words", [
    ("01:aa:bb:cc:dd:ee:f0", "six octets"),  # a client identifier (htype 1 + MAC)
    ("ff:00:00:00:01:aa:bb:cc:dd:ee:f0", "client identifier is not a MAC"),
    ("aa:bb:cc:dd:ee", "has 5"),
    ("zz:bb:cc:dd:ee:ff", "not a MAC"),
    ("00:00:00:00:00:00", "does not identify"),
    ("ff:ff:ff:ff:ff:ff", "multicast"),
    ("01:00:5e:00:00:01", "multicast"),
    ("", "not a MAC"),
])
def test_mac_refusals(text, words):
    with pytest.raises(ValueError, match=words):
        identifiers.mac(text)


def test_mac_prefix():
    assert identifiers.mac_prefix("00-1A-2B") == "00:1a:2b"
    assert identifiers.mac_prefix("001a2b") == "00:1a:2b"
    with pytest.raises(ValueError):
        identifiers.mac_prefix("00:1a:2b:3c:4d:5e:6f")


@pytest.mark.parametrize("text, canonical", [
    ("00:03:00:01:aa:bb:cc:dd:ee:ff", "00:03:00:01:aa:bb:cc:dd:ee:ff"),
    ("000300018899AABBCCDD", "00:03:00:01:88:99:aa:bb:cc:dd"),
    ("00-02-00-00-00-09-01-02", "00:02:00:00:00:09:01:02"),
    ("0001000124d1e4a2aabbccddeeff", "00:01:00:01:24:d1:e4:a2:aa:bb:cc:dd:ee:ff"),
    ("0004" + "11" * 16, "00:04:" + ":".join(["11"] * 16)),
])
def test_duid_canonical(text, canonical):
    assert identifiers.duid(text) == canonical


@pytest.mark.parametrize("text, words", [
    ("00:05:01:02:03", "type 5 is unknown"),
    ("00:04:01:02", "DUID-UUID is 18"),
    ("00:01:00:01:02", "at least 9"),
    ("00:03", "3 to 130"),
    ("xyz", "not a DUID"),
    ("00:03:00:01:" + ":".join(["aa"] * 127), "3 to 130"),
])
def test_duid_refusals(text, words):
    with pytest.raises(ValueError, match=words):
        identifiers.duid(text)


def test_network_strict_with_a_hint():
    assert validate.network("10.0.0.0/24") == ipaddress.ip_network("10.0.0.0/24")
    assert validate.network("2001:db8::/32").version == 6
    with pytest.raises(ValueError, match=r"the network is 10\.0\.0\.0/24"):
        validate.network("10.0.0.5/24")
    with pytest.raises(ValueError, match="CIDR notation"):
        validate.network("10.0.0.0")
    with pytest.raises(ValueError, match="IPv4"):
        validate.network("2001:db8::/64", ipv4_only=True)


def test_host_range_and_host_in():
    net = ipaddress.IPv4Network("10.0.0.0/24")
    assert validate.host_range(net) == (int(net.network_address) + 1,
                                        int(net.broadcast_address) - 1)
    assert validate.host_count(net) == 254
    assert validate.host_count(ipaddress.IPv4Network("10.0.0.0/31")) == 2
    assert validate.host_count(ipaddress.IPv4Network("10.0.0.7/32")) == 1
    assert validate.host_in(net, ipaddress.IPv4Address("10.0.0.1")) is None
    assert "network address" in validate.host_in(net, ipaddress.IPv4Address("10.0.0.0"))
    assert "broadcast" in validate.host_in(net, ipaddress.IPv4Address("10.0.0.255"))
    assert "outside" in validate.host_in(net, ipaddress.IPv4Address("10.0.1.1"))


def test_ipv6_host_range_and_host_in():
    net = ipaddress.IPv6Network("2001:db8::/64")
    # No broadcast; the first address is the Subnet-Router anycast (RFC 4291 §2.6.1).
    assert validate.host_range(net) == (int(net.network_address) + 1,
                                        int(net.broadcast_address))
    assert validate.host_count(net) == 2**64 - 1
    assert validate.host_count(ipaddress.IPv6Network("2001:db8::/127")) == 2  # RFC 6164
    assert validate.host_count(ipaddress.IPv6Network("2001:db8::1/128")) == 1
    assert validate.host_in(net, ipaddress.IPv6Address("2001:db8::ffff:ffff:ffff:ffff")) is None
    assert "anycast" in validate.host_in(net, ipaddress.IPv6Address("2001:db8::"))
    assert "outside" in validate.host_in(net, ipaddress.IPv6Address("2001:db8:1::1"))
    # The other family is named, never taken for an address of this one (::10.0.0.5 has
    # the same low 32 bits as 10.0.0.5).
    v4 = ipaddress.IPv4Network("10.0.0.0/24")
    assert "IPv6 address" in validate.host_in(v4, ipaddress.IPv6Address("::10.0.0.5"))
    assert "IPv4 address" in validate.host_in(net, ipaddress.IPv4Address("10.0.0.5"))
    assert validate.address_in_family(net, 5) == ipaddress.IPv6Address("::5")
    assert validate.address_in_family(v4, 5) == ipaddress.IPv4Address("0.0.0.5")


def test_hostname():
    assert validate.hostname("Printer-1.lan.example.com.") == "Printer-1.lan.example.com"
    for bad in ("-bad", "bad-", "a..b", "under_score", "x" * 64, "sp ace", ""):
        with pytest.raises(ValueError):
            validate.hostname(bad)


def test_reverse_zone():
    assert validate.reverse_zone("0.10.IN-ADDR.ARPA.") == "0.10.in-addr.arpa"
    assert validate.reverse_zone("8.B.D.0.1.0.0.2.ip6.arpa") == "8.b.d.0.1.0.0.2.ip6.arpa"
    with pytest.raises(ValueError, match="reverse zone"):
        validate.reverse_zone("lan.example.com")


def test_clean_text_refuses_nul_control_and_surrogates():
    assert validate.clean_text("two\nlines", max_length=20, multiline=True) == "two\nlines"
    for bad in ("nul\x00", "bell\x07", "lone\ud800", "line\nbreak"):
        with pytest.raises(ValueError):
            validate.clean_text(bad, max_length=20)
    with pytest.raises(ValueError, match="at most 3"):
        validate.clean_text("abcd", max_length=3)


@pytest.mark.parametrize(("text", "canonical"), [
    ("aa:bb:cc:dd:ee:0f", "aa:bb:cc:dd:ee:0f"), ("AA-BB-CC-DD-EE-0F", "aa:bb:cc:dd:ee:0f"),
    ("aabb.ccdd.ee0f", "aa:bb:cc:dd:ee:0f"), (" aabbccddee0f ", "aa:bb:cc:dd:ee:0f"),
    ("01:00:5E:00:00:01", "01:00:5e:00:00:01"),
])
def test_a_mac_to_look_up_may_be_any_mac_in_one_notation(text, canonical):
    # lookups find what was stored, multicast included; MACs to store go through mac()
    assert identifiers.lookup_mac(text) == canonical


@pytest.mark.parametrize("text", ["aa:bb-cc:dd:ee:ff", "aa:bb:cc:dd:ee", "zz:bb:cc:dd:ee:ff"])
def test_a_mac_to_look_up_in_mixed_or_short_notation_is_refused(text):
    with pytest.raises(ValueError, match="is not a MAC address"):
        identifiers.lookup_mac(text)


def test_identifiers_shown_and_compared_in_one_form():
    assert identifiers.hex_or_none(b"\x01\xaa") == "01:aa"
    assert identifiers.hex_or_none(None) is None
    assert identifiers.duid_text("0001abcd") == "00:01:ab:cd"
    assert identifiers.duid_text("abc") == "abc"
    assert identifiers.bare_hex("AA:bb-CC.dd") == "aabbccdd"
    assert identifiers.bare_hex("::") is None
    assert identifiers.lookup_hex("0x01:AA:bb") == b"\x01\xaa\xbb"
    with pytest.raises(ValueError, match="longer than 255 octets"):
        identifiers.lookup_hex("00" * 256)
