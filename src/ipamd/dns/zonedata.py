"""The embedded server's zones in memory and its answers: pure, no sockets, no SQL.

``build`` turns the rows the loader read (zones, static records, leases) into Zones;
``answer`` turns one query's bytes into the reply's bytes (or None: nothing to send).
A malformed query is FORMERR when its header can be read and dropped otherwise; nothing in
a query can raise out of ``answer``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rrset

from ipamd.core import dnsname

UDP_DEFAULT = 512
UDP_MAX = 4096
AXFR_RRSETS_PER_MESSAGE = 200


@dataclass
class Zone:
    origin: dns.name.Name
    serial: int
    ttl: int
    soa: dns.rrset.RRset
    # owner name → type → rdataset (the apex holds SOA and NS too)
    nodes: dict[dns.name.Name, dict[dns.rdatatype.RdataType, dns.rdataset.Rdataset]] = field(
        default_factory=dict)
    digest: str = ""
    # Every owner name and all its ancestors, made on the first lookup after a change:
    # a name exists (records, or an empty non-terminal) iff it is in this set.
    _names: set[dns.name.Name] | None = field(default=None, repr=False, compare=False)

    def add(self, name: dns.name.Name, ttl: int, rdata: dns.rdata.Rdata) -> None:
        self._names = None
        types = self.nodes.setdefault(name, {})
        found = types.get(rdata.rdtype)
        if found is None:
            found = types[rdata.rdtype] = dns.rdataset.Rdataset(dns.rdataclass.IN, rdata.rdtype)
        found.add(rdata, ttl)

    def exists(self, name: dns.name.Name) -> bool:
        """The name has records, or names below it do (an empty non-terminal: NODATA)."""
        if self._names is None:
            names: set[dns.name.Name] = set()
            for owner in self.nodes:
                while owner not in names:
                    names.add(owner)
                    if len(owner) <= 1:
                        break
                    owner = owner.parent()
            self._names = names
        return name in self._names

    def rrsets(self) -> Iterable[dns.rrset.RRset]:
        """Every RRset, SOA first (for AXFR)."""
        yield self.soa
        for name in sorted(self.nodes):
            for rdtype, rdataset in sorted(self.nodes[name].items()):
                if rdtype == dns.rdatatype.SOA:
                    continue
                rrset = dns.rrset.RRset(name, dns.rdataclass.IN, rdtype)
                rrset.update(rdataset)  # type: ignore[no-untyped-call]  # dnspython: Set.update
                yield rrset


def _soa(origin: dns.name.Name, ns_name: str, hostmaster: str, serial: int,
         ttl: int) -> dns.rrset.RRset:
    text = (f"{ns_name.rstrip('.')}. {hostmaster.rstrip('.')}. {serial} 3600 600 604800 "
            f"{min(ttl, 3600)}")
    rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.SOA, text)
    return dns.rrset.from_rdata(origin, ttl, rdata)


def build(
    rows: Mapping[str, Any], ns_name: str, hostmaster: str,
    previous: Mapping[dns.name.Name, Zone] | None = None, now: float | None = None,
) -> dict[dns.name.Name, Zone]:
    """Zones from rows; a zone whose content changed gets a higher serial (unix time, or the
    previous serial + 1 when that is not higher), an unchanged one keeps its serial."""
    previous = previous or {}
    stamp = int(now if now is not None else time.time())
    contents: dict[str, list[tuple[str, int, str, str]]] = {z["name"]: [] for z in rows["zones"]}
    ttls = {z["name"]: int(z["default_ttl"]) for z in rows["zones"]}
    for r in rows["records"]:
        contents[r["zone"]].append((r["name"], int(r["ttl"]), r["type"], r["value"]))
    owners: dict[str, str] = {}
    # Oldest first: a name belongs to its first holder.
    for index, lease in enumerate(rows["leases"]):
        name, ip = lease["fqdn"], lease["ip"]
        zone = lease["zone"]
        # The holder is its DUID when it has one (DHCPv6, or an RFC 4361 DHCPv4 client: one
        # DHCID, RFC 4701 §3.3), so a dual-stack client's A and AAAA share its name, as
        # RFC 4703 lets them; any other holder is its lease alone.
        duid = lease.get("duid")
        owner = duid.replace(":", "").lower() if duid else f"#{index}"
        if zone in contents and dnsname.in_zone(name, zone) \
                and owners.setdefault(name, owner) == owner:
            rtype = "AAAA" if ":" in ip else "A"
            contents[zone].append((name, int(lease["ttl"]), rtype, ip))
            reverse = lease["reverse_zone"]
            if reverse in contents:
                contents[reverse].append((dnsname.reverse_name(ip), int(lease["ttl"]), "PTR",
                                          name + "."))
    zones: dict[dns.name.Name, Zone] = {}
    for zname, records in contents.items():
        origin = dns.name.from_text(zname)
        digest = hashlib.sha256(repr(sorted(records)).encode()).hexdigest()
        old = previous.get(origin)
        if old is not None and old.digest == digest:
            serial = old.serial
        else:
            serial = max(stamp, (old.serial + 1) if old else 0) & 0xFFFFFFFF
        ttl = ttls[zname]
        zone = Zone(origin, serial, ttl, _soa(origin, ns_name, hostmaster, serial, ttl),
                    digest=digest)
        zone.nodes[origin] = {dns.rdatatype.SOA: zone.soa.to_rdataset()}
        zone.add(origin, ttl, dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.NS,
                                                  ns_name.rstrip(".") + "."))
        for name, rttl, rtype, value in records:
            try:
                rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(rtype),
                                            value)
            except (dns.exception.DNSException, ValueError):
                continue  # stored values were checked on the way in; never fail a reload
            zone.add(dns.name.from_text(name), rttl, rdata)
        zone.exists(origin)  # index the names now, on the reload path rather than a query's
        zones[origin] = zone
    return zones


def find_zone(zones: Mapping[dns.name.Name, Zone], qname: dns.name.Name) -> Zone | None:
    name = qname
    while True:
        zone = zones.get(name)
        if zone is not None:
            return zone
        if name == dns.name.root or len(name) <= 1:
            return None
        name = name.parent()


def _formerr(wire: bytes) -> bytes | None:
    if len(wire) < 12 or wire[2] & 0x80:  # no header, or a response: never answer
        return None
    # Echo the id and opcode, QR=1, RCODE=FORMERR, no sections.
    return wire[:2] + bytes([0x80 | (wire[2] & 0x78), dns.rcode.FORMERR]) + b"\x00" * 8


def parse(wire: bytes) -> dns.message.Message | bytes | None:
    """The query, or the bytes of a FORMERR reply, or None (drop)."""
    try:
        query = dns.message.from_wire(wire, ignore_trailing=False)
    except Exception:  # any parse failure of hostile input is FORMERR, never a crash
        return _formerr(wire)
    if query.flags & dns.flags.QR:
        return None
    if len(query.question) != 1:
        return _formerr(wire)
    return query


def respond(zones: Mapping[dns.name.Name, Zone], query: dns.message.Message) -> dns.message.Message:
    """The authoritative reply to a one-question QUERY (not AXFR/IXFR)."""
    response = dns.message.make_response(query)
    response.flags &= ~dns.flags.RA
    if query.opcode() != dns.opcode.QUERY:
        response.set_rcode(dns.rcode.NOTIMP)
        return response
    q = query.question[0]
    if q.rdclass != dns.rdataclass.IN:
        response.set_rcode(dns.rcode.REFUSED)
        return response
    zone = find_zone(zones, q.name)
    if zone is None:
        response.set_rcode(dns.rcode.REFUSED)
        return response
    response.flags |= dns.flags.AA
    name, rdtype = q.name, q.rdtype
    for _ in range(8):  # follow CNAMEs inside the zone, a bounded number of times
        types = zone.nodes.get(name)
        if types is None:
            break
        if rdtype == dns.rdatatype.ANY:
            for found_type, rdataset in types.items():
                response.answer.append(_rrset(name, found_type, rdataset))
            return response
        found = types.get(rdtype)
        if found is not None:
            response.answer.append(_rrset(name, rdtype, found))
            if rdtype == dns.rdatatype.NS and name == zone.origin:
                _glue(zone, found, response)
            return response
        cname = types.get(dns.rdatatype.CNAME)
        if cname is None:
            response.authority.append(zone.soa)  # NODATA
            return response
        response.answer.append(_rrset(name, dns.rdatatype.CNAME, cname))
        name = cname[0].target
        if not name.is_subdomain(zone.origin):
            return response
    if response.answer:
        return response
    if not zone.exists(name):
        response.set_rcode(dns.rcode.NXDOMAIN)
    response.authority.append(zone.soa)
    return response


def _rrset(name: dns.name.Name, rdtype: dns.rdatatype.RdataType,
           rdataset: dns.rdataset.Rdataset) -> dns.rrset.RRset:
    rrset = dns.rrset.RRset(name, dns.rdataclass.IN, rdtype)
    rrset.update(rdataset)  # type: ignore[no-untyped-call]  # dnspython: Set.update is unannotated
    return rrset


def _glue(zone: Zone, ns: dns.rdataset.Rdataset, response: dns.message.Message) -> None:
    for rdata in ns:
        types = zone.nodes.get(rdata.target, {})
        if dns.rdatatype.A in types:
            response.additional.append(_rrset(rdata.target, dns.rdatatype.A,
                                              types[dns.rdatatype.A]))


def to_udp(query: dns.message.Message, response: dns.message.Message) -> bytes:
    """Wire form within the client's UDP size (EDNS, else 512); TC=1 when it does not fit."""
    size = UDP_DEFAULT
    if query.edns >= 0:
        size = max(UDP_DEFAULT, min(query.payload, UDP_MAX))
    try:
        return response.to_wire(max_size=size)
    except dns.exception.TooBig:
        response.answer.clear()
        response.authority.clear()
        response.additional.clear()
        response.flags |= dns.flags.TC
        return response.to_wire(max_size=size)


