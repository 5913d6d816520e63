"""Subnets, shared networks and ranges as the API's prefixes, subnets, shared networks and
pools (spec §1's table; docs/migrating.md, "From ISC dhcpd").
"""

from __future__ import annotations

import bisect
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ipamd.importer import model
from ipamd.importer.isc.lexer import Kind
from ipamd.importer.isc.parser import Node
from ipamd.importer.isc.settings import gather, lease_fields, timers_kept
from ipamd.importer.isc.site import NOT_APPLICABLE, Range, Site, SubnetDecl
from ipamd.importer.model import Planned, Ref

Network = ipaddress.IPv4Network
Found = list[tuple[int, dict[str, object], Node]]


@dataclass(frozen=True)
class Planted:
    """A subnet in the plan: its network, key and declaration."""

    network: Network
    key: str
    decl: SubnetDecl


class Planting:
    """The planted subnets, sorted by address: they never overlap, so the one holding an
    address (or overlapping a network) is found by bisection, not by a scan per host."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.items: list[Planted] = []

    def __iter__(self) -> Iterator[Planted]:
        return iter(self.items)

    def _near(self, first: int, last: int) -> Planted | None:
        at = bisect.bisect_right(self.starts, last) - 1
        if at >= 0 and int(self.items[at].network.broadcast_address) >= first:
            return self.items[at]
        return None

    def holding(self, address: ipaddress.IPv4Address) -> Planted | None:
        return self._near(int(address), int(address))

    def overlapping(self, network: Network) -> Planted | None:
        return self._near(int(network.network_address), int(network.broadcast_address))

    def add(self, item: Planted) -> None:
        at = bisect.bisect_right(self.starts, int(item.network.network_address))
        self.starts.insert(at, int(item.network.network_address))
        self.items.insert(at, item)


def plan_subnets(site: Site, classes: dict[str, str | None],
                 fixed: set[ipaddress.IPv4Address]) -> Planting:
    shared = {id(scope): _shared(site, scope) for scope in site.shared}
    hosts = sorted(int(address) for address in fixed)
    planted = Planting()
    for decl in site.subnets:
        clash = planted.overlapping(decl.network)
        if clash is not None:
            site.refuse(_node(decl), f"overlaps the subnet {clash.network} declared at "
                                     f"{_node(clash.decl).source}")
            continue
        ranges = decl.ranges + [r for r in site.loose_ranges if _inside(r, decl.network)]
        fields, found = _fields(site, decl, bool(ranges) or _holds(decl.network, hosts))
        shared_key = shared.get(id(decl.shared)) if decl.shared is not None else None
        if shared_key is not None:
            fields["shared_network_id"] = Ref(shared_key)
        key = model.add_scope(site.plan, str(decl.network), fields, _node(decl).source)
        planted.add(Planted(decl.network, key, decl))
        for code, payload, node in found:
            site.plan.add(Planned("subnet_option", model.option_key(key, code),
                                  {"code": code, "payload": payload}, node.source, key))
        taken: list[Planned] = []
        for rng in ranges:
            _pool(site, (key, decl.network, fields.get("gateway")), rng, classes, taken)
    for rng in site.loose_ranges:
        if not any(_inside(rng, p.network) for p in planted):
            site.refuse(rng.node, "no subnet of its shared-network holds this range")
    return planted


def _holds(network: Network, hosts: list[int]) -> bool:
    """Some host's fixed address (``hosts`` sorted) is in ``network``."""
    at = bisect.bisect_left(hosts, int(network.network_address))
    return at < len(hosts) and hosts[at] <= int(network.broadcast_address)


def _node(decl: SubnetDecl) -> Node:
    assert decl.scope.node is not None
    return decl.scope.node


def _shared(site: Site, scope: Any) -> str | None:
    node: Node = scope.node
    words = node.words
    if len(words) != 2 or not 1 <= len(words[1].text) <= 100:
        site.refuse(node, "write it as: shared-network NAME { ... }")
        return None
    name = words[1].text
    body = {"name": name, "description": f"imported from {node.source}"}
    return site.add_named(Planned("shared_network", model.shared_network_key(name), body,
                                  node.source), node)


def _fields(site: Site, decl: SubnetDecl, in_use: bool) -> tuple[dict[str, Any], Found]:
    settings = gather(site, decl.scope, "subnet", network=decl.network)
    fields: dict[str, Any] = {**lease_fields(site, decl.scope), **settings.fields}
    timers_kept(site, settings, fields["lease_time_seconds"])
    gateway = fields.get("gateway")
    if gateway is not None and not is_host(decl.network, gateway):
        site.refuse(decl.scope.lookup("option routers") or _node(decl),
                    f"the router {gateway} is not a host address of {decl.network}: the "
                    "appliance's gateway is one (the subnet is planned without it)")
        del fields["gateway"]
    if not in_use:
        fields["dhcp_enabled"] = False
        site.note(_node(decl), "no range and no host in it: a subnet without DHCP "
                               "(dhcp_enabled=false), as spec §1 maps a VLAN without DHCP")
    decl_node = _node(decl)
    fields["description"] = f"imported from {decl_node.source}"
    return fields, settings.options


