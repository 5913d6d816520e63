"""dhcpd `host` declarations as reservations (spec §1: "Host or fixed-address entry for a
DHCP client" → reservation; docs/migrating.md, "From ISC dhcpd").

Identity: `hardware ethernet` is the MAC; a client identifier (`host-identifier option
dhcp-client-identifier`, or `option dhcp-client-identifier` in the host) of the `01`+MAC
form is a MAC too (RFC 2132 §9.14: type 1 is Ethernet), any other is the reservation's
`client_id` beside a MAC, and alone cannot make a reservation (spec §2, reservation rule
4). Each `fixed-address` (names resolved as dhcpd does at start) is one reservation in the
subnet that holds it. A host without an address is no reservation: with settings of its
own it becomes a client class matching its whole MAC, so its client still gets them (a
host beats classes in dhcpd, so the class comes first, priority 50); without, a note.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ipamd.importer import identity, model, options
from ipamd.importer.isc import values
from ipamd.importer.isc.parser import Node
from ipamd.importer.isc.scope import Scope, flag
from ipamd.importer.isc.settings import Settings, gather
from ipamd.importer.isc.site import Site
from ipamd.importer.isc.subnets import Planted, Planting, is_host
from ipamd.importer.model import Planned

HOST_CLASS_PRIORITY = 50  # before the imported classes (100): dhcpd applies a host last


class Skip(Exception):
    """This host cannot be mapped; the message says why."""


def fixed_addresses(site: Site) -> dict[int, list[ipaddress.IPv4Address]]:
    """Every host's fixed addresses (id(host scope) -> addresses), names resolved; a host
    whose address cannot be read is refused here, once."""
    found: dict[int, list[ipaddress.IPv4Address]] = {}
    for host in site.hosts:
        node = host.params.get("fixed-address")
        if node is None:
            continue
        notes: list[str] = []
        try:
            listed = values.address_list(node.words[1:], site.resolver, notes)
        except options.Unmappable as why:
            site.refuse(node, str(why))
            found[id(host)] = []
            continue
        for text in notes:
            site.note_at(node.source, text)
        found[id(host)] = [ipaddress.IPv4Address(a) for a in dict.fromkeys(listed)]
    return found


def plan_hosts(site: Site, planted: Planting,
               fixed: dict[int, list[ipaddress.IPv4Address]]) -> None:
    macs: dict[tuple[str, str], Planned] = {}  # (subnet key, MAC) -> its reservation
    for host in site.hosts:
        assert host.node is not None
        try:
            mac, client_id = _identity(site, host)
            if id(host) in fixed:
                _reservations(site, host, planted, fixed[id(host)], (mac, client_id), macs)
            else:
                _addressless(site, host, mac)
        except (Skip, options.Unmappable) as why:
            site.refuse(host.node, str(why))


def _boundary(host: Scope) -> Scope | None:
    """The first scope around the host that dhcpd consults through the address's subnet."""
    return next((s for s in host.chain() if s.kind in ("subnet", "shared-network", "global")),
                None)


def _identity(site: Site, host: Scope) -> tuple[str | None, str | None]:
    mac = None
    hardware = host.params.get("hardware")
    if hardware is not None:
        words = hardware.words
        if len(words) != 3 or not words[1].is_word("ethernet"):
            raise Skip("only 'hardware ethernet' addresses are taken (the appliance's "
                       "reservations are Ethernet MACs)")
        mac = _mac(values.octets(words[2]) if values.is_colon_hex(words[2]) else b"")
    client = _client_id(host)
    if client is None:
        return mac, None
    if len(client) == 7 and client[0] == 1 and (mac is None or _mac(client[1:]) == mac):
        return _mac(client[1:]), None
    if not 2 <= len(client) <= 255:
        raise Skip("a client identifier is 2 to 255 octets")
    return mac, options.colon_hex(client)


def _client_id(host: Scope) -> bytes | None:
    chosen = host.params.get("host-identifier")
    if chosen is not None:
        words = chosen.words
        if len(words) != 4 or not words[2].is_word("dhcp-client-identifier"):
            raise Skip("a host-identifier other than option dhcp-client-identifier has no "
                       "equivalent")
        return values.octets(words[3])
    written = host.params.get("option dhcp-client-identifier")
    return values.octets(written.words[2]) if written is not None and len(
        written.words) == 3 else None


