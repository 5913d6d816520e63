"""The DDNS name rule: option 81, else option 12, in the subnet's zone, as valid labels."""

from __future__ import annotations

import pytest

from ipamd.core.dnsname import ddns_fqdn, label, reverse_name


@pytest.mark.parametrize(("hostname", "fqdn", "expected"), [
    ("laptop", None, "laptop.lan.example"),
    ("Laptop_Of Bob!", None, "laptop-of-bob.lan.example"),
    ("laptop", "pc1.lan.example.", "pc1.lan.example"),  # option 81 wins
    (None, "pc1.sub.lan.example", "pc1.sub.lan.example"),  # inside the zone: kept
    (None, "pc1.elsewhere.org", "pc1.lan.example"),  # outside: first label in the zone
    ("-x-", None, "x.lan.example"),
    ("---", None, None),
    (None, None, None),
    ("lan.example", None, "lan.lan.example"),
    ("a" * 80, None, "a" * 63 + ".lan.example"),
    ("\u00e9t\u00e9", None, "t.lan.example"),
])
def test_ddns_fqdn(hostname: str | None, fqdn: str | None, expected: str | None) -> None:
    assert ddns_fqdn(hostname, fqdn, "lan.example") == expected


def test_no_zone_no_name() -> None:
    assert ddns_fqdn("laptop", None, None) is None


def test_label_and_reverse() -> None:
    assert label("A--b-") == "a--b"
    assert reverse_name("10.77.53.7") == "7.53.77.10.in-addr.arpa"
