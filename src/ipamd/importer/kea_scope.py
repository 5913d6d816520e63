"""Kea's scopes as the appliance sees them: what a subnet inherits (global → shared network →
subnet, as Kea does), and `option-data` entries turned into subnet, class or reservation
fields and option objects (docs/api-ipam.md, "Options" and "Option scopes").
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Literal

from ipamd.importer import options
from ipamd.importer.identity import boot_file
from ipamd.importer.kea_syntax import KObj
from ipamd.importer.model import Plan, Resolver, Source
from ipamd.importer.options import Unmappable

# Parameters a scope hands down to the subnets inside it (Kea's inheritance).
INHERITED = ("valid-lifetime", "min-valid-lifetime", "max-valid-lifetime", "next-server",
             "boot-file-name", "renew-timer", "rebind-timer", "preferred-lifetime",
             "min-preferred-lifetime", "max-preferred-lifetime", "server-hostname")
# Kea writes an unset next-server or relay address as the unspecified address.
UNSET_TEXT = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 - values compared, not bound


def unset(value: object) -> bool:
    """Kea's way of leaving an address out: absent, empty or the unspecified address."""
    return value is None or (isinstance(value, str) and value in UNSET_TEXT)
KEA_DEFAULT_LIFETIME = 7200  # Kea's valid-lifetime when a file sets none (Kea ARM, "Lifetimes")

ScopeKind = Literal["subnet", "class", "reservation"]


@dataclass(frozen=True)
class Opt:
    """One `option-data` entry as written."""

    code: int
    label: str  # the name or code as the file wrote it
    data: str
    csv: bool
    source: Source
    custom_type: str | None = None  # set for codes defined by `option-def`


@dataclass
class Scope:
    """What a subnet inherits: parameters and options by code, each with its source."""

    values: dict[str, tuple[Any, Source]] = field(default_factory=dict)
    options: dict[int, Opt] = field(default_factory=dict)

    def child(self, node: KObj, opts: list[Opt]) -> Scope:
        values = dict(self.values)
        for name in INHERITED:
            if name in node:
                values[name] = (node[name], node.at(name))
        return Scope(values, {**self.options, **{opt.code: opt for opt in opts}})

    def get(self, name: str) -> tuple[Any, Source] | None:
        return self.values.get(name)


@dataclass
class Mapped:
    """Options of one scope mapped: fields of the scope's object, and option bodies."""

    fields: dict[str, Any] = field(default_factory=dict)
    bodies: list[tuple[dict[str, Any], Source]] = field(default_factory=list)


