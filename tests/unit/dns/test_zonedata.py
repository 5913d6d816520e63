"""The embedded server's answers (pure): A/PTR/SOA/NS, NXDOMAIN vs NODATA, CNAME, serials,
AXFR framing; and no query, however malformed, raises out of it (fuzz)."""

from __future__ import annotations

import random

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype

from ipamd.dns import zonedata

ROWS = {
    "zones": [{"name": "lan.example", "default_ttl": 300},
              {"name": "53.77.10.in-addr.arpa", "default_ttl": 300}],
    "records": [
        {"zone": "lan.example", "name": "www.lan.example", "type": "A", "value": "10.77.53.80",
         "ttl": 60},
        {"zone": "lan.example", "name": "web.lan.example", "type": "CNAME",
         "value": "www.lan.example.", "ttl": 60},
        {"zone": "lan.example", "name": "a.b.lan.example", "type": "TXT", "value": '"x"',
         "ttl": 60},
    ],
    "leases": [
        {"fqdn": "laptop.lan.example", "ip": "10.77.53.7", "zone": "lan.example",
         "reverse_zone": "53.77.10.in-addr.arpa", "ttl": 120},
        {"fqdn": "laptop.lan.example", "ip": "10.77.53.8", "zone": "lan.example",
         "reverse_zone": "53.77.10.in-addr.arpa", "ttl": 120},  # second holder: not served
    ],
}


def _zones(now: float = 1_700_000_000, previous=None):  # type: ignore[no-untyped-def]
    return zonedata.build(ROWS, "ns1.lan.example", "hostmaster.lan.example", previous, now)


def _ask(zones, name: str, rdtype: str) -> dns.message.Message:  # type: ignore[no-untyped-def]
    query = dns.message.make_query(name, rdtype)
    return dns.message.from_wire(zonedata.answer_udp(zones, query.to_wire()))


def test_answers() -> None:
    zones = _zones()
    r = _ask(zones, "laptop.lan.example", "A")
    assert r.rcode() == dns.rcode.NOERROR and r.flags & dns.flags.AA
    assert [rr.to_text() for rr in r.answer[0]] == ["10.77.53.7"]
    r = _ask(zones, "7.53.77.10.in-addr.arpa", "PTR")
    assert r.answer[0][0].to_text() == "laptop.lan.example."
    assert _ask(zones, "8.53.77.10.in-addr.arpa", "PTR").rcode() == dns.rcode.NXDOMAIN
    r = _ask(zones, "lan.example", "SOA")
    assert r.answer[0][0].serial == 1_700_000_000
    r = _ask(zones, "nope.lan.example", "A")
    assert r.rcode() == dns.rcode.NXDOMAIN and r.authority[0].rdtype == dns.rdatatype.SOA
    r = _ask(zones, "www.lan.example", "AAAA")  # NODATA
    assert r.rcode() == dns.rcode.NOERROR and not r.answer and r.authority
    r = _ask(zones, "b.lan.example", "A")  # empty non-terminal: NODATA, not NXDOMAIN
    assert r.rcode() == dns.rcode.NOERROR and not r.answer
    r = _ask(zones, "web.lan.example", "A")
    assert [rr.rdtype for rr in r.answer] == [dns.rdatatype.CNAME, dns.rdatatype.A]
    assert _ask(zones, "other.example", "A").rcode() == dns.rcode.REFUSED


def test_serial_moves_only_with_content() -> None:
    first = _zones()
    again = _zones(now=1_700_000_100, previous=first)
    origin = dns.name.from_text("lan.example")
    assert again[origin].serial == first[origin].serial
    ROWS["records"].append({"zone": "lan.example", "name": "new.lan.example", "type": "A",
                            "value": "10.77.53.9", "ttl": 60})
    try:
        changed = _zones(now=1_699_999_000, previous=first)  # the clock went back
    finally:
        ROWS["records"].pop()
    assert changed[origin].serial == first[origin].serial + 1


def test_axfr_starts_and_ends_with_soa() -> None:
    zones = _zones()
    query = dns.message.make_query("lan.example", "AXFR")
    wires = zonedata.transfer(zones, query, allowed=True)
    rrsets = [rr for w in wires
              for rr in dns.message.from_wire(w, one_rr_per_rrset=True).answer]
    assert rrsets[0].rdtype == rrsets[-1].rdtype == dns.rdatatype.SOA
    assert any(rr.name.to_text() == "laptop.lan.example." for rr in rrsets)
    refused = dns.message.from_wire(zonedata.transfer(zones, query, allowed=False)[0])
    assert refused.rcode() == dns.rcode.REFUSED


def test_fuzz_never_raises() -> None:
    zones = _zones()
    rng = random.Random(1035)
    seeds = [dns.message.make_query(n, t, use_edns=rng.random() < 0.5).to_wire()
             for n in ("laptop.lan.example", "lan.example", "x.y.z")
             for t in ("A", "PTR", "SOA", "ANY", "AXFR", "IXFR", "TXT")]
    cache = zonedata.AnswerCache(entries=1000)  # small: it fills and empties during the run
    for i in range(20_000):
        if i % 3 == 0:
            wire = rng.randbytes(rng.randrange(0, 64))
        else:
            wire = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 6)):
                wire[rng.randrange(len(wire))] = rng.randrange(256)
            wire = bytes(wire[: rng.randrange(len(wire) + 1)] if rng.random() < 0.3 else wire)
        reply = zonedata.answer_udp(zones, wire)
        assert reply is None or len(reply) <= zonedata.UDP_MAX
        # The cache gives the same bytes, asked first or again under another ID.
        assert cache.answer(zones, wire) == reply
        if len(wire) >= 2:
            other_id = bytes([wire[0] ^ 0x5A, wire[1]]) + wire[2:]
            assert cache.answer(zones, other_id) == zonedata.answer_udp(zones, other_id)
        parsed = zonedata.parse(wire)
        if isinstance(parsed, dns.message.Message):
            zonedata.transfer(zones, parsed, allowed=True)


def test_answer_cache_follows_the_zones() -> None:
    zones = _zones()
    cache = zonedata.AnswerCache()
    query = dns.message.make_query("www.lan.example", "A")
    first = dns.message.from_wire(cache.answer(zones, query.to_wire()))
    query.id = (query.id + 1) % 65536
    again = dns.message.from_wire(cache.answer(zones, query.to_wire()))
    assert again.id == query.id and again.answer == first.answer
    ROWS["records"][0]["value"] = "10.77.53.81"
    try:
        reloaded = _zones(previous=zones)
    finally:
        ROWS["records"][0]["value"] = "10.77.53.80"
    fresh = dns.message.from_wire(cache.answer(reloaded, query.to_wire()))
    assert [rr.to_text() for rr in fresh.answer[0]] == ["10.77.53.81"]


def test_empty_non_terminals_and_absent_names() -> None:
    zone = _zones()[dns.name.from_text("lan.example")]
    for name, exists in (("b.lan.example", True), ("a.b.lan.example", True),
                         ("lan.example", True), ("c.b.lan.example", False),
                         ("nope.lan.example", False), ("B.LAN.example", True)):
        assert zone.exists(dns.name.from_text(name)) is exists, name
