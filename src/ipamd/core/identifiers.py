"""Client identifiers — MAC addresses, DUIDs, hex octets — parsed and shown in one way.

Parsers return the canonical form or raise ``ValueError`` with a message that does not name
the field (the caller adds it: ``"mac: must be six octets ..."``). Stored form: a MAC as
``aa:bb:cc:dd:ee:ff``; a DUID as colon-separated lowercase hex; raw identifiers (client id,
circuit id, remote id) as bytes, shown as colon-separated hex.
"""

from __future__ import annotations

import re

_HEX_PAIRS = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2})*$")
_CISCO = re.compile(r"^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4})*$")
_BARE_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")

# RFC 8415 §11: DUID types and the smallest length (type code included) of each.
DUID_MIN_LENGTH = {1: 9, 2: 7, 3: 5, 4: 18}
DUID_MAX_LENGTH = 130  # 128 octets of identifier plus the 2-octet type code

# The notations a lookup accepts (one separator style per value; history, lease filters).
_MAC_FORMS = (
    re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}"),
    re.compile(r"[0-9a-f]{2}(-[0-9a-f]{2}){5}"),
    re.compile(r"[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}"),
    re.compile(r"[0-9a-f]{12}"),
)
_HEX_FORMS = (
    re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2})*"),
    re.compile(r"[0-9a-f]{2}(-[0-9a-f]{2})*"),
    re.compile(r"([0-9a-f]{2})+"),
)
HEX_HELP = "hex octets such as 01:aa:bb:cc, 01-aa-bb-cc or 01aabbcc"


def octets(text: str) -> bytes | None:
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
    01:aa:bb:cc:dd:ee:ff is not a hardware address (docs/api-ipam.md, reservation rule 4).
    """
    raw = octets(text)
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
    raw = octets(text)
    if raw is None or not 1 <= len(raw) <= 6:
        raise ValueError(f"{text!r} is not a MAC prefix (1 to 6 octets, e.g. 00:1a:2b)")
    return colon_hex(raw)


def duid(text: str) -> str:
    """A DHCP Unique Identifier (RFC 8415 §11) → lowercase colon-separated hex."""
    raw = octets(text)
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
    raw = octets(text) if text.strip() else None
    if raw is None:
        raise ValueError(f"{text!r} is not hex octets (e.g. 01:02:0a or 01020a)")
    if not min_length <= len(raw) <= max_length:
        raise ValueError(f"must be {min_length} to {max_length} octets; got {len(raw)}")
    return raw




def hex_or_none(raw: bytes | None) -> str | None:
    """A stored raw identifier (client id, circuit id, remote id) as shown: 01:aa:bb."""
    return None if raw is None else bytes(raw).hex(":")


def duid_text(value: str | None) -> str | None:
    """Stored DUIDs are plain lowercase hex; shown colon-separated when they are whole octets."""
    if value is None:
        return None
    try:
        return bytes.fromhex(value).hex(":")
    except ValueError:
        return value


def bare_hex(text: str | None) -> str | None:
    """Only the hex digits of a stored MAC/DUID/prefix, lowercase (what the DHCP plan compares)."""
    if text is None:
        return None
    cleaned = "".join(ch for ch in text.lower() if ch in "0123456789abcdef")
    return cleaned or None


def lookup_mac(text: str) -> str:
    """A MAC to look up (history, lease filters): six octets in one notation, any MAC accepted."""
    value = text.strip().lower()
    if not any(form.fullmatch(value) for form in _MAC_FORMS):
        raise ValueError(
            f"{text!r} is not a MAC address (aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, "
            "aabb.ccdd.eeff or aabbccddeeff)"
        )
    return bytes.fromhex(re.sub(r"[:.-]", "", value)).hex(":")


def lookup_hex(text: str, max_length: int = 255) -> bytes:
    """Raw identifier octets to look up: one separator style, an optional 0x, at most one option."""
    value = text.strip().lower().removeprefix("0x")
    if not any(form.fullmatch(value) for form in _HEX_FORMS):
        raise ValueError(f"{text!r} is not hex; use {HEX_HELP}")
    raw = bytes.fromhex(re.sub(r"[:-]", "", value))
    if len(raw) > max_length:
        raise ValueError(f"longer than {max_length} octets")
    return raw
