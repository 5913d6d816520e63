"""dhcpd.conf values: `option` lines as the API's option payloads, option definitions
(`option x code N = type;`), addresses written as DNS names (docs/migrating.md).

Payloads come from the readers' shared `importer.options` (the API's shape per code); this
module turns dhcpd's tokens into what that takes: a quoted string, colon-hex
(`01:02:0a`, dhcpd's data strings), or a list of words. A value computed per client
(`option x = expression;`) has no equivalent and is refused by the caller.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ipamd.importer import identity, options
from ipamd.importer.isc.lexer import Kind, Token
from ipamd.importer.model import Resolver, Source

# dhcpd's names where Kea (options.NAMES4) spells them otherwise (dhcp-options(5) names).
DHCPD_NAMES: dict[str, int] = {
    "nwip-domain": 62, "nisplus-domain": 64, "bootfile-name": 67, "pxe-interface-id": 94,
    "pxe-client-id": 97, "default-url": 114, "vivco": 124, "vivso": 125,
    "loader-configfile": 209, "loader-pathprefix": 210, "loader-reboottime": 211,
}
_COLON_HEX = re.compile(r"[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2})+")
# dhcpd's type words -> the readers' shared type names (options.encode)
_TYPES = {"ip-address": "ipv4-address", "ip6-address": "ipv6-address", "text": "string",
          "string": "binary", "boolean": "boolean", "domain-name": "fqdn",
          "domain-list": "fqdn[]"}


_BOOLEANS = {"on": "true", "off": "false"}


@dataclass(frozen=True)
class Definition:
    """`option NAME code CODE = TYPE;` — a site's own option (or a standard one renamed)."""

    name: str
    code: int
    types: tuple[str, ...]  # one type, or a record's; "[]" ends an array's
    source: Source


def is_colon_hex(token: Token) -> bool:
    return token.kind is Kind.WORD and bool(_COLON_HEX.fullmatch(token.text))


def octets(token: Token) -> bytes:
    """A data string: quoted text or colon-hex (one or two hex digits an octet)."""
    if token.kind is Kind.STRING:
        return token.text.encode("utf-8")
    if is_colon_hex(token):
        return bytes(int(part, 16) for part in token.text.split(":"))
    raise options.Unmappable(f"{token.text!r} is neither a quoted string nor colon-hex octets")


def words_text(values: list[Token]) -> str:
    """A list of values as the shared text form: items comma-separated (dhcpd writes arrays
    of records with spaces inside an item; fixed-width items flatten to the same octets)."""
    items = [t.text for t in values if not (t.kind is Kind.PUNCT and t.text == ",")]
    if any(t.kind is Kind.PUNCT and t.text != "," for t in values):
        raise options.Unmappable("not a list of values (an expression?)")
    return ", ".join(items)


def payload(code: int, values: list[Token], resolver: Resolver | None,
            notes: list[str]) -> dict[str, object]:
    """The API payload of a standard DHCPv4 option written with dhcpd's syntax; a domain
    name (15) or search list (119) is checked as the API checks it (RFC 1123 labels)."""
    found = _payload(code, values, resolver, notes)
    domains = found.get("domains") if code == options.DOMAIN_SEARCH else None
    names = [found["value"]] if code == 15 else domains if isinstance(domains, list) else []
    for name in names:
        try:
            identity.hostname(str(name))
        except options.Unmappable:
            raise options.Unmappable(f"option {code}: {name!r} is not a DNS name (RFC 1123 "
                                     "labels of letters, digits and hyphens)") from None
    return found


def _payload(code: int, values: list[Token], resolver: Resolver | None,
             notes: list[str]) -> dict[str, object]:
    if not values:
        raise options.Unmappable("the option has no value")
    if len(values) == 1 and (values[0].kind is Kind.STRING or is_colon_hex(values[0])):
        if code in options.TEXT4 and values[0].kind is Kind.STRING:
            return options.payload4(code, values[0].text, resolver, notes)
        structured = (options.DOMAIN_SEARCH, options.CLASSLESS_ROUTES)
        if code not in options.ADDRESS4 and code not in options.INTEGER4 and (
                code not in structured):
            return options.payload4_hex(code, octets(values[0]))
    return options.payload4(code, words_text(values), resolver, notes)


