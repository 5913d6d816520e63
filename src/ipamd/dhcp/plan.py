"""The address plan as the DHCP hot path needs it: immutable, prebuilt, int addresses.

Built once per change of the IPAM tables (see plan_loader) from plain rows, so a
packet never reads subnets, pools, excludes, reservations, options or classes from
the database. Addresses are ints, as the codec gives them.
"""

from __future__ import annotations

import ipaddress
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ipamd.core import identifiers
from ipamd.core.option_shapes import MAX_VALUE, wire
from ipamd.dhcp.groups import link_members
from ipamd.dhcp.options import (
    BROADCAST_ADDRESS,
    CLIENT_ID,
    FQDN,
    LEASE_TIME,
    MAX_SIZE,
    MESSAGE_TYPE,
    NTP,
    OVERLOAD,
    PRL,
    REBINDING,
    RELAY_AGENT,
    RENEWAL,
    REQUESTED_IP,
    ROUTER,
    SERVER_ID,
    SUBNET_MASK,
)

log = logging.getLogger("ipamd.dhcp.plan")

# Codes the server owns: never taken from stored options.
_SERVER_OWNED = frozenset(
    {0, SUBNET_MASK, REQUESTED_IP, LEASE_TIME, OVERLOAD, MESSAGE_TYPE, SERVER_ID, PRL, 56,
     MAX_SIZE, RENEWAL, REBINDING, CLIENT_ID, FQDN, RELAY_AGENT, 255}
)

Range = tuple[int, int]  # inclusive
# Class match kinds whose value is hex octets compared whole: option 82 sub-options 1, 2.
RELAY_MATCHES = ("circuit_id", "remote_id")


@dataclass(frozen=True, slots=True)
class Layer:
    """A client class's or a reservation's own options and PXE fields, encoded at plan
    load: what it puts over the subnet's (dhcp/scopes.py lays them on)."""

    kind: str  # "class" | "reservation"
    id: uuid.UUID
    name: str  # the class's name; the reservation's address
    options: dict[int, bytes]
    vendor_options: dict[bytes, dict[int, bytes]]  # by option 60 prefix (code 43)
    next_server: str | None
    boot_file: str | None


@dataclass(frozen=True, slots=True)
class ClientClass:
    id: uuid.UUID
    name: str
    match: str  # vendor_class | user_class | mac_prefix | arch | circuit_id | remote_id
    # vendor/user class as bytes; mac prefix as lowercase hex digits; arch as 2 octets
    # (RFC 4578 §2.1); circuit/remote id as the sub-option's octets
    value: bytes
    priority: int = 100  # the lowest number's option wins among matching classes
    layer: Layer | None = None  # None: the class only gates pools


@dataclass(frozen=True, slots=True)
class Reservation:
    id: uuid.UUID
    ip: int
    mac: bytes | None  # 6 octets
    client_id: bytes | None  # option 61, raw
    duid: str | None  # lowercase hex, no separators
    hostname: str | None
    layer: Layer | None = None  # its own options, over its classes' and the subnet's


@dataclass(frozen=True, slots=True)
class Pool:
    id: uuid.UUID
    start: int
    end: int
    class_id: uuid.UUID | None
    # The pool minus excludes, network, broadcast and gateway; ascending, disjoint.
    segments: tuple[Range, ...]
    size: int

    def contains(self, ip: int) -> bool:
        return any(lo <= ip <= hi for lo, hi in self.segments)


# The DDNS adapters this server performs DNS updates through: a lease event of such a
# subnet becomes an outbox row (kind dns) that the dns room delivers. Option 81 says so
# (RFC 4702 S flag) only for these; embedded serves the names itself from the leases.
DNS_UPDATE_ADAPTERS: frozenset[str] = frozenset(
    {"bind_tsig", "powerdns_http", "ad_gsstsig", "embedded"})


