"""Client identities and host names as the API takes them (docs/api-ipam.md, "Reservations"),
checked before the plan is shown so a refusal names the source line, not a 422 at apply.

Mirrors `ipamd.core.identifiers` and `core.validate.hostname` (this room imports nothing of
ipamd); tests/unit/importer checks that they agree.
"""

from __future__ import annotations

import re

from ipamd.importer.options import Unmappable, colon_hex, hex_octets

DUID_MIN_LENGTH = {1: 9, 2: 7, 3: 5, 4: 18}  # RFC 8415 §11: LLT, EN, LL, UUID
DUID_MAX_LENGTH = 130
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$|^[0-9a-fA-F]{12}$|"
                  r"^[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}$")


def mac(text: str) -> str:
    """Six octets of a client's hardware address, lowercase colon-separated."""
    cleaned = text.strip()
    if not _MAC.match(cleaned):
        raise Unmappable(f"{text!r} is not a six-octet MAC address")
    raw = bytes.fromhex(re.sub(r"[:.-]", "", cleaned))
    if raw == bytes(6):
        raise Unmappable("00:00:00:00:00:00 does not identify a client")
    if raw[0] & 1:
        raise Unmappable(f"{colon_hex(raw)} is a multicast/broadcast address, not a client's")
    return colon_hex(raw)


def client_id_mac(text: str) -> str:
    """A client identifier of the `01` + MAC form (RFC 2132 §9.14: hardware type 1, Ethernet)
    is that MAC; any other client identifier is not a MAC (reservation rule 4)."""
    raw = hex_octets(text)
    if len(raw) != 7 or raw[0] != 1:
        raise Unmappable(f"client-id {text} is not of the 01 + MAC form; the appliance "
                         "identifies a DHCPv4 reservation by MAC (or DUID)")
    return mac(colon_hex(raw[1:]))


def duid(text: str) -> str:
    raw = hex_octets(text)
    if len(raw) < 3 or len(raw) > DUID_MAX_LENGTH:
        raise Unmappable(f"a DUID is 3 to {DUID_MAX_LENGTH} octets; {text} has {len(raw)}")
    kind = int.from_bytes(raw[:2], "big")
    if kind not in DUID_MIN_LENGTH:
        raise Unmappable(f"DUID {text} is of type {kind}; the appliance takes RFC 8415's "
                         "types 1 to 4")
    if (kind == 4 and len(raw) != 18) or len(raw) < DUID_MIN_LENGTH[kind]:
        raise Unmappable(f"DUID {text} is too short for its type {kind}")
    return colon_hex(raw)


def hostname(text: str) -> str:
    name = text.strip().removesuffix(".")
    if not name or len(name) > 253 or not all(
            _LABEL.match(label) for label in name.lower().split(".")):
        raise Unmappable(f"hostname {text!r} is not RFC 1123 labels of letters, digits and "
                         "hyphens (at most 253 characters)")
    return name


def boot_file(text: str) -> str:
    """The BOOTP file field: 128 octets with its terminating NUL (RFC 2131 §2)."""
    if not text or len(text) > 127 or not text.isascii() or not text.isprintable():
        raise Unmappable(f"boot file {text[:40]!r} is not 1 to 127 printable ASCII characters")
    return text
