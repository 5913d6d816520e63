"""A scope's parameters as the API's fields and option objects of one target: a subnet, a
client class or a reservation (docs/migrating.md, "From ISC dhcpd").

`routers` is the subnet's `gateway`, `ntp-servers` its `ntp_servers`, `filename` and
`next-server` the `boot_file`/`next_server` fields of every scope, lease times the subnet's;
codes the appliance derives (mask, broadcast) are accepted when they say what the subnet
says and refused when they differ. Everything that cannot be carried is refused, named.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Literal

from ipamd.importer import options
from ipamd.importer.isc import values
from ipamd.importer.isc.lexer import Kind, Token
from ipamd.importer.isc.parser import Node
from ipamd.importer.isc.scope import Scope
from ipamd.importer.isc.site import Site

Target = Literal["subnet", "class", "reservation"]
_SUBNET_ONLY = ("default-lease-time", "max-lease-time", "min-lease-time")
_HOST_ONLY = ("fixed-address", "hardware", "host-identifier", "option dhcp-client-identifier",
              "use-host-decl-names")


Sub = tuple[values.Definition, list[Token], Node]  # an option of an option space, as set


@dataclass
class Settings:
    fields: dict[str, Any] = field(default_factory=dict)
    options: list[tuple[int, dict[str, object], Node]] = field(default_factory=list)
    timers: dict[int, tuple[int, Node]] = field(default_factory=dict)  # a subnet's 58/59


def gather(site: Site, scope: Scope, target: Target, below: Scope | None = None,
           network: ipaddress.IPv4Network | None = None) -> Settings:
    """The settings ``scope`` gives its target, from it outward (stopping before ``below``)."""
    out = Settings()
    for key in scope.held(below):
        node = scope.lookup(key, below)
        if node is None or _elsewhere(site, key, node, target):
            continue
        try:
            _one(site, key, node, target, network, out)
        except options.Unmappable as why:
            site.refuse(node, str(why))
    _space_options(site, scope, below, out)
    return out


def _space_options(site: Site, scope: Scope, below: Scope | None, out: Settings) -> None:
    """Option 43 made of an option space's options where `vendor-option-space` names that
    space, as dhcpd makes it (RFC 2132 §8.4: code, length, value each), from every scope
    out to the global one; made here when this target's own scopes name the space or set
    one of its options (else its outer scope, the subnet, makes it). An option of a space
    no `vendor-option-space` names is sent nowhere by dhcpd: noted."""
    own = set(scope.held(below))
    chosen = scope.lookup("vendor-option-space")
    space = chosen.words[1].text.lower() if chosen and len(chosen.words) == 2 else None
    subs: list[Sub] = []
    for key in scope.held():
        node = scope.lookup(key)
        definition = site.definitions.get(key.removeprefix("option "))
        if node is None or "." not in key or definition is None:
            continue
        if key.removeprefix("option ").split(".")[0] == space:
            subs.append((definition, node.words[2:], node))
        elif key in own:
            site.note(node, "dhcpd sends an option space's options only in option 43 "
                            "where vendor-option-space names the space (made there); "
                            "nothing to map elsewhere")
    if chosen is not None and subs and ("vendor-option-space" in own
                                        or any(f"option {d.name}" in own for d, _, _ in subs)):
        _vendor_options(site, chosen, subs, out)


def _vendor_options(site: Site, chosen: Node, subs: list[Sub], out: Settings) -> None:
    if any(code == 43 for code, _, _ in out.options):
        site.refuse(chosen, "option 43 is set in these scopes by vendor-encapsulated-options "
                            "already (planned as written)")
        return
    data = b""
    for definition, args, node in sorted(subs, key=lambda sub: sub[0].code):
        try:
            value = values.encode(definition, args)
            if len(value) > 255:
                raise options.Unmappable("a sub-option's value is at most 255 octets")
        except options.Unmappable as why:
            site.refuse(node, f"{why}; option 43 is made without it")
            continue
        data += bytes([definition.code, len(value)]) + value
    try:
        out.options.append((43, options.payload4_hex(43, data), chosen))
    except options.Unmappable as why:
        site.refuse(chosen, str(why))


def _elsewhere(site: Site, key: str, node: Node, target: Target) -> bool:
    """Statements read elsewhere: lease times by `lease_fields` (refused for a host or a
    class: the appliance's lease time is the subnet's), a host's identity by `hosts`."""
    if key in _SUBNET_ONLY:
        if target != "subnet":
            site.refuse(node, f"a lease time for a {target}'s clients: the appliance's lease "
                              "times are the subnet's")
        return True
    if key in _HOST_ONLY:
        if target == "subnet" and key != "use-host-decl-names":
            site.refuse(node, "a host's statement outside a host declaration")
        return True
    return False


def _one(site: Site, key: str, node: Node, target: Target,
         network: ipaddress.IPv4Network | None, out: Settings) -> None:
    args = node.words[1:]
    if key == "filename":
        out.fields["boot_file"] = _boot_file(args)
    elif key == "next-server":
        found = _addresses(site, node, args)
        out.fields["next_server"] = found[0]
    elif key == "server-name":
        raise options.Unmappable("the BOOTP server name (sname) is not sent by the appliance, "
                                 "which may use that field for options (RFC 2132 §9.3); PXE "
                                 "clients find their server by next-server, which is mapped")
    elif key.startswith("option "):
        _option(site, node, target, network, out)


