"""Kea client-class test expressions mapped onto the appliance's class matches
(docs/api-ipam.md, "Client classes": vendor_class, user_class, mac_prefix, arch, circuit_id,
remote_id). An expression is mapped only when it is one of the shapes below; anything else
(`and`, `or`, `not`, message types, interfaces, other options) is refused, naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ipamd.importer.options import Unmappable, colon_hex, hex_octets


@dataclass(frozen=True)
class Match:
    match: str  # the API's `match`
    value: str  # the API's `value`, in its stored form
    note: str | None = None  # where the appliance's match is wider or narrower than Kea's


_LIT = r"(?:'(?P<text>[^']*)'|0x(?P<hex>[0-9a-fA-F]+))"
_OPT = r"option\[(?P<code>\d+)\]\.(?:hex|text)"
_SUBSTRING = re.compile(
    rf"^substring\(\s*(?P<what>{_OPT}|pkt4\.mac)\s*,\s*(?P<start>\d+)\s*,\s*(?P<length>\d+)\s*\)"
    rf"\s*==\s*{_LIT}$")
_EQUALS = re.compile(rf"^(?P<what>{_OPT}|pkt4\.mac|relay4\[(?P<sub>[12])\]\.hex)\s*==\s*{_LIT}$")
_MEMBER = re.compile(r"^member\(\s*'(?P<name>[^']+)'\s*\)$")
BUILT_IN = frozenset({"ALL", "KNOWN", "UNKNOWN", "DROP", "BOOTP"})


def literal(match: re.Match[str]) -> bytes:
    if match.group("text") is not None:
        return match.group("text").encode()
    digits = match.group("hex")
    return hex_octets(digits if len(digits) % 2 == 0 else "0" + digits)


def _text(octets: bytes, what: str) -> str:
    if not octets or not octets.isascii() or not octets.decode().isprintable():
        raise Unmappable(f"{what} compared with non-text octets")
    return octets.decode()


def map_test(test: str, family: int, known: dict[str, Match]) -> Match:
    """The class match of a Kea `test`; `known` holds the classes mapped so far (for
    `member('X')`, which Kea evaluates against classes defined before it)."""
    expr = " ".join(test.split())
    member = _MEMBER.match(expr)
    if member:
        return _member(member.group("name"), known)
    substring = _SUBSTRING.match(expr)
    if substring:
        return _substring(substring, family)
    equals = _EQUALS.match(expr)
    if equals:
        return _equals(equals, family)
    raise Unmappable(f"test {test!r} has no equivalent (the appliance matches vendor class, "
                     "user class, MAC prefix, client architecture, circuit-id or remote-id)")


def _member(name: str, known: dict[str, Match]) -> Match:
    if name in BUILT_IN:
        raise Unmappable(f"member('{name}') tests Kea's built-in class {name}, which has no "
                         "equivalent")
    if name not in known:
        raise Unmappable(f"member('{name}') names a class that is not mapped")
    return known[name]


def _substring(found: re.Match[str], family: int) -> Match:
    value, start, length = literal(found), int(found.group("start")), int(found.group("length"))
    what, code = found.group("what"), found.group("code")
    if len(value) != length:
        raise Unmappable(f"substring of {length} octets compared with {len(value)} octets "
                         "never matches as written")
    if what == "pkt4.mac" and start == 0 and family == 4 and 1 <= length <= 6:
        return Match("mac_prefix", colon_hex(value))
    if family == 4 and code == "60" and start == 0:
        return Match("vendor_class", _text(value, "option 60"))
    if family == 6 and code == "15" and start == 2:
        # RFC 8415 §21.15: user-class-data is a two-octet length, then the data.
        return Match("user_class", _text(value, "option 15"),
                     "Kea compared a prefix of the first user class; the appliance matches "
                     "a user class equal to it")
    if family == 6 and code == "16" and start == 6:
        # RFC 8415 §21.16: enterprise number (4), then each item's length (2) and data.
        return Match("vendor_class", _text(value, "option 16"))
    raise Unmappable(f"substring({what}, {start}, {length}) has no equivalent")


def _equals(found: re.Match[str], family: int) -> Match:
    value, code, sub = literal(found), found.group("code"), found.group("sub")
    if found.group("what") == "pkt4.mac" and family == 4:
        if len(value) != 6:
            raise Unmappable("pkt4.mac compared with something other than six octets")
        return Match("mac_prefix", colon_hex(value))
    if sub is not None and family == 4:
        kind = "circuit_id" if sub == "1" else "remote_id"
        return Match(kind, colon_hex(value))
    if family == 4 and code == "60":
        return Match("vendor_class", _text(value, "option 60"),
                     "Kea compared the whole option 60; the appliance matches one that starts "
                     "with this value")
    if family == 4 and code == "77":
        return Match("user_class", _text(value, "option 77"))
    if family == 4 and code == "93":
        if len(value) != 2:
            raise Unmappable("option 93 compared with something other than two octets")
        return Match("arch", str(int.from_bytes(value, "big")))
    if family == 6 and code == "61":
        raise Unmappable("option 61 (client architecture, RFC 5970): the appliance's arch "
                         "classes match DHCPv4 option 93 only")
    raise Unmappable(f"{found.group('what')} == ... has no equivalent")