def answer_udp(zones: Mapping[dns.name.Name, Zone], wire: bytes) -> bytes | None:
    query = parse(wire)
    if query is None or isinstance(query, bytes):
        return query
    rdtype = query.question[0].rdtype
    if rdtype in (dns.rdatatype.AXFR, dns.rdatatype.IXFR):
        # Zone transfers are TCP only (RFC 5936 §4.2); an IXFR over UDP gets the SOA
        # (RFC 1995 §2), so the secondary comes back over TCP.
        if rdtype == dns.rdatatype.IXFR:
            zone = find_zone(zones, query.question[0].name)
            if zone is not None and zone.origin == query.question[0].name:
                response = dns.message.make_response(query)
                response.flags |= dns.flags.AA
                response.answer.append(zone.soa)
                return to_udp(query, response)
        response = dns.message.make_response(query)
        response.set_rcode(dns.rcode.REFUSED)
        return to_udp(query, response)
    return to_udp(query, respond(zones, query))


CACHE_QUERY_MAX = 512  # longer queries are answered, never stored
CACHE_ENTRIES = 65_536


class AnswerCache:
    """UDP replies by the query's bytes after its ID. A reply depends only on those bytes and
    the zones, so a question asked again is answered by putting its ID in front of the reply
    already made; the cache empties when the zones are swapped (a reload) or it is full."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self.entries = entries
        self.zones: Mapping[dns.name.Name, Zone] | None = None
        self.replies: dict[bytes, bytes] = {}

    def answer(self, zones: Mapping[dns.name.Name, Zone], wire: bytes) -> bytes | None:
        if zones is not self.zones:
            self.zones, self.replies = zones, {}
        key = wire[2:]
        found = self.replies.get(key)
        if found is not None:
            return wire[:2] + found
        reply = answer_udp(zones, wire)
        if reply is not None and 12 <= len(wire) <= CACHE_QUERY_MAX:
            if len(self.replies) >= self.entries:
                self.replies = {}
            self.replies[key] = reply[2:]
        return reply


def transfer(zones: Mapping[dns.name.Name, Zone], query: dns.message.Message,
             allowed: bool) -> list[bytes]:
    """AXFR (and IXFR, answered in AXFR form: RFC 1995 §4) as TCP messages."""
    q = query.question[0]
    zone = find_zone(zones, q.name)
    response = dns.message.make_response(query)
    if not allowed or zone is None or zone.origin != q.name:
        response.set_rcode(dns.rcode.REFUSED if not allowed or zone is None
                           else dns.rcode.NOTAUTH)
        return [response.to_wire()]
    rrsets = [*zone.rrsets(), zone.soa]
    messages: list[bytes] = []
    for start in range(0, len(rrsets), AXFR_RRSETS_PER_MESSAGE):
        part = dns.message.make_response(query)
        part.flags |= dns.flags.AA
        if start:
            part.question = []
        part.answer = rrsets[start:start + AXFR_RRSETS_PER_MESSAGE]
        messages.append(part.to_wire(max_size=65535))
    return messages