def performs_dns_updates(subnet: Subnet) -> bool:
    """Whether this server performs DNS updates for clients of ``subnet``."""
    return subnet.ddns_adapter in DNS_UPDATE_ADAPTERS and subnet.ddns_zone is not None


@dataclass(slots=True)
class Subnet:
    id: uuid.UUID
    tenant_id: uuid.UUID
    network: int
    prefixlen: int
    mask: int
    broadcast: int
    gateway: int | None
    lease_time: int
    dhcp_enabled: bool
    next_server: str | None
    boot_file: str | None
    ddns_adapter: str  # as configured; see performs_dns_updates for what it means today
    ddns_zone: str | None = None  # the forward zone the clients' names are registered in
    pools: tuple[Pool, ...] = ()
    excludes: tuple[Range, ...] = ()
    # Addresses no dynamic client may get: every reservation and assignment.
    blocked: frozenset[int] = frozenset()
    by_mac: dict[bytes, Reservation] = field(default_factory=dict)
    by_client_id: dict[bytes, Reservation] = field(default_factory=dict)
    by_duid: dict[str, Reservation] = field(default_factory=dict)
    by_ip: dict[int, Reservation] = field(default_factory=dict)
    # Options for every client, ready to copy into a reply.
    options: dict[int, bytes] = field(default_factory=dict)
    # (vendor class bytes, options) pairs applied when option 60 matches; first match wins.
    vendor_options: tuple[tuple[bytes, dict[int, bytes]], ...] = ()
    # 51, 58 and 59 for the lease time, encoded once.
    lease_options: dict[int, bytes] = field(default_factory=dict)
    # (lowest, highest) lease time a client's option 51 may get; None: the option is not read
    # and every client gets lease_time (Kea's rule when no bounds are set).
    lease_bounds: tuple[int, int] | None = None
    # The ping check's wait for an echo reply before an Offer (s); 0: off (dhcp/pingcheck.py).
    ping_timeout: float = 0.0
    # Reply options per (parameter request list, vendor class); filled by the reply stage.
    reply_memo: dict[tuple[bytes, bytes | None], dict[int, bytes]] = field(default_factory=dict)
    # Encoded replies' options per (type, INFORM?, server id, 55, 60); the reply stage's.
    wire_memo: dict[tuple[int, bool, int, bytes, bytes | None], Any] = field(
        default_factory=dict)
    # In a shared network: the members' ids, this subnet's first, then the others in the
    # order new addresses are tried (dhcp/shared.py); empty for a subnet on a link alone.
    shared: tuple[uuid.UUID, ...] = ()

    def contains(self, ip: int) -> bool:
        return ip & self.mask == self.network

    def excluded(self, ip: int) -> bool:
        return any(lo <= ip <= hi for lo, hi in self.excludes)

    def usable(self, ip: int) -> bool:
        """Inside the subnet and neither its network, broadcast, gateway nor excluded."""
        if not self.contains(ip) or ip == self.gateway:
            return False
        if self.prefixlen < 31 and ip in (self.network, self.broadcast):
            return False
        return not self.excluded(ip)

    def dynamic_ok(self, ip: int, classes: frozenset[uuid.UUID]) -> bool:
        """May a client in ``classes`` hold ``ip`` without a reservation?"""
        if ip in self.blocked:
            return False
        for pool in self.pools:
            if (pool.class_id is None or pool.class_id in classes) and pool.contains(ip):
                return True
        return False


@dataclass(slots=True)
class Plan:
    subnets: dict[uuid.UUID, Subnet]
    classes: tuple[ClientClass, ...]
    trusted_relays: tuple[str, ...]  # from the settings resource (the TOML list is added later)
    version: int
    # (mask, {network: subnet}) from the longest prefix to the shortest.
    _lookup: tuple[tuple[int, dict[int, Subnet]], ...] = ()
    # The classes that carry options, highest precedence last (dhcp/scopes.py).
    layered: tuple[ClientClass, ...] = ()
    # Subnets with class and reservation options laid on, per (subnet, classes with
    # options, reservation): made once per plan at first use (dhcp/scopes.py).
    scoped: dict[tuple[uuid.UUID, frozenset[uuid.UUID], uuid.UUID | None], Subnet] = field(
        default_factory=dict)

    def subnet_for(self, ip: int) -> Subnet | None:
        for mask, table in self._lookup:
            found = table.get(ip & mask)
            if found is not None:
                return found
        return None


