"""DHCID (RFC 4701 §3.6, the RFC's own examples) and the parse of an outbox row's change."""

from __future__ import annotations

import base64

import pytest

from ipamd.dns.change import BadChange, LeaseChange, StaticChange, dhcid_for, parse


@pytest.mark.parametrize(("name", "mac", "client_id", "expected"), [
    ("client.example.com", "01:02:03:04:05:06", None,
     "AAABxLmlskllE0MVjd57zHcWmEH3pCQ6VytcKD//7es/deY="),
    ("chi.example.com", "aa:bb:cc:dd:ee:ff", "01:07:08:09:0a:0b:0c",
     "AAEBOSD+XR3Os/0LozeXVqcNc7FwCfQdWL3b/NaiUDlW2No="),
    # RFC 4361 client identifier (type 255, IAID 00000001): its DUID makes the DHCID.
    ("chi6.example.com", None, "ff:00:00:00:01:00:01:00:06:41:2d:f1:66:01:02:03:04:05:06",
     "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA="),
])
def test_dhcid_matches_rfc_4701_examples(name: str, mac: str | None, client_id: str | None,
                                         expected: str) -> None:
    assert base64.b64encode(dhcid_for(name, mac, client_id).data).decode() == expected


def test_parse_lease_and_static_changes() -> None:
    lease = parse({"source": "lease", "server_id": "x", "op": "add", "name": "a.lan.example",
                   "ip": "10.0.0.5", "zone": "lan.example", "reverse_zone": None, "ttl": 60},
                  {"mac": "02:00:00:00:00:01", "client_id": None})
    assert isinstance(lease, LeaseChange) and lease.reverse_name == "5.0.0.10.in-addr.arpa"
    static = parse({"source": "static", "zone": "lan.example", "default_ttl": 300,
                    "before": None, "after": {"name": "www.lan.example", "type": "A",
                                              "value": "10.0.0.9", "ttl": None}}, {})
    assert isinstance(static, StaticChange) and static.add is not None
    assert static.add.ttl == 300 and static.remove is None
    with pytest.raises(BadChange):
        parse({"source": "lease", "op": "add"}, {})
    with pytest.raises(BadChange):
        parse({"source": "lease", "server_id": "x", "op": "add", "name": "a.lan.example",
               "ip": "10.0.0.5", "zone": "lan.example", "ttl": 60}, {})


def test_a_dhcpv6_lease_is_aaaa_in_ip6_arpa_with_the_duid_dhcid() -> None:
    """RFC 4701 §3.6's third example is a DHCPv6 client's DUID (identifier type 2)."""
    lease = parse({"source": "lease", "server_id": "x", "op": "add", "name": "chi6.example.com",
                   "ip": "2001:db8::1:5", "zone": "example.com", "reverse_zone": "8.b.d.0.1.0.0.2.ip6.arpa",
                   "ttl": 60},
                  {"duid": "00:01:00:06:41:2d:f1:66:01:02:03:04:05:06", "mac": "02:00:00:00:00:01",
                   "client_id": None})
    assert isinstance(lease, LeaseChange) and lease.rtype == "AAAA"
    assert base64.b64encode(lease.dhcid.data).decode() == \
        "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA="
    assert lease.reverse_name == \
        "5.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"
    # A DHCPv4 lease's event carries no DUID of its own making: its DHCID is as before.
    v4 = parse({"source": "lease", "server_id": "x", "op": "add", "name": "a.lan.example",
                "ip": "10.0.0.5", "zone": "lan.example", "reverse_zone": None, "ttl": 60},
               {"mac": "01:02:03:04:05:06", "client_id": None, "duid": "00:01:02"})
    assert isinstance(v4, LeaseChange) and v4.rtype == "A" and v4.dhcid.data[:2] == b"\x00\x00"
