"""A Kea host reservation as the body of `POST /subnets/{id}/reservations`
(docs/api-ipam.md, "Reservations"): an address and a MAC or DUID.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ipamd.importer import identity
from ipamd.importer.kea_scope import unset
from ipamd.importer.kea_syntax import KList, KObj
from ipamd.importer.model import Plan
from ipamd.importer.options import Unmappable

IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network
HOST_KEYS = frozenset({"ip-address", "ip-addresses", "hw-address", "client-id", "duid",
                       "hostname", "option-data", "next-server", "boot-file-name",
                       "user-context", "comment"})
NO_EQUIVALENT = {
    "circuit-id": "a reservation by relay circuit-id has no equivalent (reservations are by "
                  "MAC or DUID; a client class can match a circuit-id)",
    "flex-id": "a flexible identifier is computed by a Kea hook; no equivalent",
    "client-classes": "classes given by a reservation have no equivalent (the appliance's "
                      "classes match what clients send)",
    "server-hostname": "the appliance does not set the BOOTP sname field",
    "prefixes": "reservations of delegated prefixes are not mapped: create them at "
                "/pd-pools/{id}/reservations",
}

EXTRAS = ("client-classes", "server-hostname", "prefixes")  # refused; the reservation stays


def host_body(plan: Plan, entry: KObj, network: IPNet) -> tuple[dict[str, Any], str]:
    """The reservation body and its address; `Unmappable` when it cannot be a reservation.
    Parts without an equivalent (classes, sname) are refused one by one, the rest kept."""
    for key in entry:
        if key in EXTRAS and entry[key] not in ("", None, []):
            plan.refuse(f"reservation {key}", entry.at(key), NO_EQUIVALENT[key])
        elif key not in HOST_KEYS and key not in NO_EQUIVALENT:
            plan.refuse(f"reservation {key}", entry.at(key), f"{key!r} has no equivalent on "
                        "a reservation")
    ip = _address(plan, entry, network)
    body: dict[str, Any] = {"ip": ip, **_identity(entry, network.version)}
    if "hostname" in entry and entry["hostname"] not in ("", None):
        try:
            body["hostname"] = identity.hostname(str(entry["hostname"]))
        except Unmappable as why:
            plan.refuse("reservation hostname", entry.at("hostname"), str(why))
    if network.version == 4:
        body.update(pxe(plan, entry, "reservation"))
    return body, ip


def pxe(plan: Plan, entry: KObj, where: str) -> dict[str, Any]:
    """`next-server` and `boot-file-name` of a class or reservation (Kea's empty values,
    `0.0.0.0` and `""`, mean unset); a value the API would not take is refused by line."""
    out: dict[str, Any] = {}
    try:
        if not unset(entry.get("next-server")):
            out["next_server"] = str(ipaddress.IPv4Address(str(entry["next-server"])))
    except ValueError:
        plan.refuse(f"{where} next-server", entry.at("next-server"),
                    f"{entry['next-server']!r} is not an IPv4 address")
    try:
        if entry.get("boot-file-name") not in (None, ""):
            out["boot_file"] = identity.boot_file(str(entry["boot-file-name"]))
    except Unmappable as why:
        plan.refuse(f"{where} boot-file-name", entry.at("boot-file-name"), str(why))
    return out


def _address(plan: Plan, entry: KObj, network: IPNet) -> str:
    if network.version == 4:
        wanted = entry.get("ip-address")
    else:
        found = entry.get("ip-addresses")
        items = list(found) if isinstance(found, KList) else []
        if len(items) > 1:
            plan.refuse("reservation ip-addresses", entry.at("ip-addresses"),
                        f"one address per reservation; {', '.join(map(str, items[1:]))} not "
                        "reserved")
        wanted = items[0] if items else None
    if wanted in (None, ""):
        raise Unmappable("a host entry without an address is not a reservation (the "
                         "appliance reserves an address for a client)")
    try:
        address = ipaddress.ip_address(str(wanted))
    except ValueError:
        raise Unmappable(f"{wanted!r} is not an IP address") from None
    if address not in network:
        raise Unmappable(f"{address} is outside the subnet {network}")
    first = network.network_address
    if address == first or (network.version == 4 and address == network.broadcast_address
                            and network.prefixlen < 31):
        raise Unmappable(f"{address} is not a host address of {network}")
    return str(address)


def _identity(entry: KObj, family: int) -> dict[str, str]:
    if family == 6:
        if "duid" not in entry:
            raise Unmappable("an IPv6 reservation needs a DUID (a MAC alone cannot identify "
                             "a DHCPv6 client behind common relays; docs/api-ipam.md, IPv6)")
        out = {"duid": identity.duid(str(entry["duid"]))}
        if "hw-address" in entry:
            out["mac"] = identity.mac(str(entry["hw-address"]))
        return out
    if "hw-address" in entry:
        return {"mac": identity.mac(str(entry["hw-address"]))}
    if "client-id" in entry:
        return {"mac": identity.client_id_mac(str(entry["client-id"]))}
    if "duid" in entry:
        return {"duid": identity.duid(str(entry["duid"]))}
    for key in ("circuit-id", "flex-id"):
        if key in entry:
            raise Unmappable(NO_EQUIVALENT[key])
    raise Unmappable("no MAC (hw-address, or client-id 01 + MAC) or DUID to identify the "
                     "client")
