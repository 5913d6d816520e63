"""DNS names for dynamic updates: a client's name made into valid labels inside a zone.

Shared by the DHCP server (the lease's ``fqdn``) and the DNS room (static record names).
"""

from __future__ import annotations

import ipaddress
import re

_BAD = re.compile(r"[^a-z0-9-]+")
# What most clients send, already a valid label: kept as it is, without the rewriting.
_GOOD = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
NAME_MAX = 253
LABEL_MAX = 63


def label(raw: str) -> str | None:
    """One host label from anything a client sends: lowercase LDH, no edge hyphens."""
    if _GOOD.fullmatch(raw):
        return raw
    text = _BAD.sub("-", raw.lower()).strip("-")[:LABEL_MAX].rstrip("-")
    return text or None


def ddns_fqdn(hostname: str | None, fqdn: str | None, zone: str | None) -> str | None:
    """The name to register for a client (no trailing dot), or None when it has none.

    Option 81's name wins over option 12's (RFC 4702 §3). A fully qualified name is kept
    when it lies inside ``zone`` (each label sanitised); otherwise its first label is put in
    the zone, as with a bare host name.
    """
    if not zone:
        return None
    zone = zone.lower().rstrip(".")
    for given in (fqdn, hostname):
        if not given:
            continue
        parts = [label(part) for part in given.strip().rstrip(".").split(".")]
        if not parts or parts[0] is None:
            continue
        name = ".".join(p for p in parts if p) if all(parts) else ""
        if not name.endswith("." + zone):  # outside the zone, or its apex: host label only
            name = f"{parts[0]}.{zone}"
        if len(name) <= NAME_MAX:
            return name
    return None


def in_zone(name: str, zone: str) -> bool:
    name, zone = name.lower().rstrip("."), zone.lower().rstrip(".")
    return name == zone or name.endswith("." + zone)


def reverse_name(ip: str) -> str:
    """The in-addr.arpa name of an IPv4 address, the ip6.arpa name (RFC 3596 §2.5: 32
    nibbles, least significant first) of an IPv6 one; no trailing dot."""
    if ":" in ip:
        return ipaddress.IPv6Address(ip).reverse_pointer
    return ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
