"""Option payload shapes per code: validation, normalisation and the wire bytes."""

import pytest

from ipamd.core import option_shapes as shapes


def test_dns_servers_code_6():
    payload = shapes.normalise(6, {"addresses": ["10.0.0.53", " 10.0.0.54"]})
    assert payload == {"addresses": ["10.0.0.53", "10.0.0.54"]}
    assert shapes.wire(6, payload) == bytes([10, 0, 0, 53, 10, 0, 0, 54])


def test_domain_name_code_15_is_lowercased_text():
    payload = shapes.normalise(15, {"value": "Lan.Example.COM."})
    assert payload == {"value": "lan.example.com"}
    assert shapes.wire(15, payload) == b"lan.example.com"


def test_ntp_code_42_and_vendor_code_43():
    assert shapes.wire(42, shapes.normalise(42, {"addresses": ["10.1.2.3"]})) == bytes(
        [10, 1, 2, 3])
    payload = shapes.normalise(43, {"hex": "01:04:C0:A8"})
    assert payload == {"hex": "01:04:c0:a8"}
    assert shapes.wire(43, payload) == bytes([1, 4, 0xC0, 0xA8])


def test_integers_are_range_checked_and_sized():
    assert shapes.wire(26, shapes.normalise(26, {"value": 1400})) == (1400).to_bytes(2, "big")
    assert shapes.wire(2, shapes.normalise(2, {"value": -3600})) == (-3600).to_bytes(
        4, "big", signed=True)
    with pytest.raises(ValueError, match="between 68 and 65535"):
        shapes.normalise(26, {"value": 10})
    with pytest.raises(ValueError, match="integer"):
        shapes.normalise(26, {"value": "1400"})
    with pytest.raises(ValueError, match="H-node"):
        shapes.normalise(46, {"value": 3})


def test_domain_search_119_rfc1035_labels():
    payload = shapes.normalise(119, {"domains": ["a.example", "b.example"]})
    assert shapes.wire(119, payload) == (
        b"\x01a\x07example\x00\x01b\x07example\x00"
    )


def test_classless_routes_121_rfc3442():
    payload = shapes.normalise(121, {"routes": [
        {"destination": "10.9.0.0/16", "router": "10.0.0.1"},
        {"destination": "0.0.0.0/0", "router": "10.0.0.254"},
    ]})
    assert shapes.wire(121, payload) == bytes(
        [16, 10, 9, 10, 0, 0, 1,  0, 10, 0, 0, 254]
    )


def test_generic_hex_for_other_codes():
    payload = shapes.normalise(224, {"hex": "deadbeef"})
    assert payload == {"hex": "de:ad:be:ef"}
    assert shapes.wire(224, payload) == bytes.fromhex("deadbeef")


@pytest.mark.parametrize("code, field", [
    (1, "cidr"), (3, "gateway"), (51, "lease_time_seconds"), (58, "lease_time_seconds"),
    (59, "lease_time_seconds"), (66, "next_server"), (67, "boot_file"), (54, "server_id"),
    (53, "per packet"), (12, "hostname"),
])
def test_server_owned_codes_name_the_field_to_use(code, field):
    with pytest.raises(ValueError, match=field):
        shapes.check_code(code)


@pytest.mark.parametrize("code, payload, words", [
    (6, {"addresses": []}, "non-empty"),
    (6, {"addresses": ["10.0.0.300"]}, r"addresses\[0\]"),
    (6, {"value": "10.0.0.1"}, "unknown field 'value'"),
    (6, {}, "missing 'addresses'"),
    (15, {"value": ""}, "non-empty"),
    (15, {"value": "bad name!"}, "not a host name"),
    (43, {"hex": "xyz"}, "not hex"),
    (224, {"hex": "00" * 901}, "1 to 900 octets"),
    (121, {"routes": [{"destination": "10.0.0.1/24", "router": "10.0.0.1"}]}, "host bits"),
    (6, {"addresses": ["10.0.0.1"] * 226}, "at most 225"),
])
def test_payload_refusals(code, payload, words):
    with pytest.raises(ValueError, match=words):
        shapes.normalise(code, payload)


def test_encoded_size_is_capped():
    # 18 octets a name: 50 names are 900, 51 are one name too many (MAX_VALUE's arithmetic).
    names = [f"d{i:03d}.example.com" for i in range(51)]
    assert len(shapes.wire(119, shapes.normalise(119, {"domains": names[:50]}))) == 900
    with pytest.raises(ValueError, match="encodes to 918 octets; an option carries at most 900"):
        shapes.normalise(119, {"domains": names})


@pytest.mark.parametrize("code, payload", [
    (119, {"domains": [f"d{i:03d}.example.com" for i in range(23)]}),  # 414 octets
    (121, {"routes": [{"destination": f"10.{i}.0.0/16", "router": "10.0.0.1"}
                      for i in range(60)]}),  # 7 octets a route: 420
    (43, {"hex": "01" * 400}),
    (252, {"value": "http://wpad.example.com/" + "p" * 300}),
    (6, {"addresses": [f"10.0.{i}.1" for i in range(100)]}),
])
def test_values_over_255_octets_are_taken_for_rfc3396_splitting(code, payload):
    value = shapes.wire(code, shapes.normalise(code, payload))
    assert 255 < len(value) <= shapes.MAX_VALUE
