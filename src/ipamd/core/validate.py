"""Pure parsers for the values the address plan stores: addresses, networks, names.

MACs, DUIDs and hex octets are parsed in ``ipamd.core.identifiers``.

Each parser returns the canonical form or raises ``ValueError`` with a message that
does not name the field (the caller adds it: ``"mac: must be six octets ..."``).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata

IPv4 = ipaddress.IPv4Address
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def clean_text(value: str, *, max_length: int, multiline: bool = False) -> str:
    """Printable text only: NUL, control characters and lone surrogates never reach Postgres."""
    if len(value) > max_length:
        raise ValueError(f"at most {max_length} characters")
    for char in value:
        if multiline and char in "\n\t":
            continue
        category = unicodedata.category(char)
        if category in {"Cc", "Cs"}:
            raise ValueError("must not contain control characters")
    return value


def ipv4(text: str) -> IPv4:
    try:
        return ipaddress.IPv4Address(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an IPv4 address (dotted quad, e.g. 10.0.0.10)") from None


def ip_address(text: str) -> IPAddress:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is not an IP address (e.g. 10.0.0.10 or 2001:db8::10)") from None


def network(text: str, *, ipv4_only: bool = False) -> Network:
    """A CIDR with no host bits set; the message proposes the network that was meant."""
    text = text.strip()
    if "/" not in text:
        raise ValueError(f"{text!r} is not in CIDR notation (address/length, e.g. 10.0.0.0/24)")
    try:
        loose = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not a valid CIDR (e.g. 10.0.0.0/24)") from None
    if ipv4_only and loose.version != 4:
        raise ValueError("must be an IPv4 network: the DHCP server is DHCPv4")
    try:
        return ipaddress.ip_network(text, strict=True)
    except ValueError:
        raise ValueError(f"{text!r} has host bits set; the network is {loose}") from None


def host_range(net: Network) -> tuple[int, int]:
    """First and last assignable address (as ints).

    IPv4: /31 and /32 have no network/broadcast address (RFC 3021). IPv6 has no broadcast,
    but its first address is the Subnet-Router anycast address (RFC 4291 §2.6.1), never a
    host's; a /127 (RFC 6164) and a /128 use every address.
    """
    first, last = int(net.network_address), int(net.broadcast_address)
    if net.version == 6:
        return (first, last) if net.prefixlen >= 127 else (first + 1, last)
    if net.prefixlen >= 31:
        return first, last
    return first + 1, last - 1


def address_in_family(net: Network, value: int) -> IPAddress:
    """The address ``value`` of ``net``'s family (ip_address(int) would guess IPv4 for small
    IPv6 values)."""
    if net.version == 6:
        return ipaddress.IPv6Address(value)
    return ipaddress.IPv4Address(value)


def host_count(net: Network) -> int:
    first, last = host_range(net)
    return last - first + 1


def host_in(net: Network, address: IPAddress) -> str | None:
    """None when ``address`` is an assignable host of ``net``; otherwise why not."""
    if address.version != net.version:
        return f"{address} is an IPv{address.version} address; the subnet {net} is IPv{net.version}"
    if address not in net:
        return f"{address} is outside the subnet {net}"
    first, last = host_range(net)
    if int(address) < first:
        if net.version == 6:
            return f"{address} is the Subnet-Router anycast address of {net} (RFC 4291)"
        return f"{address} is the network address of {net}"
    if int(address) > last:
        return f"{address} is the broadcast address of {net}"
    return None


def hostname(text: str) -> str:
    """A host name or FQDN of RFC 1123 labels; kept as given, minus a trailing dot."""
    name = text.strip().removesuffix(".")
    if not name:
        raise ValueError("must not be empty")
    if len(name) > 253:
        raise ValueError("at most 253 characters")
    for label in name.lower().split("."):
        if not _LABEL.match(label):
            raise ValueError(
                f"{text!r} is not a host name: labels of 1-63 letters, digits and hyphens, "
                "not starting or ending with a hyphen"
            )
    return name


def dns_name(text: str) -> str:
    """A DNS zone name → lowercase, no trailing dot."""
    return hostname(text).lower()


def reverse_zone(text: str) -> str:
    """A reverse zone: IPv4's under in-addr.arpa, IPv6's under ip6.arpa (RFC 3596 §2.5)."""
    name = dns_name(text)
    if not name.endswith(("in-addr.arpa", "ip6.arpa")):
        raise ValueError(f"{text!r} is not a reverse zone (…in-addr.arpa or …ip6.arpa)")
    return name
