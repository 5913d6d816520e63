"""The DHCPv6 plan from Postgres: IPv6 subnets serving DHCP, with their pools, excludes,
DUID reservations, delegation pools (and their excludes and reservations) and options.

Loaded and kept current by ``dhcp.plan_loader.PlanHolder`` (the DHCPv4 server's holder: one
NOTIFY channel, one version counter, the same reload rules), given ``load_rows`` and
``build`` from here. One crossing, one repeatable-read snapshot.

What a link gets from its subnet (docs/dhcpv6.md): the valid lifetime is the subnet's
``lease_time_seconds``, the preferred lifetime 5/8 of it (ISC dhcpd's default rule), T1/T2
the RFC 8415 §21.4 recommendations (half and 4/5 of the preferred). Options are the
subnet's DHCPv6 options (core/option6_shapes.py) without a vendor class; pools keep their
client class (matched by dhcp6.classify); a reservation with a MAC and no DUID cannot match
(the relays seen so far send no RFC 6939 option). A link's ``ddns_zone`` is the subnet's
when its DDNS adapter performs updates (as DHCPv4's ``performs_dns_updates``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from ipaddress import IPv6Address, IPv6Network
from typing import Any

import asyncpg

from ipamd.core import option6_shapes
from ipamd.dhcp.plan import DNS_UPDATE_ADAPTERS
from ipamd.dhcp.plan_loader import version
from ipamd.dhcp6.classify import ClientClass6
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.plan import Lifetimes, Link, PdPool, Plan6, Pool6, Reservation6

log = logging.getLogger("ipamd.dhcp6.plan")

_SUBNETS = """SELECT id, cidr, lease_time_seconds, ddns_adapter, ddns_zone FROM subnets
              WHERE family(cidr) = 6 AND dhcp_enabled ORDER BY id"""
_V6_SUBNET = "subnet_id IN (SELECT id FROM subnets WHERE family(cidr) = 6 AND dhcp_enabled)"
# A pool kept for a client class goes only to the clients of that class (dhcp6.classify).
_POOLS = f"""SELECT subnet_id, start_ip, end_ip, class_id FROM pools
             WHERE {_V6_SUBNET} ORDER BY id"""
_CLASSES = "SELECT id, match, value FROM client_classes ORDER BY id"
_EXCLUDES = f"SELECT subnet_id, start_ip, end_ip FROM excludes WHERE {_V6_SUBNET}"
_RESERVATIONS = f"""SELECT subnet_id, host(ip) AS ip, duid FROM reservations
                    WHERE duid IS NOT NULL AND {_V6_SUBNET} ORDER BY id"""
_OPTIONS = f"""SELECT subnet_id, code, payload FROM dhcp_options
               WHERE vendor_class IS NULL AND {_V6_SUBNET} ORDER BY id"""
_PD_POOLS = f"""SELECT id, subnet_id, prefix, delegated_length FROM pd_pools
                WHERE {_V6_SUBNET} ORDER BY id"""
_PD_EXCLUDES = f"""SELECT p.subnet_id, e.prefix FROM pd_excludes e
                   JOIN pd_pools p ON p.id = e.pd_pool_id WHERE p.{_V6_SUBNET}"""
_PD_RESERVATIONS = f"""SELECT p.subnet_id, r.prefix, r.duid FROM pd_reservations r
                       JOIN pd_pools p ON p.id = r.pd_pool_id WHERE p.{_V6_SUBNET}
                       ORDER BY r.id"""
_QUERIES = (("subnets", _SUBNETS), ("pools", _POOLS), ("excludes", _EXCLUDES),
            ("reservations", _RESERVATIONS), ("options", _OPTIONS), ("pd_pools", _PD_POOLS),
            ("pd_excludes", _PD_EXCLUDES), ("pd_reservations", _PD_RESERVATIONS),
            ("classes", _CLASSES))
EMPTY: dict[str, Any] = {name: [] for name, _ in _QUERIES} | {"version": -1}


@dataclass(frozen=True, slots=True)
class VersionedPlan6:
    """A ``Plan6`` and the ``dhcp_plan_version`` it was read at (PlanHolder polls it)."""

    plan: Plan6
    version: int


async def load_rows(conn: asyncpg.Connection) -> dict[str, Any]:
    """Every row the DHCPv6 plan is built from, in one repeatable-read snapshot."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        rows: dict[str, Any] = {"version": await version(conn)}
        for name, sql in _QUERIES:
            rows[name] = [dict(r) for r in await conn.fetch(sql)]
    return rows


