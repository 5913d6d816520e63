"""DHCPv6 option payloads of an IPv6 subnet: shapes, refusals and the wire bytes."""

from __future__ import annotations

import pytest

from ipamd.core import option6_shapes as shapes


def test_dns_and_ntp_servers():
    payload = shapes.normalise(23, {"addresses": ["2001:DB8::53", " 2001:db8::54 "]})
    assert payload == {"addresses": ["2001:db8::53", "2001:db8::54"]}
    assert shapes.wire(23, payload) == bytes.fromhex("20010db8" + "00" * 10 + "0053"
                                                     "20010db8" + "00" * 10 + "0054")
    ntp = shapes.normalise(56, {"addresses": ["2001:db8::123"]})
    # RFC 5908: suboption 1 (server address), length 16, the address.
    assert shapes.wire(56, ntp) == bytes.fromhex("00010010" "20010db8" + "00" * 10 + "0123")


def test_domain_list_is_uncompressed_dns_wire():
    payload = shapes.normalise(24, {"domains": ["Lan.Example.com."]})
    assert payload == {"domains": ["lan.example.com"]}
    assert shapes.wire(24, payload) == b"\x03lan\x07example\x03com\x00"


def test_vendor_opts_and_boot_url():
    payload = shapes.normalise(17, {"enterprise": 4491,
                                    "suboptions": [{"code": 32, "hex": "0A0B"}]})
    assert payload == {"enterprise": 4491, "suboptions": [{"code": 32, "hex": "0a:0b"}]}
    assert shapes.wire(17, payload) == bytes.fromhex("0000118b" "0020" "0002" "0a0b")
    url = "tftp://[2001:db8::69]/boot.efi"
    assert shapes.wire(59, shapes.normalise(59, {"url": url})) == url.encode()


@pytest.mark.parametrize("code, payload, words", [
    (6, {"addresses": ["2001:db8::53"]}, "not taken on an IPv6 subnet"),
    (43, {"hex": "01"}, "17 (vendor-specific information)"),
    (23, {"addresses": []}, "non-empty"),
    (23, {"addresses": ["10.0.0.53"]}, "not an IPv6 address"),
    (23, {"addresses": ["fe80::1%eth0"]}, "not a unicast server address"),
    (23, {"addresses": ["::"]}, "not a unicast server address"),
    (23, {"addresses": ["2001:db8::1"] * 33}, "at most 32"),
    (23, {"addresses": ["2001:db8::1"], "x": 1}, "unknown field 'x'"),
    (24, {"domains": ["a..b"]}, "domains[0]"),
    (56, {}, "missing 'addresses'"),
    (17, {"enterprise": True, "suboptions": [{"code": 1, "hex": "01"}]}, "enterprise"),
    (17, {"enterprise": 2**32, "suboptions": [{"code": 1, "hex": "01"}]}, "enterprise"),
    (17, {"enterprise": 1, "suboptions": [{"code": 0, "hex": "01"}]}, "code must be 1 to"),
    (17, {"enterprise": 1, "suboptions": [{"code": 1, "hex": "zz"}]}, "suboptions[0].hex"),
    (17, {"enterprise": 1, "suboptions": []}, "suboptions must be"),
    (59, {"url": "tftp://host/a b"}, "no spaces"),
    (59, {"url": "file:///etc/passwd"}, "scheme"),
    (59, {"url": "http://[2001:db8::1/x"}, "url:"),
    (59, {"url": "x" * 1025}, "at most 1024"),
    (59, "not an object", "must be an object"),
])
def test_refusals_say_what_is_wrong(code, payload, words):
    with pytest.raises(ValueError) as caught:
        shapes.normalise(code, payload)
    assert words in str(caught.value)
