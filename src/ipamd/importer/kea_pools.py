"""Kea's `pools` and `pd-pools` of a subnet as the API's pools and delegation pools
(docs/api-ipam.md, "Pools" and "Delegation pools").
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from ipamd.importer.kea_syntax import KObj
from ipamd.importer.model import (
    Planned,
    Ref,
    class_key,
    net,
    pd_pool_key,
    prefix_key,
    range_key,
)
from ipamd.importer.options import Unmappable

if TYPE_CHECKING:
    from ipamd.importer.kea_subnet import Server

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network
POOL_KEYS = frozenset({"pool", "client-class", "user-context", "comment"})
PD_KEYS = frozenset({"prefix", "prefix-len", "delegated-len", "user-context", "comment"})


def address(value: int, version: int) -> IP:
    return ipaddress.IPv4Address(value) if version == 4 else ipaddress.IPv6Address(value)


def pool_range(text: str, network: IPNet) -> tuple[int, int]:
    """`a - b` or a CIDR as integers, clipped to the subnet's host addresses (the API takes
    no network or broadcast address, nor an IPv6 subnet's first one, RFC 4291 §2.6.1)."""
    try:
        if "-" in text:
            low, high = (ipaddress.ip_address(part.strip()) for part in text.split("-", 1))
        else:
            block = ipaddress.ip_network(text.strip(), strict=False)
            low, high = block.network_address, block.broadcast_address
    except ValueError:
        raise Unmappable(f"pool {text!r} is neither 'first - last' nor a CIDR") from None
    if low not in network or high not in network or int(low) > int(high):
        raise Unmappable(f"pool {text} is not a range inside {network}")
    first, last = int(low), int(high)
    if first == int(network.network_address):
        first += 1
    if network.version == 4 and last == int(network.broadcast_address) and \
            network.prefixlen < 31:
        last -= 1
    if first > last:
        raise Unmappable(f"pool {text} holds no host address")
    return first, last


class Pools:
    def __init__(self, server: Server) -> None:
        self.server, self.plan = server, server.plan

    def read(self, entry: KObj, network: IPNet, subnet: str, gateway: str | None,
             subnet_class: str | None) -> None:
        taken: list[tuple[int, int]] = []
        for item in self.server.items(entry, "pools"):
            try:
                self.pool(item, network, subnet, gateway, subnet_class, taken)
            except Unmappable as why:
                self.plan.refuse(f"pool {item.get('pool', '?')}", item.source, str(why))
        for item in self.server.items(entry, "pd-pools"):
            try:
                self.pd_pool(item, network, subnet)
            except Unmappable as why:
                self.plan.refuse(f"pd-pool {item.get('prefix', '?')}", item.source, str(why))

    def pool(self, item: KObj, network: IPNet, subnet: str, gateway: str | None,
             subnet_class: str | None, taken: list[tuple[int, int]]) -> None:
        first, last = pool_range(str(item.get("pool", "")), network)
        version = network.version
        for low, high in taken:
            if first <= high and low <= last:
                raise Unmappable(f"overlaps the pool {address(low, version)}-"
                                 f"{address(high, version)} (pools never overlap)")
        taken.append((first, last))
        for key in item:
            if key not in POOL_KEYS:
                self.plan.refuse(f"pool {key}", item.at(key), f"{key!r} has no equivalent on a "
                                 "pool (options live on the subnet, a class or a reservation)")
        body: dict[str, Any] = {}
        name = item.get("client-class", subnet_class)
        if name is not None:
            name = str(name)  # a class name; anything else matches no class
            if name not in self.server.classes:
                raise Unmappable(f"its client-class {name!r} is not mapped; without it the "
                                 "pool would serve every client")
            body["class_id"] = Ref(class_key(str(name)))
        for low, high in _around(first, last, gateway):
            start, end = str(address(low, version)), str(address(high, version))
            self.plan.add(Planned("pool", range_key("pool", str(network), start, end),
                                  {"name": f"kea {start}-{end}", "start_ip": start,
                                   "end_ip": end, **body}, item.source, owner=subnet))
        if gateway is not None and first <= int(ipaddress.ip_address(gateway)) <= last:
            self.plan.note(f"pool {item.get('pool')} holds the gateway {gateway}: split "
                           "around it (a pool may not contain the gateway)", item.source)

    def pd_pool(self, item: KObj, network: IPNet, subnet: str) -> None:
        for key in item:
            if key not in PD_KEYS:
                self.plan.refuse(f"pd-pool {key}", item.at(key), f"{key!r} has no equivalent "
                                 "on a delegation pool")
        try:
            block = ipaddress.IPv6Network(f"{item.get('prefix')}/{item.get('prefix-len')}")
        except ValueError:
            raise Unmappable("prefix and prefix-len do not make an IPv6 network") from None
        length = item.get("delegated-len")
        if not isinstance(length, int) or not block.prefixlen < length <= 128:
            raise Unmappable(f"delegated-len {length!r} is not longer than /{block.prefixlen}")
        for other in self.plan.objects:
            if other.kind == "subnet" and ipaddress.ip_network(other.body["cidr"]).overlaps(block):
                raise Unmappable(f"{block} overlaps the subnet {other.body['cidr']}: a "
                                 "delegated prefix is routed to a router, never on a link")
        if prefix_key(str(block)) not in self.plan:
            self.plan.add(Planned("prefix", prefix_key(str(block)), {"cidr": net(str(block))},
                                  item.source))
        self.plan.add(Planned("pd_pool", pd_pool_key(str(network), str(block), length),
                              {"name": f"kea {block}", "prefix": str(block),
                               "delegated_length": length}, item.source, owner=subnet))


def _around(first: int, last: int, gateway: str | None) -> list[tuple[int, int]]:
    """The range without the gateway (one or two ranges)."""
    if gateway is None:
        return [(first, last)]
    hole = int(ipaddress.ip_address(gateway))
    if not first <= hole <= last:
        return [(first, last)]
    return [(low, high) for low, high in ((first, hole - 1), (hole + 1, last)) if low <= high]