def mask_of(prefixlen: int) -> int:
    return (0xFFFFFFFF << (32 - prefixlen)) & 0xFFFFFFFF


def subtract(ranges: Iterable[Range], holes: Iterable[Range]) -> tuple[Range, ...]:
    """``ranges`` minus ``holes``; both inclusive."""
    out = sorted(ranges)
    for hlo, hhi in sorted(holes):
        kept: list[Range] = []
        for lo, hi in out:
            if hhi < lo or hlo > hi:
                kept.append((lo, hi))
                continue
            if lo < hlo:
                kept.append((lo, hlo - 1))
            if hi > hhi:
                kept.append((hhi + 1, hi))
        out = kept
    return tuple(out)


def _match_value(match: str, value: str) -> bytes:
    if match == "mac_prefix":
        return (identifiers.bare_hex(value) or "").encode()
    if match == "arch":
        return int(value).to_bytes(2, "big")
    if match in RELAY_MATCHES:
        return bytes.fromhex(identifiers.bare_hex(value) or "")
    return value.encode()


def _class(row: Mapping[str, Any], stored: Sequence[Mapping[str, Any]]) -> ClientClass:
    layer = _layer("class", row, row["name"], stored)
    return ClientClass(row["id"], row["name"], row["match"],
                       _match_value(row["match"], str(row["value"])), row.get("priority", 100),
                       layer)


def _layer(kind: str, row: Mapping[str, Any], name: str,
           stored: Sequence[Mapping[str, Any]]) -> Layer | None:
    """The class's or reservation's own options and PXE fields; None when it has none."""
    generic, vendor = encode_options(f"{kind} {row['id']}", stored)
    next_server, boot_file = row.get("next_server") or None, row.get("boot_file") or None
    if not (generic or vendor or next_server or boot_file):
        return None
    return Layer(kind, row["id"], name, generic, vendor, next_server, boot_file)


def encode_options(
    owner: str, stored: Iterable[Mapping[str, Any]], skip: frozenset[int] = _SERVER_OWNED,
) -> tuple[dict[int, bytes], dict[bytes, dict[int, bytes]]]:
    """Stored option rows as wire values: (for every client, by vendor class prefix)."""
    generic: dict[int, bytes] = {}
    vendor: dict[bytes, dict[int, bytes]] = {}
    for row in stored:
        code = row["code"]
        if code in skip:
            continue
        try:
            value = wire(code, row["payload"])  # the API stored it normalised
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning("%s option %s skipped: %s", owner, code, error)
            continue
        if not value or len(value) > MAX_VALUE:  # over 255: split (RFC 3396, packing)
            continue
        if row["vendor_class"]:
            vendor.setdefault(row["vendor_class"].encode(), {})[code] = value
        else:
            generic[code] = value
    return generic, vendor


def _options(subnet: Subnet, stored: Sequence[Mapping[str, Any]], ntp: Sequence[int]) -> None:
    generic: dict[int, bytes] = {SUBNET_MASK: subnet.mask.to_bytes(4, "big")}
    if subnet.gateway is not None:
        generic[ROUTER] = subnet.gateway.to_bytes(4, "big")
    if ntp:
        generic[NTP] = b"".join(a.to_bytes(4, "big") for a in ntp)
    # The subnet's fields own mask and router.
    skip = _SERVER_OWNED | {ROUTER} if subnet.gateway is not None else _SERVER_OWNED
    own, vendor = encode_options(f"subnet {subnet.id}", stored, skip)
    generic.update(own)  # a stored 42 replaces the subnet's NTP field
    if subnet.prefixlen < 31 and BROADCAST_ADDRESS not in generic:
        generic[BROADCAST_ADDRESS] = subnet.broadcast.to_bytes(4, "big")
    subnet.options = generic
    # Longest vendor class first, so "PXEClient:Arch:00007" beats "PXEClient".
    subnet.vendor_options = tuple(sorted(vendor.items(), key=lambda kv: -len(kv[0])))


