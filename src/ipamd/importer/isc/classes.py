"""dhcpd `class` declarations as client classes (docs/api-ipam.md, "Client classes").

A class maps when its `match if` is one test the appliance's classes make: option 60's
first octets (`substring (option vendor-class-identifier, 0, N) = "…"`), the MAC's
(`substring (hardware, 1, N) = …`), option 77, option 93 (the client architecture), or a
relay's circuit-id / remote-id. Anything else — `and`/`or`/`not`, other functions,
`match` with subclasses, `spawn with`, `lease limit` — is refused, named. Classes are
created in the file's order with one priority, so the first declared wins among those a
client matches, as in dhcpd.
"""

from __future__ import annotations

from typing import Any

from ipamd.importer import model, options
from ipamd.importer.isc import scope as scopes
from ipamd.importer.isc import values
from ipamd.importer.isc.lexer import Kind, Token
from ipamd.importer.isc.parser import Node
from ipamd.importer.isc.scope import Scope
from ipamd.importer.isc.settings import gather
from ipamd.importer.isc.site import Site
from ipamd.importer.model import Planned

PRIORITY = 100  # every imported class alike: the one created first wins (dhcpd's order)
_AGENT = {"agent.circuit-id": "circuit_id", "agent.remote-id": "remote_id"}


class Unmatched(Exception):
    """The class's test is not one the appliance makes; the message says why."""


def plan_classes(site: Site) -> dict[str, str | None]:
    """Plan every class; dhcpd's class name -> its planned key (None: refused)."""
    planned: dict[str, str | None] = {}
    for cls in site.classes:
        name = _name(site, cls.node)
        if name is None:
            continue
        key = _plan_class(site, cls, name)
        if planned.get(name.lower()) is None:  # a second declaration never hides the first
            planned[name.lower()] = key
    return planned


def _name(site: Site, node: Node | None) -> str | None:
    assert node is not None
    words = node.words
    if len(words) != 2 or not 1 <= len(words[1].text) <= 100:
        site.refuse(node, 'write a class as: class "name" { match if ...; }')
        return None
    return words[1].text


def _plan_class(site: Site, cls: Scope, name: str) -> str | None:
    node = cls.node
    assert node is not None
    match = _judge_body(site, cls, name)
    if match is None:
        return None
    settings = gather(site, cls, "class", below=cls.parent)
    body: dict[str, Any] = {"name": name, **match, "priority": PRIORITY,
                            "description": f"imported from {node.source}", **settings.fields}
    key = site.add_named(Planned("client_class", model.class_key(name), body, node.source),
                         node)
    if key is not None:
        _options(site, key, settings.options)
    return key


def _judge_body(site: Site, cls: Scope, name: str) -> dict[str, str] | None:
    """The class's match, or None when the class itself cannot be mapped (no test the
    appliance makes, a spawning class). Other statements are refused one by one, and the
    class is planned without them."""
    assert cls.node is not None
    match: dict[str, str] | None = None
    said: tuple[Node, str] | None = None
    for inner in scopes.collect(cls, cls.node.block or []):
        try:
            if inner.keyword == "match" and match is None:
                match = _match(site, inner.words[1:])
                said = (inner, match.pop("note")) if "note" in match else None
            elif inner.keyword == "spawn":
                raise Unmatched("spawning classes (a subclass per client) have no equivalent")
            else:
                site.refuse(inner, f"class {name!r}: {_why_not(inner)}; the class is planned "
                                   "without it")
        except Unmatched as why:
            site.refuse(inner, f"class {name!r}: {why}")
            return None
    if match is None:
        site.refuse(cls.node, f"class {name!r} has no 'match if' test: members added by "
                              "other means (subclasses, known hosts) have no equivalent")
        return None
    if said is not None:
        site.note(*said)
    return match


def _options(site: Site, owner: str, found: list[tuple[int, dict[str, object], Node]]) -> None:
    for code, payload, node in found:
        site.plan.add(Planned(model.option_kind(owner), model.option_key(owner, code),
                              {"code": code, "payload": payload}, node.source, owner))


def _why_not(node: Node) -> str:
    keyword = node.keyword
    if keyword == "lease":
        return "a lease limit per class has no equivalent"
    if keyword == "match":
        return "a class has one match test"
    if keyword in ("if", "elsif", "else"):
        return "conditional statements (dhcp-eval(5)) run per packet: no equivalent"
    if keyword in scopes.PARAMETERS:
        return f"{keyword} is not a class's setting"
    return "no equivalent in a client class"


MAX_TEST_WORDS = 40  # the longest test mapped, substring (option x, 0, N) = v, has 11


def test_of(site: Site, words: list[Token]) -> dict[str, str]:
    """The class match of a conditional's test (the words after `if`/`elsif`); `exists X
    and` before a test of X says nothing more (the test fails without X)."""
    if len(words) > 3 and words[0].is_word("exists") and words[2].is_word("and"):
        words = words[3:]
    return _test_words(site, words)


def _match(site: Site, words: list[Token]) -> dict[str, str]:
    if not words or not words[0].is_word("if"):
        raise Unmatched("'match' without 'if' matches subclasses, which have no equivalent")
    return _test_words(site, words[1:])


