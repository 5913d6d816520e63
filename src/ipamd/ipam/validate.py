"""Pure parsers for the values the address plan stores: addresses, networks, MACs, DUIDs, names.

Each parser returns the canonical form or raises ``ValueError`` with a message that
does not name the field (the caller adds it: ``"mac: must be six octets ..."``).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata

IPv4 = ipaddress.IPv4Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_HEX_PAIRS = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2})*$")
_CISCO = re.compile(r"^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4})*$")
_BARE_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")

# RFC 8415 §11: DUID types and the smallest length (type code included) of each.
DUID_MIN_LENGTH = {1: 9, 2: 7, 3: 5, 4: 18}
DUID_MAX_LENGTH = 130  # 128 octets of identifier plus the 2-octet type code


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


def ip_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address") from None


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


def host_range(net: ipaddress.IPv4Network) -> tuple[int, int]:
    """First and last assignable address (as ints): /31 and /32 have no network/broadcast."""
    first, last = int(net.network_address), int(net.broadcast_address)
    if net.prefixlen >= 31:
        return first, last
    return first + 1, last - 1


def host_count(net: ipaddress.IPv4Network) -> int:
    first, last = host_range(net)
    return last - first + 1


def host_in(net: ipaddress.IPv4Network, address: IPv4) -> str | None:
    """None when ``address`` is an assignable host of ``net``; otherwise why not."""
    if address not in net:
        return f"{address} is outside the subnet {net}"
    first, last = host_range(net)
    if int(address) < first:
        return f"{address} is the network address of {net}"
    if int(address) > last:
        return f"{address} is the broadcast address of {net}"
    return None


def _octets(text: str) -> bytes | None:
    """Hex octets in colon/dash pairs, Cisco dotted quads, or bare hex; None when not hex."""
    text = text.strip()
    if _HEX_PAIRS.match(text):
        return bytes(int(part, 16) for part in re.split(r"[:-]", text))
    if _CISCO.match(text):
        return bytes.fromhex(text.replace(".", ""))
    if _BARE_HEX.match(text):
        return bytes.fromhex(text)
    return None


def colon_hex(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def mac(text: str) -> str:
    """Six octets in any common notation → lowercase colon-separated (aa:bb:cc:dd:ee:ff).

    Anything longer or shorter is refused: a DHCP client identifier (option 61) such as
    01:aa:bb:cc:dd:ee:ff is not a hardware address (spec §2, reservation rule 4).
    """
    raw = _octets(text)
    if raw is None:
        raise ValueError(
            f"{text!r} is not a MAC address (aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, "
            "aabb.ccdd.eeff or aabbccddeeff)"
        )
    if len(raw) != 6:
        raise ValueError(
            f"a MAC address is six octets; {text!r} has {len(raw)}. A client identifier is "
            "not a MAC: give it as duid (or client_id) instead"
        )
    if raw == bytes(6):
        raise ValueError("00:00:00:00:00:00 does not identify a client")
    if raw[0] & 1:
        raise ValueError(f"{colon_hex(raw)} is a multicast/broadcast address, not a client's")
    return colon_hex(raw)


def mac_prefix(text: str) -> str:
    """One to six leading octets of a MAC (an OUI is three) → lowercase colon-separated."""
    raw = _octets(text)
    if raw is None or not 1 <= len(raw) <= 6:
        raise ValueError(f"{text!r} is not a MAC prefix (1 to 6 octets, e.g. 00:1a:2b)")
    return colon_hex(raw)


def duid(text: str) -> str:
    """A DHCP Unique Identifier (RFC 8415 §11) → lowercase colon-separated hex."""
    raw = _octets(text)
    if raw is None:
        raise ValueError(f"{text!r} is not a DUID (hex octets, e.g. 00:03:00:01:aa:bb:cc:dd:ee:ff)")
    if len(raw) < 3 or len(raw) > DUID_MAX_LENGTH:
        raise ValueError(f"a DUID is 3 to {DUID_MAX_LENGTH} octets; got {len(raw)}")
    kind = int.from_bytes(raw[:2], "big")
    if kind not in DUID_MIN_LENGTH:
        raise ValueError(
            f"DUID type {kind} is unknown (1 DUID-LLT, 2 DUID-EN, 3 DUID-LL, 4 DUID-UUID)"
        )
    if kind == 4 and len(raw) != 18:
        raise ValueError(f"a DUID-UUID is 18 octets; got {len(raw)}")
    if len(raw) < DUID_MIN_LENGTH[kind]:
        raise ValueError(f"a type {kind} DUID is at least {DUID_MIN_LENGTH[kind]} octets")
    return colon_hex(raw)


def hex_bytes(text: str, *, min_length: int = 1, max_length: int = 255) -> bytes:
    raw = _octets(text) if text.strip() else None
    if raw is None:
        raise ValueError(f"{text!r} is not hex octets (e.g. 01:02:0a or 01020a)")
    if not min_length <= len(raw) <= max_length:
        raise ValueError(f"must be {min_length} to {max_length} octets; got {len(raw)}")
    return raw


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
    name = dns_name(text)
    if not name.endswith("in-addr.arpa"):
        raise ValueError(f"{text!r} is not an IPv4 reverse zone (…in-addr.arpa)")
    return name
