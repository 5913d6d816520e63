"""The change one outbox row (kind dns) carries, as the fan-out trigger wrote it
(migration 0006), turned into typed values for the adapters.

source lease:  op add|remove, name (the lease's fqdn), ip (IPv4: an A record; IPv6: AAAA,
               PTR in ip6.arpa), zone, reverse_zone, ttl, and the client's identity from
               the event (for the DHCID, RFC 4701: a DHCPv6 lease's DUID).
source static: before / after (the static record's audit images), zone, default_ttl.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import dns.name
import dns.rdataclass
import dns.rdatatype
from dns.rdtypes.IN.DHCID import DHCID

from ipamd.core import dnsname


class BadChange(ValueError):
    """The row cannot be turned into a DNS change (it never will: no retry helps)."""


@dataclass(frozen=True)
class Record:
    name: str  # absolute, no trailing dot
    type: str
    value: str  # presentation form
    ttl: int


@dataclass(frozen=True)
class LeaseChange:
    op: str  # add | remove
    name: str
    ip: str
    zone: str
    reverse_zone: str | None
    ttl: int
    dhcid: DHCID

    @property
    def reverse_name(self) -> str:
        return dnsname.reverse_name(self.ip)

    @property
    def rtype(self) -> str:
        """The forward record's type: AAAA for a DHCPv6 lease (RFC 4704), else A."""
        return "AAAA" if ":" in self.ip else "A"


@dataclass(frozen=True)
class StaticChange:
    zone: str
    remove: Record | None
    add: Record | None


Change = LeaseChange | StaticChange


def dhcid_for(name: str, mac: str | None, client_id: str | None,
              duid: str | None = None) -> DHCID:
    """RFC 4701 §3.3: identifier type, digest type 1 (SHA-256) of identifier || FQDN wire.

    A DHCPv6 client's DUID (``duid``, set for DHCPv6 leases only) as type 2; else the
    client identifier (option 61) when sent — an RFC 4361 one (type 255) as its DUID
    (type 2: a dual-stack RFC 4361 client has one DHCID), another as type 1; else the
    hardware address (type 0, htype 1 + chaddr).
    """
    if duid:
        kind, identifier = 2, bytes.fromhex(duid.replace(":", ""))
    elif client_id:
        raw = bytes.fromhex(client_id.replace(":", ""))
        if len(raw) > 5 and raw[0] == 255:
            kind, identifier = 2, raw[5:]
        else:
            kind, identifier = 1, raw
    elif mac:
        kind, identifier = 0, b"\x01" + bytes.fromhex(mac.replace(":", ""))
    else:
        raise BadChange("the lease has neither a client identifier nor a MAC for its DHCID")
    wire = dns.name.from_text(name).to_digestable()  # canonical (lower-case) wire form
    digest = hashlib.sha256(identifier + wire).digest()
    return DHCID(  # type: ignore[no-untyped-call]  # dnspython: DHCID.__init__ is unannotated
        dns.rdataclass.IN, dns.rdatatype.DHCID, kind.to_bytes(2, "big") + b"\x01" + digest)


def _record(image: Any, default_ttl: int) -> Record | None:
    if not image:
        return None
    return Record(image["name"], image["type"], image["value"],
                  image.get("ttl") or default_ttl)


def parse(dns_field: Any, payload: Any) -> Change:
    """The row's ``dns`` column and its event payload → a change; BadChange if unusable."""
    try:
        if dns_field["source"] == "static":
            default = int(dns_field.get("default_ttl") or 3600)
            return StaticChange(dns_field["zone"], _record(dns_field.get("before"), default),
                                _record(dns_field.get("after"), default))
        name = dns_field["name"]
        return LeaseChange(
            op=dns_field["op"], name=name, ip=dns_field["ip"], zone=dns_field["zone"],
            reverse_zone=dns_field.get("reverse_zone"), ttl=int(dns_field["ttl"]),
            dhcid=dhcid_for(name, payload.get("mac"), payload.get("client_id"),
                            payload.get("duid") if ":" in dns_field["ip"] else None),
        )
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, BadChange):
            raise
        raise BadChange(f"the outbox row's DNS change is incomplete: {error!r}") from None


def server_id(dns_field: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(dns_field["server_id"]))
    except (KeyError, TypeError, ValueError):
        raise BadChange("the outbox row names no DNS server") from None
