"""What a search string means."""

import ipaddress

from ipamd.ipam.search_terms import parse


def test_cidr_and_address():
    assert parse("10.1.0.0/16").network == ipaddress.ip_network("10.1.0.0/16")
    assert parse("10.1.2.3/16").network == ipaddress.ip_network("10.1.0.0/16")
    assert parse(" 10.1.2.3 ").address == ipaddress.ip_address("10.1.2.3")
    terms = parse("10.1.2.3")
    assert terms.mac is None and terms.hostname is None


def test_mac_notations_are_not_host_names():
    for text in ("AA-BB-CC-DD-EE-F0", "aabb.ccdd.eef0", "aa:bb:cc:dd:ee:f0", "aabbccddeef0"):
        terms = parse(text)
        assert terms.mac == "aa:bb:cc:dd:ee:f0" and terms.hostname is None
    # Six octets with a known DUID type are both a MAC and a DUID.
    both = parse("00:03:00:01:aa:bb")
    assert both.mac == "00:03:00:01:aa:bb" and both.duid == "00:03:00:01:aa:bb"


def test_duid_forms_and_hostname_prefix():
    terms = parse("00030001aabbccddeeff")
    assert terms.duid == "00:03:00:01:aa:bb:cc:dd:ee:ff"
    assert terms.duid_forms == [terms.duid, "00030001aabbccddeeff"]
    host = parse("Printer-")
    assert host.hostname == "printer-" and host.hostname_upper == "printer."
    assert parse("has space").empty
    assert parse("bad/cidr").empty