def defined_payload(definition: Definition, values: list[Token]) -> dict[str, object]:
    """The payload of a site-defined option: its value encoded as its definition says, then
    given the API's shape for that code (docs/api-ipam.md, "Options")."""
    data = encode(definition, values)
    code = definition.code
    if code == options.CLASSLESS_ROUTES:
        return {"routes": classless_routes(data)}
    if code in options.INTEGER4:
        return {"value": int.from_bytes(data, "big", signed=code == 2)}
    if code == options.DOMAIN_SEARCH:
        raise options.Unmappable("option 119 written as a definition: use domain-search")
    return options.payload4_hex(code, data)


def encode(definition: Definition, values: list[Token]) -> bytes:
    items = [t for t in values if not (t.kind is Kind.PUNCT and t.text == ",")]
    types = definition.types
    if len(types) == 1 and types[0].endswith("[]"):
        types = tuple(types[0][:-2] for _ in items)
    if len(types) != len(items):
        raise options.Unmappable(f"{len(items)} values for a definition of {len(types)}")
    out = b""
    for type_name, token in zip(types, items, strict=True):
        if type_name == "binary" or (type_name == "string" and token.kind is Kind.STRING):
            out += octets(token)
        elif type_name == "boolean":  # dhcpd writes on/off as well as true/false
            out += options.encode_one(type_name, _BOOLEANS.get(token.text.lower(), token.text))
        else:
            out += options.encode_one(type_name, token.text)
    return out


def classless_routes(data: bytes) -> list[dict[str, str]]:
    """RFC 3442 §2: each route is the prefix width, the significant octets of the
    destination, then the router."""
    routes, at = [], 0
    while at < len(data):
        width = data[at]
        size = (width + 7) // 8
        if width > 32 or at + 1 + size + 4 > len(data):
            raise options.Unmappable("option 121's octets are not RFC 3442 routes")
        destination = data[at + 1:at + 1 + size] + bytes(4 - size)
        router = data[at + 1 + size:at + 5 + size]
        network = ipaddress.IPv4Network((destination, width), strict=False)
        routes.append({"destination": str(network),
                       "router": str(ipaddress.IPv4Address(router))})
        at += 5 + size
    if not routes:
        raise options.Unmappable("option 121 has no route")
    return routes


def definition_types(words: list[Token]) -> tuple[str, ...]:
    """The type after `=`: `unsigned integer 16`, `array of ip-address`, `{ text, ... }`."""
    text = " ".join(t.text.lower() for t in words)
    if text.startswith("{") and text.endswith("}"):
        parts = [part.strip() for part in text[1:-1].split(",")]
        return tuple(_one_type(part) for part in parts)
    if text.startswith("array of {"):
        raise options.Unmappable("an array of records")
    if text.startswith("array of "):
        return (_one_type(text.removeprefix("array of ")) + "[]",)
    return (_one_type(text),)


def _one_type(text: str) -> str:
    if text in _TYPES:
        return _TYPES[text]
    match = re.fullmatch(r"(unsigned |signed )?integer (8|16|32)", text)
    if match:
        return ("int" if match.group(1) == "signed " else "uint") + match.group(2)
    raise options.Unmappable(f"type {text!r} (encapsulated spaces and the like are not "
                             "taken)")


def address_list(values: list[Token], resolver: Resolver | None,
                 notes: list[str]) -> list[str]:
    """IPv4 addresses, DNS names looked up as dhcpd does at start (docs/migrating.md)."""
    return options.addresses(options.split_list(words_text(values)), 4, resolver, notes)