def _test_words(site: Site, words: list[Token]) -> dict[str, str]:
    if len(words) > MAX_TEST_WORDS:
        raise Unmatched(f"a test of {len(words)} words: not one the appliance's classes make")
    expr = _strip_parens(words)
    if any(w.is_word("and", "or", "not") for w in expr):
        raise Unmatched("a test combined with and/or/not: the appliance's classes make one")
    sides = _split_equals(expr)
    if sides is None:
        raise Unmatched("not a test of the form 'X = value'")
    left, right = sides
    if len(right) != 1:
        raise Unmatched("the value is not one string, number or colon-hex")
    return _test(site, _strip_parens(left), right[0])


def _strip_parens(words: list[Token]) -> list[Token]:
    while (len(words) >= 2 and words[0].text == "(" and words[-1].text == ")"
           and words[0].kind is Kind.PUNCT and _closes_at_end(words)):
        words = words[1:-1]
    return words


def _closes_at_end(words: list[Token]) -> bool:
    depth = 0
    for index, word in enumerate(words):
        if word.kind is Kind.PUNCT:
            depth += {"(": 1, ")": -1}.get(word.text, 0)
        if depth == 0 and index < len(words) - 1:
            return False
    return True


def _split_equals(expr: list[Token]) -> tuple[list[Token], list[Token]] | None:
    at = [i for i, w in enumerate(expr) if w.kind is Kind.PUNCT and w.text == "="]
    if len(at) != 1 or (at[0] > 0 and expr[at[0] - 1].text in ("!", "~")):
        return None
    return expr[:at[0]], expr[at[0] + 1:]


def _test(site: Site, left: list[Token], value: Token) -> dict[str, str]:
    texts = [w.text.lower() for w in left]
    if texts[:2] == ["substring", "("] and texts[-1] == ")":
        return _substring(site, texts[2:-1], value)
    if texts[:1] == ["option"] and len(texts) == 2:
        return _option_equals(site, texts[1], value)
    if texts == ["hardware"]:
        data = _octets(value)
        if len(data) != 7 or data[0] != 1:
            raise Unmatched("hardware is compared with an Ethernet type and MAC (1:…)")
        return {"match": "mac_prefix", "value": options.colon_hex(data[1:])}
    raise Unmatched(f"{' '.join(texts)!r} is not a test the appliance's classes make")


def _substring(site: Site, inner: list[str], value: Token) -> dict[str, str]:
    # inner: [what..., ",", offset, ",", length] as (option NAME) or (hardware)
    if inner[0] == "hardware" and len(inner) == 5:
        inner = ["hardware", "", *inner[1:]]
    if len(inner) != 6 or inner[2] != "," or inner[4] != ",":
        raise Unmatched("substring (X, offset, length) of an option or of hardware")
    what, offset, length = inner[:2], inner[3], inner[5]
    data = _octets(value)
    if not (offset.isdigit() and length.isdigit()) or int(length) != len(data):
        raise Unmatched("the substring's length is not the length of the value it is "
                        "compared with")
    if what[0] == "hardware" and offset in ("0", "1"):
        mac = data[1:] if offset == "0" else data
        if (offset == "0" and data[:1] != b"\x01") or not 1 <= len(mac) <= 6:
            raise Unmatched("a MAC prefix is 1 to 6 octets of an Ethernet address")
        return {"match": "mac_prefix", "value": options.colon_hex(mac)}
    if what[0] == "option" and _code(site, what[1]) == 60 and offset == "0":
        return {"match": "vendor_class", "value": _printable(data)}
    raise Unmatched("a substring test the appliance makes is the start of option 60 or of "
                    "the MAC")


def _option_equals(site: Site, name: str, value: Token) -> dict[str, str]:
    if name in _AGENT:
        return {"match": _AGENT[name], "value": options.colon_hex(_octets(value))}
    code = _code(site, name)
    if code == 60:
        return {"match": "vendor_class", "value": _printable(_octets(value)),
                "note": "dhcpd compares option 60 whole; the appliance's vendor_class "
                        "matches clients whose option 60 starts with it"}
    if code == 77:
        return {"match": "user_class", "value": _printable(_octets(value))}
    if code == 93:
        number = int(value.text) if value.text.isdigit() else int.from_bytes(_octets(value))
        if not 0 <= number <= 65_535:
            raise Unmatched("a client architecture type is 0 to 65535")
        return {"match": "arch", "value": str(number)}
    raise Unmatched(f"option {name!r}: the appliance's classes test options 60, 77, 93 and "
                    "the relay's circuit-id and remote-id")


def _code(site: Site, name: str) -> int:
    definition = site.definitions.get(name)
    if definition is not None:
        return definition.code
    return options.NAMES4.get(name, values.DHCPD_NAMES.get(name, -1))


def _octets(value: Token) -> bytes:
    try:
        return values.octets(value)
    except options.Unmappable as why:
        raise Unmatched(str(why)) from None


def _printable(data: bytes) -> str:
    if not data.isascii() or not data.decode().isprintable():
        raise Unmatched("the value is not printable text")
    return data.decode()