def _group(rows: Iterable[Mapping[str, Any]]) -> dict[uuid.UUID, list[Mapping[str, Any]]]:
    grouped: dict[uuid.UUID, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["subnet_id"], []).append(row)
    return grouped


def lease_options(seconds: int) -> dict[int, bytes]:
    """Options 51, 58 and 59 of a lease of ``seconds``: RFC 2131 §4.4.5, T1 = 50 %, T2 = 87.5 %."""
    return {
        LEASE_TIME: seconds.to_bytes(4, "big"),
        RENEWAL: (seconds // 2).to_bytes(4, "big"),
        REBINDING: (seconds * 7 // 8).to_bytes(4, "big"),
    }


def _lease_bounds(row: Mapping[str, Any]) -> tuple[int, int] | None:
    """The subnet's bounds on a requested lease time; a side left unset is lease_time."""
    low, high = row.get("min_lease_time_seconds"), row.get("max_lease_time_seconds")
    if low is None and high is None:
        return None
    lease: int = row["lease_time_seconds"]
    return (lease if low is None else low, lease if high is None else high)


def build(rows: Mapping[str, Any]) -> Plan:
    """A Plan from the loader's rows (ints for addresses; see plan_loader.load_rows)."""
    pools, excludes = _group(rows["pools"]), _group(rows["excludes"])
    reservations, assignments = _group(rows["reservations"]), _group(rows["assignments"])
    stored = _group(rows["options"])
    by_reservation = _owned(rows.get("reservation_options", ()), "reservation_id")
    subnets: dict[uuid.UUID, Subnet] = {}
    for row in rows["subnets"]:
        subnet = _subnet(row)
        subnet.excludes = tuple(sorted((e["start_ip"], e["end_ip"])
                                       for e in excludes.get(subnet.id, ())))
        built = _pools(subnet, pools.get(subnet.id, ()))
        subnet.pools = tuple(built) if subnet.dhcp_enabled else ()
        _reservations(subnet, reservations.get(subnet.id, ()), assignments.get(subnet.id, ()),
                      by_reservation)
        subnet.lease_options = lease_options(subnet.lease_time)
        _options(subnet, stored.get(subnet.id, ()), row["ntp_servers"] or ())
        subnets[subnet.id] = subnet
    link_members(subnets, rows["subnets"])
    classes = _classes(rows["classes"], rows.get("class_options", ()))
    return Plan(
        subnets=subnets,
        classes=classes,
        layered=tuple(c for c in reversed(classes) if c.layer is not None),
        trusted_relays=tuple(rows.get("trusted_relays") or ()),
        version=rows.get("version", 0),
        _lookup=_lookup_table(subnets.values()),
    )


def _subnet(row: Mapping[str, Any]) -> Subnet:
    """A subnet's own fields; its pools, reservations and options are added after."""
    prefixlen = row["prefixlen"]
    mask = mask_of(prefixlen)
    network = row["network"] & mask
    return Subnet(
        id=row["id"], tenant_id=row["tenant_id"], network=network, prefixlen=prefixlen,
        mask=mask, broadcast=network | (~mask & 0xFFFFFFFF), gateway=row["gateway"],
        lease_time=row["lease_time_seconds"], dhcp_enabled=row["dhcp_enabled"],
        next_server=row["next_server"] or None, boot_file=row["boot_file"] or None,
        ddns_adapter=row["ddns_adapter"] or "none",
        ddns_zone=row.get("ddns_zone") if row.get("ddns_server_id")
        or row["ddns_adapter"] == "embedded" else None, lease_bounds=_lease_bounds(row),
        ping_timeout=row["ping_timeout_ms"] / 1000 if row.get("ping_check") else 0.0,
    )


def _pools(subnet: Subnet, rows: Iterable[Mapping[str, Any]]) -> list[Pool]:
    """The subnet's pools, each as the segments left once excludes, the network and
    broadcast addresses (below /31) and the gateway are taken out."""
    network = subnet.network
    holes = list(subnet.excludes)
    if subnet.prefixlen < 31:
        holes += [(network, network), (subnet.broadcast, subnet.broadcast)]
    if subnet.gateway is not None:
        holes.append((subnet.gateway, subnet.gateway))
    built = []
    for p in sorted(rows, key=lambda p: p["start_ip"]):
        lo, hi = max(p["start_ip"], network), min(p["end_ip"], subnet.broadcast)
        segments = subtract([(lo, hi)], holes) if lo <= hi else ()
        size = sum(h - low + 1 for low, h in segments)
        built.append(Pool(p["id"], p["start_ip"], p["end_ip"], p["class_id"], segments, size))
    return built


def _owned(rows: Iterable[Mapping[str, Any]],
           column: str) -> dict[uuid.UUID, list[Mapping[str, Any]]]:
    grouped: dict[uuid.UUID, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row[column], []).append(row)
    return grouped


def _classes(rows: Iterable[Mapping[str, Any]],
             options: Iterable[Mapping[str, Any]]) -> tuple[ClientClass, ...]:
    """The classes in the order their options win: lowest priority number first, then
    the older class (docs/api-ipam.md, "Option scopes")."""
    by_class = _owned(options, "class_id")
    built = [_class(row, by_class.get(row["id"], ())) for row in rows]
    return tuple(sorted(built, key=lambda c: (c.priority, c.id)))


def _reservations(subnet: Subnet, rows: Iterable[Mapping[str, Any]],
                  assignments: Iterable[Mapping[str, Any]],
                  options: Mapping[uuid.UUID, Sequence[Mapping[str, Any]]]) -> None:
    """The subnet's reservations by ip, MAC, client id and DUID; with its assignments,
    the addresses no pool may grant."""
    blocked = {a["ip"] for a in assignments}
    for r in rows:
        mac = bytes.fromhex(identifiers.bare_hex(r["mac"]) or "") if r["mac"] else None
        layer = _layer("reservation", r, str(ipaddress.IPv4Address(r["ip"])),
                       options.get(r["id"], ()))
        res = Reservation(r["id"], r["ip"], mac if mac and len(mac) == 6 else None,
                          r["client_id"], identifiers.bare_hex(r["duid"]), r["hostname"], layer)
        blocked.add(res.ip)
        subnet.by_ip[res.ip] = res
        if res.mac:
            subnet.by_mac[res.mac] = res
        if res.client_id:
            subnet.by_client_id[res.client_id] = res
        if res.duid:
            subnet.by_duid[res.duid] = res
    subnet.blocked = frozenset(blocked)


def _lookup_table(subnets: Iterable[Subnet]) -> tuple[tuple[int, dict[int, Subnet]], ...]:
    by_len: dict[int, dict[int, Subnet]] = {}
    for subnet in sorted(subnets, key=lambda s: s.id):
        table = by_len.setdefault(subnet.prefixlen, {})
        if subnet.network in table:
            # Same network in two tenants: without VRF information the first one serves it.
            log.warning("subnets %s and %s share %s; %s serves DHCP",
                        table[subnet.network].id, subnet.id, subnet.network,
                        table[subnet.network].id)
            continue
        table[subnet.network] = subnet
    return tuple((mask_of(n), by_len[n]) for n in sorted(by_len, reverse=True))