class OptionMapper:
    """Maps a scope's options for one family, recording refusals and notes in the plan."""

    def __init__(self, plan: Plan, family: int, resolver: Resolver | None) -> None:
        self.plan, self.family, self.resolver = plan, family, resolver

    def map(self, opts: list[Opt], kind: ScopeKind, cidr: str | None = None) -> Mapped:
        out = Mapped()
        for opt in sorted(opts, key=lambda item: item.code):
            notes: list[str] = []
            try:
                if self.family == 6:
                    out.bodies.append(({"code": opt.code, "payload": self._payload6(opt)},
                                       opt.source))
                elif not self._owned(opt, kind, cidr, out, notes):
                    out.bodies.append(({"code": opt.code, "payload": self._payload4(opt, notes)},
                                       opt.source))
            except Unmappable as why:
                self.plan.refuse(f"option-data {opt.label}", opt.source, str(why))
            for note in notes:
                self.plan.note(note, opt.source)
        return out

    def _payload4(self, opt: Opt, notes: list[str]) -> dict[str, object]:
        if opt.custom_type is not None:
            octets = (options.hex_octets(opt.data) if not opt.csv
                      else options.encode(opt.custom_type, opt.data))
            notes.append(f"option {opt.code} ({opt.label}, defined by option-def as "
                         f"{opt.custom_type}) is sent as its octets")
            return options.payload4_hex(opt.code, octets)
        if not opt.csv:
            return options.payload4_hex(opt.code, options.hex_octets(opt.data))
        return options.payload4(opt.code, opt.data, self.resolver, notes)

    def _payload6(self, opt: Opt) -> dict[str, object]:
        if opt.code not in options.CODES6:
            raise Unmappable(f"DHCPv6 option {opt.code} is not taken; an IPv6 subnet takes "
                             "17, 23, 24, 56 and 59 (docs/api-ipam.md)")
        if not opt.csv:
            raise Unmappable("DHCPv6 options given as raw octets are not mapped; write the "
                             "text form")
        notes: list[str] = []
        items = options.split_list(opt.data)
        if opt.code == 23:
            payload: dict[str, object] = {
                "addresses": options.addresses(items, 6, self.resolver, notes)}
        elif opt.code == 24:
            payload = {"domains": [name.rstrip(".").lower() for name in items]}
        elif opt.code == 59:
            payload = {"url": opt.data.strip()}
        else:
            raise Unmappable(f"option {opt.code} ({opt.label}) is written with Kea's "
                             "suboptions, which are not mapped")
        for note in notes:
            self.plan.note(note, opt.source)
        return payload

    def _owned(self, opt: Opt, kind: ScopeKind, cidr: str | None, out: Mapped,
               notes: list[str]) -> bool:
        """Codes the appliance sets from a field: put the value there. False: not owned."""
        code, data = opt.code, opt.data
        if code not in options.OWNED4 and not (code == 42 and kind == "subnet"):
            return False
        if not opt.csv:
            raise Unmappable(f"option {code} given as raw octets; write it in its text form")
        if code == 1 and cidr is not None:
            _same_mask(data, cidr)
        elif code == 28 and cidr is not None:
            _same_broadcast(data, cidr)
        elif code == 3 and kind == "subnet" and cidr is not None:
            out.fields["gateway"] = self._router(opt, cidr, notes)
        elif code == 42:
            out.fields["ntp_servers"] = options.addresses(
                options.split_list(data), 4, self.resolver, notes)
        elif code == 66:
            found = options.addresses([data.strip().strip('"')], 4, self.resolver, notes)
            out.fields["next_server"] = found[0]
            notes.append(f"option 66 ({data}) became the next_server field (siaddr) "
                         f"{found[0]}: the appliance sends its TFTP server there")
        elif code == 67:
            out.fields["boot_file"] = boot_file(data.strip().strip('"'))
        elif code == 12 and kind == "reservation":
            out.fields["hostname"] = data.strip().strip('"')
        else:
            raise Unmappable(f"option {code}: {options.OWNED4[code]}")
        return True

    def _router(self, opt: Opt, cidr: str, notes: list[str]) -> str:
        routers = options.addresses(options.split_list(opt.data), 4, self.resolver, notes)
        network = ipaddress.IPv4Network(cidr)
        first = ipaddress.IPv4Address(routers[0])
        if first not in network or first in (network.network_address, network.broadcast_address):
            raise Unmappable(f"router {first} is not a host of {cidr} (the gateway must be)")
        if len(routers) > 1:
            self.plan.refuse(f"option-data {opt.label}", opt.source,
                             f"routers after the first ({', '.join(routers[1:])}): the subnet "
                             "has one gateway")
        return str(first)


def _same_mask(data: str, cidr: str) -> None:
    network = ipaddress.ip_network(cidr)
    if data.strip() != str(network.netmask):
        raise Unmappable(f"subnet-mask {data.strip()} differs from the subnet's "
                         f"{network.netmask} (/{network.prefixlen}); the mask is derived from "
                         "the cidr")


def _same_broadcast(data: str, cidr: str) -> None:
    network = ipaddress.ip_network(cidr)
    if data.strip() != str(network.broadcast_address):
        raise Unmappable(f"broadcast-address {data.strip()} differs from the subnet's "
                         f"{network.broadcast_address}; it is derived from the cidr")
