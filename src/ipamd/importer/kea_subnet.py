"""Kea's `subnet4`/`subnet6` entries: a prefix and a subnet each (spec §1), their pools,
delegation pools, reservations and options; global reservations placed in their subnet.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Protocol

from ipamd.importer.identity import boot_file
from ipamd.importer.kea_classes import Match
from ipamd.importer.kea_hosts import host_body
from ipamd.importer.kea_pools import Pools
from ipamd.importer.kea_scope import (
    INHERITED,
    KEA_DEFAULT_LIFETIME,
    Opt,
    OptionMapper,
    Scope,
    unset,
)
from ipamd.importer.kea_syntax import KList, KObj
from ipamd.importer.model import (
    Plan,
    Planned,
    Ref,
    Resolver,
    Source,
    add_scope,
    option_key,
    reservation_key,
)
from ipamd.importer.options import Unmappable, addresses

SUBNET_KEYS = frozenset({"subnet", "id", "pools", "pd-pools", "reservations", "option-data",
                         "relay", "client-class", *INHERITED})
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network


class Server(Protocol):
    plan: Plan
    family: int
    resolver: Resolver | None
    mapper: OptionMapper
    classes: dict[str, Match]

    def items(self, node: KObj, key: str) -> list[KObj]: ...
    def option_data(self, node: KObj) -> list[Opt]: ...
    def report_keys(self, node: KObj, handled: frozenset[str], where: str) -> None: ...


@dataclass
class _Planned:
    network: IPNet
    key: str
    gateway: str | None
    taken: dict[str, str]  # reserved address, MAC or DUID -> the reservation's key


class Subnets:
    def __init__(self, server: Server) -> None:
        self.server, self.plan = server, server.plan
        self.planned: list[_Planned] = []
        self.pools = Pools(server)
        self.reported: set[tuple[str, Source]] = set()

    def refuse_once(self, construct: str, source: Source, reason: str) -> None:
        """An inherited value is judged in every subnet; it is refused once, at its line."""
        if (construct, source) not in self.reported:
            self.reported.add((construct, source))
            self.plan.refuse(construct, source, reason)

    def read_list(self, node: KObj, scope: Scope, shared: str | None) -> None:
        name, other = ("subnet4", "subnet6") if self.server.family == 4 else ("subnet6",
                                                                            "subnet4")
        if other in node:
            self.plan.refuse(other, node.at(other), f"{other} inside a Dhcp{self.server.family} "
                             "section")
        for entry in self.server.items(node, name):
            try:
                self.subnet(entry, scope, shared)
            except Unmappable as why:
                self.plan.refuse(f"{name} {entry.get('subnet', '?')}", entry.source, str(why))

    def subnet(self, entry: KObj, outer: Scope, shared: str | None) -> None:
        network = self.network(entry)
        self.server.report_keys(entry, SUBNET_KEYS, f"subnet {network}")
        scope = outer.child(entry, self.server.option_data(entry))
        fields = {**self.lifetimes(scope, network), **self.pxe(scope, network)}
        mapped = self.server.mapper.map(list(scope.options.values()), "subnet", str(network))
        fields.update(mapped.fields)
        if isinstance(entry.get("id"), int):
            fields["description"] = f"Kea subnet-id {entry['id']}"
        if shared is not None:
            fields["shared_network_id"] = Ref(shared)
        self.relay(entry, network)
        key = add_scope(self.plan, str(network), fields, entry.source)
        record = _Planned(network, key, fields.get("gateway"), {})
        self.planned.append(record)
        for option, source in mapped.bodies:
            self.plan.add(Planned("subnet_option", option_key(key, option["code"]), option,
                                  source, owner=key))
        self.pools.read(entry, record.network, key, record.gateway, self.subnet_class(entry))
        for item in self.server.items(entry, "reservations"):
            self.reservation(item, record)

    def network(self, entry: KObj) -> IPNet:
        text = entry.get("subnet")
        try:
            network = ipaddress.ip_network(str(text), strict=True)
        except ValueError:
            raise Unmappable(f"subnet {text!r} is not a network in CIDR notation") from None
        if network.version != self.server.family:
            raise Unmappable(f"{network} is not an IPv{self.server.family} network")
        for other in self.planned:
            if other.network.overlaps(network):
                raise Unmappable(f"{network} overlaps {other.network}, planned before it "
                                 "(subnets never overlap)")
        return network

    def subnet_class(self, entry: KObj) -> str | None:
        """Kea's subnet-level `client-class` admits only that class's members: on the
        appliance, the pools without a class of their own go to that class (a class that is
        not mapped refuses those pools, rather than serve everyone)."""
        name = entry.get("client-class")
        if name is None:
            return None
        name = str(name)  # a class name; anything else matches no class
        if name in self.server.classes:
            self.plan.note(f"subnet {entry.get('subnet')}: client-class {name} restricts the "
                           "subnet; its pools without a class are given to that class",
                           entry.at("client-class"))
        return str(name)

    def lifetimes(self, scope: Scope, network: IPNet) -> dict[str, Any]:
        found = scope.get("valid-lifetime")
        lease = found[0] if found else KEA_DEFAULT_LIFETIME
        if not isinstance(lease, int) or not 1 <= lease <= 2_147_483_647:
            raise Unmappable(f"valid-lifetime {lease!r} is not 1 to 2147483647 seconds")
        fields: dict[str, Any] = {"lease_time_seconds": lease}
        for name, field in (("min-valid-lifetime", "min_lease_time_seconds"),
                            ("max-valid-lifetime", "max_lease_time_seconds")):
            bound = scope.get(name)
            if bound is None:
                continue
            ok = (isinstance(bound[0], int) and (bound[0] <= lease if "min" in name
                                                 else bound[0] >= lease))
            if network.version == 6:
                self.refuse_once(name, bound[1], "an IPv6 subnet gives its valid lifetime "
                                 "whatever a client hints (docs/api-ipam.md, Lease time)")
            elif not ok:
                self.refuse_once(name, bound[1], f"{bound[0]!r} does not hold the subnet's "
                                 f"lease time {lease} s")
            else:
                fields[field] = bound[0]
        self.timers(scope, lease)
        return fields

    def timers(self, scope: Scope, lease: int) -> None:
        """T1/T2 are derived (RFC 2131 §4.4.5: 50 % and 87.5 %); other values are refused."""
        for name, want in (("renew-timer", lease // 2), ("rebind-timer", lease * 7 // 8)):
            found = scope.get(name)
            if found is not None and found[0] != want:
                self.refuse_once(name, found[1], f"{found[0]} s: the appliance derives it from "
                                 f"the lease time ({want} s for {lease} s)")
        for name in ("preferred-lifetime", "min-preferred-lifetime", "max-preferred-lifetime"):
            found = scope.get(name)
            if found is not None:
                self.refuse_once(name, found[1], "the preferred lifetime derives from the "
                                 "valid lifetime (docs/dhcpv6.md)")

    def pxe(self, scope: Scope, network: IPNet) -> dict[str, Any]:
        out: dict[str, Any] = {}
        nxt, boot, sname = (scope.get(name) for name in ("next-server", "boot-file-name",
                                                          "server-hostname"))
        if sname is not None and sname[0] not in ("", None):
            self.refuse_once("server-hostname", sname[1], "the appliance does not set the "
                             "BOOTP sname field")
        if network.version == 6:
            return out
        if nxt is not None and not unset(nxt[0]):
            notes: list[str] = []
            try:
                out["next_server"] = addresses([str(nxt[0])], 4, self.server.resolver, notes)[0]
            except Unmappable as why:
                self.refuse_once("next-server", nxt[1], str(why))
            for note in notes:
                self.plan.note(note, nxt[1])
        if boot is not None and boot[0] not in ("", None):
            try:
                out["boot_file"] = boot_file(str(boot[0]))
            except Unmappable as why:
                self.refuse_once("boot-file-name", boot[1], str(why))
        return out

    def relay(self, entry: KObj, network: IPNet) -> None:
        relay = entry.get("relay")
        if not isinstance(relay, KObj):
            return
        found = relay.get("ip-addresses", [relay.get("ip-address")])
        for item in found if isinstance(found, list) else []:
            if unset(item):
                continue
            try:
                inside = ipaddress.ip_address(str(item)) in network
            except ValueError:
                self.plan.refuse("relay", entry.at("relay"), f"{item!r} is not an address")
                continue
            if inside:
                self.plan.note(f"relay {item}: list it in the trusted relays setting "
                               "(spec §1, rule 3)", entry.at("relay"))
            else:
                self.plan.refuse(f"relay {item}", entry.at("relay"), f"outside {network}: the "
                                 "appliance picks the subnet that holds the relay's address")

    # --- reservations -----------------------------------------------------------------

    def reservation(self, entry: KObj, subnet: _Planned) -> None:
        try:
            body, ip = self.reservation_body(entry, subnet)
        except Unmappable as why:
            label = entry.get("hostname") or entry.get("hw-address") or entry.get("duid") or ""
            self.plan.refuse(f"reservation {label}".strip(), entry.source, str(why))
            return
        key = reservation_key(str(subnet.network), ip)
        for ident in (ip, body.get("mac"), body.get("duid")):
            if ident:
                subnet.taken[ident] = key
        self.plan.add(Planned("reservation", key, body, entry.source, owner=subnet.key))
        mapped = self.server.mapper.map(self.server.option_data(entry), "reservation")
        if subnet.network.version == 6 and mapped.bodies:
            self.plan.refuse("reservation option-data", entry.at("option-data"),
                             "a reservation on an IPv6 subnet takes no options")
            return
        for option, source in mapped.bodies:
            self.plan.add(Planned("reservation_option", option_key(key, option["code"]),
                                  option, source, owner=key))

    def reservation_body(self, entry: KObj, subnet: _Planned) -> tuple[dict[str, Any], str]:
        body, ip = host_body(self.plan, entry, subnet.network)
        if ip == subnet.gateway:
            raise Unmappable(f"{ip} is the subnet's gateway")
        for ident in (ip, body.get("mac"), body.get("duid")):
            if ident and ident in subnet.taken:
                raise Unmappable(f"{ident} is already reserved ({subnet.taken[ident]})")
        return body, ip

    def global_reservation(self, entry: KObj, scope: Scope) -> None:
        del scope  # a global reservation takes its subnet's parameters, as Kea does
        wanted = entry.get("ip-address") if self.server.family == 4 else (
            (entry.get("ip-addresses") or [None])[0] if isinstance(
                entry.get("ip-addresses"), KList) else None)
        try:
            address = ipaddress.ip_address(str(wanted))
        except ValueError:
            self.plan.refuse("reservation", entry.source, "a global reservation without an "
                             "address is a host entry, not a reservation")
            return
        for subnet in self.planned:
            if address in subnet.network:
                self.plan.note(f"global reservation {address} placed in subnet "
                               f"{subnet.network}", entry.source)
                self.reservation(entry, subnet)
                return
        self.plan.refuse(f"reservation {address}", entry.source, "no planned subnet holds "
                         "this address")