def lifetimes_of(lease_time: int) -> Lifetimes:
    """A subnet's lease time as DHCPv6 lifetimes (valid = lease time, preferred 5/8)."""
    return Lifetimes(preferred=max(1, lease_time * 5 // 8), valid=lease_time)


def build(rows: dict[str, Any]) -> VersionedPlan6:
    """The plan from ``load_rows``' rows. A row that cannot be used (a DUID the API would
    not have stored) is logged and left out, never a failed reload."""
    by_subnet: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for row in rows["pools"]:
        kept = row["class_id"]
        by_subnet[str(row["subnet_id"])]["pools"].append(
            Pool6(IPv6Address(row["start_ip"]), IPv6Address(row["end_ip"]),
                  None if kept is None else str(kept)))
    for row in rows["excludes"]:
        by_subnet[str(row["subnet_id"])]["excludes"].append(
            Pool6(IPv6Address(row["start_ip"]), IPv6Address(row["end_ip"])))
    for row in rows["pd_pools"]:
        by_subnet[str(row["subnet_id"])]["pd_pools"].append(
            PdPool(IPv6Network(row["prefix"]), row["delegated_length"]))
    for row in rows["pd_excludes"]:
        by_subnet[str(row["subnet_id"])]["pd_excludes"].append(IPv6Network(row["prefix"]))
    for row in rows["options"]:
        try:
            data = option6_shapes.wire(row["code"], row["payload"])
        except (ValueError, KeyError, TypeError) as error:
            log.warning("dhcp6 plan: option %s of subnet %s skipped: %s", row["code"],
                        row["subnet_id"], error)
            continue
        by_subnet[str(row["subnet_id"])]["options"].append((row["code"], data))
    reservations = _reservations(rows)
    links = []
    for row in rows["subnets"]:
        subnet_id = str(row["id"])
        parts = by_subnet.get(subnet_id, {})
        links.append(Link(
            subnet_id=subnet_id,
            network=IPv6Network(row["cidr"]),
            lifetimes=lifetimes_of(row["lease_time_seconds"]),
            pools=tuple(parts.get("pools", ())),
            pd_pools=tuple(parts.get("pd_pools", ())),
            excludes=tuple(parts.get("excludes", ())),
            pd_excludes=tuple(parts.get("pd_excludes", ())),
            reservations=tuple(reservations.get(subnet_id, {}).values()),
            options=dict(parts.get("options", ())),
            ddns_zone=row["ddns_zone"] if row["ddns_adapter"] in DNS_UPDATE_ADAPTERS else None,
        ))
    classes = tuple(ClientClass6(str(row["id"]), row["match"], row["value"])
                    for row in rows["classes"])
    return VersionedPlan6(Plan6(tuple(links), classes), rows["version"])


def _reservations(rows: dict[str, Any]) -> dict[str, dict[Duid, Reservation6]]:
    """Per subnet, one Reservation6 per DUID: its address and its delegated prefix merged."""
    out: dict[str, dict[Duid, Reservation6]] = defaultdict(dict)
    for row in rows["reservations"]:
        duid = _duid(row["duid"])
        if duid is None:
            continue
        mine = out[str(row["subnet_id"])]
        held = mine.get(duid)
        mine[duid] = Reservation6(duid, IPv6Address(row["ip"]),
                                  None if held is None else held.prefix)
    for row in rows["pd_reservations"]:
        duid = _duid(row["duid"])
        if duid is None:
            continue
        mine = out[str(row["subnet_id"])]
        held = mine.get(duid)
        mine[duid] = Reservation6(duid, None if held is None else held.address,
                                  IPv6Network(row["prefix"]))
    return out


def _duid(text: str) -> Duid | None:
    try:
        return Duid.from_text(text)
    except ValueError as error:
        log.warning("dhcp6 plan: reservation DUID %r skipped: %s", text, error)
        return None