def is_host(network: Network, address: str) -> bool:
    ip = ipaddress.IPv4Address(address)
    return ip in network and (network.prefixlen >= 31
                              or ip not in (network.network_address, network.broadcast_address))


def _inside(rng: Range, network: Network) -> bool:
    bounds = _bounds(rng.node)
    return bounds is not None and bounds[0] in network and bounds[1] in network


def _bounds(node: Node) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address] | None:
    words = [w for w in node.words[1:] if not w.is_word("dynamic-bootp")]
    if not 1 <= len(words) <= 2 or any(w.kind is not Kind.WORD for w in words):
        return None
    try:
        low = ipaddress.IPv4Address(words[0].text)
        high = ipaddress.IPv4Address(words[-1].text)
    except ValueError:
        return None
    return (low, high) if low <= high else None


def _pool(site: Site, subnet: tuple[str, Network, str | None], rng: Range,
          classes: dict[str, str | None], taken: list[Planned]) -> None:
    """Plan one range as a pool of ``subnet`` (key, network, gateway); ``taken`` holds the
    subnet's pools so far."""
    owner, network, gateway = subnet
    node = rng.node
    bounds = _bounds(node)
    if bounds is None:
        site.refuse(node, "write it as: range [dynamic-bootp] LOW [HIGH]; with LOW <= HIGH")
        return
    if not (is_host(network, str(bounds[0])) and is_host(network, str(bounds[1]))):
        site.refuse(node, f"the range is not inside the host addresses of {network}")
        return
    clash = next((o for o in taken if _overlap(o.body, *bounds)), None)
    if clash is not None:
        site.refuse(node, f"overlaps the range at {clash.source}")
        return
    body: dict[str, Any] = {}
    if rng.pool is not None:
        class_key = _permits(site, rng, classes)
        if class_key is False:
            return
        if isinstance(class_key, str):
            body["class_id"] = Ref(class_key)
    if node.words[1].is_word("dynamic-bootp"):
        site.note(node, "planned as a pool; plain BOOTP clients are not served by the "
                        "appliance (DHCP clients are)")
    for low, high in _around(bounds, gateway, site, node):
        piece = {"name": f"{low}-{high}", "start_ip": str(low), "end_ip": str(high), **body}
        key = model.range_key("pool", str(network), str(low), str(high))
        taken.append(site.plan.add(Planned("pool", key, piece, node.source, owner)))


Bounds = tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]


def _around(bounds: Bounds, gateway: str | None, site: Site, node: Node) -> list[Bounds]:
    """The range without the gateway (a pool may not hold it): one or two ranges."""
    low, high = bounds
    if gateway is None or not low <= ipaddress.IPv4Address(gateway) <= high:
        return [bounds]
    router = ipaddress.IPv4Address(gateway)
    site.note(node, f"the range holds the router {gateway}: planned around it (a pool may "
                    "not contain the gateway)")
    return [(a, b) for a, b in ((low, router - 1), (router + 1, high)) if a <= b]


def _overlap(body: Any, low: ipaddress.IPv4Address, high: ipaddress.IPv4Address) -> bool:
    start, end = ipaddress.IPv4Address(body["start_ip"]), ipaddress.IPv4Address(body["end_ip"])
    return start <= high and low <= end


def _permits(site: Site, rng: Range, classes: dict[str, str | None]) -> str | bool | None:
    """The class a pool is kept for (its key), None for every client, False: refused."""
    assert rng.pool is not None
    allowed: list[str] = []
    for rule in site.permits.get(id(rng.pool), []):
        words = [w.text.lower() for w in rule.words]
        if words[0] == "failover":
            site.note(rule, NOT_APPLICABLE)
        elif words[:3] == ["allow", "members", "of"] and len(words) == 4:
            allowed.append(rule.words[3].text)
        elif words in (["deny", "dynamic", "bootp", "clients"], ["allow", "all", "clients"]):
            site.note(rule, "as the appliance behaves")
        else:
            site.refuse(rule, "no equivalent on the appliance: the pool is planned open to "
                              "every client (or only to its allowed class)")
    if len(allowed) > 1:
        site.refuse(rng.node, "a pool for several classes: the appliance's pool takes one "
                              f"class ({', '.join(allowed)})")
        return False
    if not allowed:
        return None
    key = classes.get(allowed[0].lower())
    if key is None:
        site.refuse(rng.node, f"its class {allowed[0]!r} is not mapped (see its refusal), "
                              "so the range is not planned rather than open to all")
        return False
    return key