def _mac(data: bytes) -> str:
    if len(data) != 6:
        raise Skip("the hardware address is not six octets")
    try:
        return identity.mac(options.colon_hex(data))
    except options.Unmappable as why:
        raise Skip(str(why)) from None


def _hostname(site: Site, host: Scope, settings: Settings) -> str | None:
    named = settings.fields.pop("hostname", None)
    use_names = host.lookup("use-host-decl-names")
    if named is None and use_names is not None and flag(use_names):
        assert host.node is not None
        named = host.node.words[1].text.lower()
    if not named:
        return None
    try:
        return identity.hostname(named)
    except options.Unmappable as why:
        assert host.node is not None
        site.refuse(host.node, f"{why}: the reservation is planned without a hostname")
        return None


def _reservations(site: Site, host: Scope, planted: Planting,
                  addresses: list[ipaddress.IPv4Address],
                  identity: tuple[str | None, str | None],
                  macs: dict[tuple[str, str], Planned]) -> None:
    assert host.node is not None
    mac, client_id = identity
    if mac is None:
        raise Skip("no MAC: a reservation needs one (a client identifier that is not "
                   "01+MAC is an extra match key on the appliance, not an identity)")
    settings = gather(site, host, "reservation", below=_boundary(host))
    hostname = _hostname(site, host, settings)
    for address in addresses:
        home = planted.holding(address)
        if home is None:
            site.refuse(host.node, f"{address}: no subnet declared in the file holds it")
            continue
        if not is_host(home.network, str(address)):
            site.refuse(host.node, f"{address} is the network or broadcast address of "
                                   f"{home.network}, not a host's")
            continue
        body: dict[str, Any] = {"ip": str(address), "mac": mac, **settings.fields}
        if client_id:
            body["client_id"] = client_id
        if hostname:
            body["hostname"] = hostname
        _reserve(site, host.node, home, body, settings, macs)


def _reserve(site: Site, node: Node, home: Planted, body: dict[str, Any],
             settings: Settings, macs: dict[tuple[str, str], Planned]) -> None:
    key = model.reservation_key(str(home.network), body["ip"])
    taken = site.plan.get(key)
    same_mac = macs.get((home.key, body["mac"]))
    if taken is not None or same_mac is not None:
        other = taken or same_mac
        assert other is not None
        site.refuse(node, f"{'its address' if taken else 'its MAC'} is reserved in "
                          f"{home.network} already, by the host at {other.source}")
        return
    subnet = site.plan.get(home.key)
    if subnet is not None and subnet.body.get("gateway") == body["ip"]:
        site.refuse(node, f"{body['ip']} is the router of {home.network}: the appliance "
                          "reserves no address that is a subnet's gateway")
        return
    macs[(home.key, body["mac"])] = site.plan.add(
        Planned("reservation", key, body, node.source, home.key))
    for code, payload, where in settings.options:
        site.plan.add(Planned("reservation_option", model.option_key(key, code),
                              {"code": code, "payload": payload}, where.source, key))


def _addressless(site: Site, host: Scope, mac: str | None) -> None:
    assert host.node is not None
    settings = gather(site, host, "class", below=_boundary(host))
    if not settings.fields and not settings.options:
        site.note(host.node, "a host without fixed-address and settings only makes its "
                             "client 'known' (for deny unknown-clients, which has no "
                             "equivalent): nothing to create")
        return
    if mac is None:
        raise Skip("a host without fixed-address carries settings for its client, but has "
                   "no MAC to match it by")
    name = f"host {host.node.words[1].text}"[:100]
    body = {"name": name, "match": "mac_prefix", "value": mac,
            "priority": HOST_CLASS_PRIORITY, **settings.fields,
            "description": f"host without fixed-address, imported from {host.node.source}"}
    key = site.add_named(Planned("client_class", model.class_key(name), body,
                                 host.node.source), host.node)
    if key is None:
        return
    site.note(host.node, f"no fixed-address, so no reservation: its settings are the client "
                         f"class {name!r} matching its MAC")
    for code, payload, where in settings.options:
        site.plan.add(Planned("class_option", model.option_key(key, code),
                              {"code": code, "payload": payload}, where.source, key))