def _option(site: Site, node: Node, target: Target, network: ipaddress.IPv4Network | None,
            out: Settings) -> None:
    name = node.words[1].text.lower()
    args = node.words[2:]
    if args and args[0].kind is Kind.PUNCT and args[0].text == "=":
        raise options.Unmappable("a value computed per client (an expression): no equivalent")
    definition = site.definitions.get(name)
    if "." in name:
        if definition is None:
            raise options.Unmappable(f"an option of space {name.split('.')[0]!r} without a "
                                     "definition in an option space of one-octet codes and "
                                     "lengths (or give option 43 as colon-hex)")
        return  # made into option 43 by _space_options
    code = definition.code if definition else options.NAMES4.get(
        name, values.DHCPD_NAMES.get(name, -1))
    if code < 0:
        raise options.Unmappable(f"option {name!r} is not a standard DHCPv4 option and has "
                                 "no definition (option NAME code N = TYPE;)")
    if _as_field(site, node, code, args, target, network, out):
        return
    if definition is not None:
        payload = values.defined_payload(definition, args)
    else:
        notes: list[str] = []
        payload = values.payload(code, args, site.resolver, notes)
        for text in notes:
            site.note_at(node.source, text)
    if any(known == code for known, _, _ in out.options):
        site.refuse(node, f"option {code} is set by a more specific statement in this scope")
        return
    out.options.append((code, payload, node))


def _as_field(site: Site, node: Node, code: int, args: list[Any], target: Target,
              network: ipaddress.IPv4Network | None, out: Settings) -> bool:
    """Codes the appliance sets from a field; True when handled here."""
    if code == 3 and target == "subnet":
        found = _addresses(site, node, args)
        if len(found) > 1:
            site.refuse(node, f"the appliance sends one router, the subnet's gateway: "
                              f"{found[0]} is mapped, {', '.join(found[1:])} is not")
        out.fields["gateway"] = found[0]
        return True
    if code == 42 and target == "subnet":
        out.fields["ntp_servers"] = _addresses(site, node, args)
        return True
    if code == 12 and target == "reservation":
        out.fields["hostname"] = values.words_text(args).strip('"').rstrip(".").lower()
        return True
    if code == 67:
        out.fields.setdefault("boot_file", _boot_file(args))
        return True
    if code in (1, 28) and network is not None:
        derived = network.netmask if code == 1 else network.broadcast_address
        given = _addresses(site, node, args)
        if given != [str(derived)]:
            raise options.Unmappable(f"an owned option set to another value: the appliance "
                                     f"sends {derived}, derived from {network}")
        return True
    if code in (58, 59) and target == "subnet":
        value = values.words_text(args)
        if not value.isdigit():
            raise options.Unmappable(f"option {code}: {value!r} is not a number of seconds")
        out.timers[code] = (int(value), node)  # judged with the lease time (timers_kept)
        return True
    if code in options.OWNED4:
        raise options.Unmappable(f"not an option object on the appliance: "
                                 f"{options.OWNED4[code]}"
                                 + ("" if target == "subnet" else f" (not a {target}'s)"))
    return False


def _addresses(site: Site, node: Node, args: list[Any]) -> list[str]:
    notes: list[str] = []
    found = values.address_list(args, site.resolver, notes)
    for text in notes:
        site.note_at(node.source, text)
    if not found:
        raise options.Unmappable("no address given")
    return found


def _boot_file(args: list[Any]) -> str:
    if len(args) != 1 or args[0].kind is not Kind.STRING:
        raise options.Unmappable('write the file name quoted: filename "pxelinux.0";')
    name: str = args[0].text
    if not 1 <= len(name) <= 127 or not name.isascii() or not name.isprintable():
        raise options.Unmappable("a boot file name is 1 to 127 printable ASCII characters")
    return name


def timers_kept(site: Site, settings: Settings, lease: int) -> None:
    """T1 and T2 written as the appliance derives them from the lease time (RFC 2131
    §4.4.5: 50 % and 87.5 %) say nothing more; other values are refused."""
    for code, derived in ((58, lease // 2), (59, lease * 7 // 8)):
        if code in settings.timers and settings.timers[code][0] != derived:
            site.refuse(settings.timers[code][1],
                        f"an owned option set to another value: the appliance derives option "
                        f"{code} from the lease time ({derived} s for {lease} s)")


def lease_fields(site: Site, scope: Scope) -> dict[str, int]:
    """The subnet's lease times as dhcpd gives them (docs/migrating.md, "Lease times"):
    default-lease-time (dhcpd's default 43200 s, never the appliance's 86400 s), capped
    by max-lease-time (default 86400 s), raised to min-lease-time (default the smaller of
    300 s and the maximum); a client's request is held within [min, max] as dhcpd does."""
    found = {key: _seconds(site, scope.lookup(key)) for key in _SUBNET_ONLY}
    maximum = found["max-lease-time"] or 86_400
    minimum = found["min-lease-time"] or min(300, maximum)
    maximum = max(maximum, minimum)  # dhcpd raises a lease below the minimum last
    default = found["default-lease-time"] or 43_200
    default = max(min(default, maximum), minimum)
    return {"lease_time_seconds": default, "min_lease_time_seconds": minimum,
            "max_lease_time_seconds": maximum}


def _seconds(site: Site, node: Node | None) -> int | None:
    if node is None:
        return None
    words = node.words
    if len(words) == 2 and words[1].text.isdigit() and 1 <= int(words[1].text) < 2**31:
        return int(words[1].text)
    if len(words) == 2 and words[1].is_word("infinite"):
        site.refuse(node, "an infinite lease has no equivalent; 2147483647 s is the longest")
        return None
    site.refuse(node, "not a number of seconds from 1 to 2147483647")
    return None
