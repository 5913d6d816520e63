"""Subnets: the L3 networks the DHCP server serves; inside a prefix, apart within a tenant."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit, validate
from ipamd.core.errors import conflict, invalid
from ipamd.core.rows import fetch_one
from ipamd.dhcp import leasestore
from ipamd.ipam import shared_networks, utilisation
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.occupancy import LIVE_SQL
from ipamd.ipam.rows import inside_message, one, set_clause, tenant_for_create

COLUMNS = (
    "id, tenant_id, prefix_id, cidr, name, description, gateway, lease_time_seconds, "
    "min_lease_time_seconds, max_lease_time_seconds, dhcp_enabled, next_server, boot_file, "
    "ntp_servers, ddns_adapter, ddns_zone, "
    "ping_check, ping_timeout_ms, "
    "ddns_reverse_zone, ddns_ttl, ddns_server_id, shared_network_id, created_at, updated_at"
)
UPDATABLE = (
    "prefix_id", "cidr", "name", "description", "gateway", "lease_time_seconds",
    "min_lease_time_seconds", "max_lease_time_seconds", "dhcp_enabled", "next_server",
    "boot_file", "ntp_servers", "ddns_adapter", "ddns_zone",
    "ping_check", "ping_timeout_ms",
    "ddns_reverse_zone", "ddns_ttl", "ddns_server_id", "shared_network_id",
)
DEFAULTS: dict[str, Any] = {
    "name": "", "description": "", "gateway": None, "lease_time_seconds": 86_400,
    "min_lease_time_seconds": None, "max_lease_time_seconds": None, "dhcp_enabled": True,
    "next_server": None, "boot_file": None, "ntp_servers": [],
    "ddns_adapter": "none", "ddns_zone": None, "ddns_reverse_zone": None, "ddns_ttl": None,
    "ping_check": False, "ping_timeout_ms": 500,
    "ddns_server_id": None, "shared_network_id": None,
}


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    gateway = row["gateway"]
    return {
        "id": row["id"],
        "tenant_id": row["tenant_id"],
        "prefix_id": row["prefix_id"],
        "cidr": str(row["cidr"]),
        "name": row["name"],
        "description": row["description"],
        "gateway": None if gateway is None else str(gateway),
        "lease_time_seconds": row["lease_time_seconds"],
        "min_lease_time_seconds": row["min_lease_time_seconds"],
        "max_lease_time_seconds": row["max_lease_time_seconds"],
        "ping_check": row["ping_check"],
        "ping_timeout_ms": row["ping_timeout_ms"],
        "dhcp_enabled": row["dhcp_enabled"],
        "next_server": row["next_server"],
        "boot_file": row["boot_file"],
        "ntp_servers": [str(a) for a in row["ntp_servers"]],
        "ddns_adapter": row["ddns_adapter"],
        "ddns_zone": row["ddns_zone"],
        "ddns_reverse_zone": row["ddns_reverse_zone"],
        "ddns_ttl": row["ddns_ttl"],
        "ddns_server_id": row["ddns_server_id"],
        "shared_network_id": row["shared_network_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


@dataclass(frozen=True)
class Filters:
    tenant_id: uuid.UUID | None = None
    prefix_id: uuid.UUID | None = None
    cidr: validate.Network | None = None
    contains: validate.Network | None = None
    within: validate.Network | None = None
    dhcp_enabled: bool | None = None


def _columns(values: dict[str, Any]) -> dict[str, Any]:
    """Values as the columns store them: next_server is text (an address today)."""
    out = dict(values)
    if out.get("next_server") is not None:
        out["next_server"] = str(out["next_server"])
    return out


_V6_HINTS = ("the DHCPv6 server gives lease_time_seconds as the valid lifetime and does not "
             "take a client's lifetime hints (RFC 8415 §18.2); the bounds are DHCPv4's "
             "(option 51)")

# What an IPv6 subnet refuses, and why (docs/api-ipam.md, "IPv6").
V6_REFUSED = {
    "gateway": "an IPv6 subnet has no gateway: hosts learn their routers from Router "
               "Advertisements (RFC 4861), not from DHCPv6",
    "next_server": "next_server is the DHCPv4 PXE server (siaddr); an IPv6 subnet gives its "
                   "boot file URL as option 59 (RFC 5970) on /subnets/{id}/options",
    "boot_file": "boot_file is the DHCPv4 PXE file field; an IPv6 subnet gives its boot file "
                 "URL as option 59 (RFC 5970) on /subnets/{id}/options",
    "min_lease_time_seconds": _V6_HINTS,
    "max_lease_time_seconds": _V6_HINTS,
}


def _family_rules(s: dict[str, Any]) -> None:
    net: validate.Network = s["cidr"]
    if net.version == 6 and s["ping_check"]:
        raise invalid("ping_check", "the ping check is DHCPv4's (ICMP echo before an Offer); "
                      "a DHCPv6 client declines an address its duplicate address detection "
                      "finds in use (RFC 8415 §18.2.8)")
    if net.version == 6:
        for field, reason in V6_REFUSED.items():
            if s[field] is not None:
                raise invalid(field, reason)
    elif s["gateway"] is not None:
        outside = validate.host_in(net, s["gateway"])
        if outside:
            raise invalid("gateway", outside)
    for index, server in enumerate(s["ntp_servers"] or ()):
        if server.version != net.version:
            raise invalid(f"ntp_servers[{index}]", f"{server} is an IPv{server.version} "
                          f"address; the subnet {net} is IPv{net.version}")


def _lease_bounds(s: dict[str, Any]) -> None:
    """The bounds on a client's requested lease time hold the subnet's own lease time
    (docs/api-ipam.md, "Lease time"): min <= lease_time_seconds <= max."""
    lease = s["lease_time_seconds"]
    low, high = s["min_lease_time_seconds"], s["max_lease_time_seconds"]
    if low is not None and low > lease:
        raise invalid("min_lease_time_seconds", f"{low} is above lease_time_seconds {lease}: "
                      "the minimum may not exceed the subnet's lease time")
    if high is not None and high < lease:
        raise invalid("max_lease_time_seconds", f"{high} is below lease_time_seconds {lease}: "
                      "the maximum may not be under the subnet's lease time")


def field_rules(s: dict[str, Any]) -> None:
    """Rules about one subnet's own fields (422, naming the field)."""
    _family_rules(s)
    _lease_bounds(s)
    if s["ddns_adapter"] != "none" and not s["ddns_zone"]:
        raise invalid("ddns_zone", f"required when ddns_adapter is {s['ddns_adapter']}")
    if s["ddns_adapter"] not in ("none", "embedded") and s["ddns_server_id"] is None:
        raise invalid(
            "ddns_server_id", f"required when ddns_adapter is {s['ddns_adapter']} "
            "(the DNS server to update)"
        )


def _reverse_family(zone: str, version: int) -> None:
    """An IPv4 subnet's PTR records live under in-addr.arpa, an IPv6 one's under ip6.arpa
    (RFC 3596 §2.5); 422 naming ddns_reverse_zone otherwise."""
    wanted = "ip6.arpa" if version == 6 else "in-addr.arpa"
    if not zone.endswith(wanted):
        raise invalid("ddns_reverse_zone", f"{zone} is not an {wanted} zone: an IPv{version} "
                      f"subnet's reverse records are in {wanted}")


async def _check_dns(conn: asyncpg.Connection, s: dict[str, Any]) -> None:
    """The DDNS references name real objects that fit together (422, naming the field).

    ddns_server_id is a DNS server of the subnet's adapter; ddns_zone / ddns_reverse_zone are
    zones (forward / reverse) held by that server.
    """
    server_id = s["ddns_server_id"]
    adapter = None
    if server_id is not None:
        adapter = await conn.fetchval(
            "SELECT adapter FROM dns_servers WHERE id = $1 FOR SHARE", server_id
        )
        if adapter is None:
            raise invalid("ddns_server_id", f"no DNS server with this id ({server_id})")
        if s["ddns_adapter"] != "none" and adapter != s["ddns_adapter"]:
            raise invalid("ddns_server_id", f"the DNS server's adapter is {adapter}, the "
                          f"subnet's ddns_adapter {s['ddns_adapter']}")
    for field, reverse in (("ddns_zone", False), ("ddns_reverse_zone", True)):
        name = s[field]
        if name is None:
            continue
        zone = await conn.fetchrow(
            "SELECT server_id FROM dns_zones WHERE name = $1 FOR SHARE", name
        )
        if zone is None:
            raise invalid(field, f"no DNS zone named {name!r} (create it at /dns-zones)")
        if name.endswith(".arpa") != reverse:
            raise invalid(field, f"{name} is not a {'reverse' if reverse else 'forward'} zone")
        if reverse:
            _reverse_family(name, s["cidr"].version)
        if server_id is not None and zone["server_id"] != server_id:
            raise invalid(field, f"the zone {name} is held by another DNS server than "
                          "ddns_server_id")


DNS_FIELDS = ("ddns_adapter", "ddns_server_id", "ddns_zone", "ddns_reverse_zone")


async def _check_plan(
    conn: asyncpg.Connection, s: dict[str, Any], own: uuid.UUID | None
) -> None:
    """Rules against the rest of the plan: the prefix holds it, no tenant overlap."""
    prefix = await conn.fetchrow(
        "SELECT tenant_id, cidr FROM prefixes WHERE id = $1 FOR SHARE", s["prefix_id"]
    )
    if prefix is None:
        raise invalid("prefix_id", f"prefix {s['prefix_id']} does not exist")
    if prefix["tenant_id"] != s["tenant_id"]:
        raise invalid(
            "prefix_id", f"the prefix belongs to tenant {prefix['tenant_id']}, "
            f"the subnet to tenant {s['tenant_id']}"
        )
    parent = prefix["cidr"]
    net = s["cidr"]
    if parent.version != net.version:
        raise invalid("cidr", f"{net} is an IPv{net.version} network; its prefix {parent} is "
                      f"IPv{parent.version}")
    if not net.subnet_of(parent):
        raise invalid("cidr", f"{net} is not inside its prefix {parent}")
    other = await conn.fetchrow(
        """SELECT id, cidr FROM subnets
           WHERE tenant_id = $1 AND cidr && $2 AND id IS DISTINCT FROM $3 LIMIT 1""",
        s["tenant_id"], net, own,
    )
    if other is not None:
        raise conflict(
            f"cidr: {net} overlaps the subnet {other['cidr']} (id {other['id']}) of the "
            "same tenant"
        )


@guarded
async def create(conn: asyncpg.Connection, actor: str, fields: dict[str, Any]) -> dict[str, Any]:
    s = {**DEFAULTS, **fields}
    prefix_tenant = await conn.fetchval(
        "SELECT tenant_id FROM prefixes WHERE id = $1", s["prefix_id"]
    )
    if prefix_tenant is None:
        raise invalid("prefix_id", f"prefix {s['prefix_id']} does not exist")
    s["tenant_id"] = await tenant_for_create(conn, fields.get("tenant_id"), prefix_tenant)
    field_rules(s)
    await _check_dns(conn, s)
    await _check_plan(conn, s, None)
    if s["shared_network_id"] is not None:
        await shared_networks.check_member(conn, s)
    names = ["tenant_id", *UPDATABLE]
    markers = ", ".join(f"${i}" for i in range(1, len(names) + 1))
    stored = _columns(s)
    row = await fetch_one(
        conn,
        f"INSERT INTO subnets ({', '.join(names)}) VALUES ({markers}) RETURNING {COLUMNS}",
        *(stored[name] for name in names),
    )
    out = public(row)
    await audit.record(conn, actor, "create", "subnet", row["id"], None, out)
    return out


async def get(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> dict[str, Any]:
    return public(await one(conn, f"SELECT {COLUMNS} FROM subnets WHERE id = $1", subnet_id,
                            "subnet"))


async def lock(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> asyncpg.Record:
    """Lock the subnet for a change to it or its children: such changes serialise per subnet.

    FOR NO KEY UPDATE does not block the DHCP server's lease writes (they take KEY SHARE).
    """
    return await one(
        conn, f"SELECT {COLUMNS} FROM subnets WHERE id = $1 FOR NO KEY UPDATE", subnet_id,
        "subnet",
    )


async def list_page(
    conn: asyncpg.Connection, f: Filters, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM subnets
            WHERE ($1::uuid IS NULL OR id > $1)
              AND ($2::uuid IS NULL OR tenant_id = $2)
              AND ($3::uuid IS NULL OR prefix_id = $3)
              AND ($4::cidr IS NULL OR cidr = $4)
              AND ($5::cidr IS NULL OR cidr >>= $5)
              AND ($6::cidr IS NULL OR cidr <<= $6)
              AND ($7::boolean IS NULL OR dhcp_enabled = $7)
            ORDER BY id LIMIT $8""",
        after, f.tenant_id, f.prefix_id, f.cidr, f.contains, f.within, f.dhcp_enabled,
        limit + 1,
    )
    return [public(r) for r in rows]


async def list_page_utilised(
    conn: asyncpg.Connection, f: Filters, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    """``list_page``, each subnet with its ``utilisation`` (GET /subnets/{id}/utilisation's
    object), read for the whole page at once: a list shows it in one request, not one a row."""
    rows = await list_page(conn, f, after, limit)
    figures = await utilisation.subnets_page(conn, [r["id"] for r in rows])
    return [{**r, "utilisation": figures[r["id"]]} for r in rows if r["id"] in figures]


async def _children_fit(conn: asyncpg.Connection, subnet_id: uuid.UUID,
                        net: validate.Network) -> None:
    first, last = validate.host_range(net)
    low, high = validate.address_in_family(net, first), validate.address_in_family(net, last)
    rows = await conn.fetch(
        f"""(SELECT 'pool' AS kind, start_ip AS a, end_ip AS b FROM pools
             WHERE subnet_id = $1 AND (start_ip < $2 OR end_ip > $3) LIMIT 1)
           UNION ALL
           (SELECT 'exclude', start_ip, end_ip FROM excludes
             WHERE subnet_id = $1 AND (start_ip < $2 OR end_ip > $3) LIMIT 1)
           UNION ALL
           (SELECT 'reservation', ip, ip FROM reservations
             WHERE subnet_id = $1 AND (ip < $2 OR ip > $3) LIMIT 1)
           UNION ALL
           (SELECT 'assignment', ip, ip FROM assignments
             WHERE subnet_id = $1 AND (ip < $2 OR ip > $3) LIMIT 1)
           UNION ALL
           (SELECT 'live lease', ip, ip FROM leases
             WHERE subnet_id = $1 AND {LIVE_SQL} AND (ip < $2 OR ip > $3) LIMIT 1)""",
        subnet_id, low, high,
    )
    if rows:
        r = rows[0]
        where = str(r["a"]) if r["a"] == r["b"] else f"{r['a']}-{r['b']}"
        raise conflict(f"cidr: the {r['kind']} {where} would not be inside {net}")


async def _gateway_free(conn: asyncpg.Connection, subnet_id: uuid.UUID,
                        gateway: validate.IPAddress) -> None:
    taken = await conn.fetchrow(
        f"""(SELECT 'pool ' || name AS what FROM pools WHERE subnet_id = $1 AND range @> $2::inet)
           UNION ALL
           (SELECT 'reservation ' || id FROM reservations WHERE subnet_id = $1 AND ip = $2)
           UNION ALL
           (SELECT 'assignment ' || id FROM assignments WHERE subnet_id = $1 AND ip = $2)
           UNION ALL
           (SELECT 'live lease ' || lease_id FROM leases
             WHERE subnet_id = $1 AND ip = $2 AND {LIVE_SQL})
           LIMIT 1""",
        subnet_id, gateway,
    )
    if taken is not None:
        raise conflict(f"gateway: {gateway} is taken by the {taken['what']}")


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    current = await lock(conn, subnet_id)
    before = public(current)
    if not changes:
        return before
    s = {**dict(current), **changes}
    if s["cidr"].version != current["cidr"].version:
        raise invalid("cidr", f"a subnet keeps its address family ({current['cidr']} is "
                      f"IPv{current['cidr'].version}); create an IPv{s['cidr'].version} subnet "
                      "beside it instead")
    field_rules(s)
    if any(name in changes for name in DNS_FIELDS):
        await _check_dns(conn, s)
    if "prefix_id" in changes or "cidr" in changes:
        await _check_plan(conn, s, subnet_id)
    if changes.get("shared_network_id") is not None:
        await shared_networks.check_member(conn, s)
    if s["cidr"] != current["cidr"]:
        await _children_fit(conn, subnet_id, s["cidr"])
    if s["gateway"] is not None and s["gateway"] != current["gateway"]:
        await _gateway_free(conn, subnet_id, s["gateway"])
    if not s["dhcp_enabled"] and current["dhcp_enabled"]:
        pools = await conn.fetchval("SELECT count(*) FROM pools WHERE subnet_id = $1", subnet_id)
        if pools:
            raise conflict(
                f"dhcp_enabled: the subnet still has {inside_message({'pool': pools})}; "
                "delete them before disabling DHCP"
            )
    clause, values = set_clause(_columns(changes), UPDATABLE)
    row = await fetch_one(
        conn,
        f"UPDATE subnets SET {clause} WHERE id = $1 RETURNING {COLUMNS}", subnet_id, *values
    )
    after = public(row)
    await audit.record(conn, actor, "update", "subnet", subnet_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID) -> None:
    # FOR UPDATE before counting: a DHCP grant holds its subnet FOR KEY SHARE until it commits
    # (leases have no foreign key, migration 0013), so the count below sees it, or the grant,
    # coming after this delete, finds no subnet and is refused.
    current = await one(
        conn, f"SELECT {COLUMNS} FROM subnets WHERE id = $1 FOR UPDATE", subnet_id, "subnet"
    )
    counts = await fetch_one(
        conn,
        f"""SELECT (SELECT count(*) FROM pools WHERE subnet_id = $1) AS pool,
                  (SELECT count(*) FROM excludes WHERE subnet_id = $1) AS exclude,
                  (SELECT count(*) FROM reservations WHERE subnet_id = $1) AS reservation,
                  (SELECT count(*) FROM assignments WHERE subnet_id = $1) AS assignment,
                  (SELECT count(*) FROM dhcp_options WHERE subnet_id = $1) AS option,
                  (SELECT count(*) FROM pd_pools WHERE subnet_id = $1) AS "delegation pool",
                  (SELECT count(*) FROM leases WHERE subnet_id = $1
                      AND {LIVE_SQL}) AS "live lease"
        """,
        subnet_id,
    )
    if any(counts.values()):
        raise conflict(
            f"subnet {current['cidr']} still has {inside_message(dict(counts))}; "
            "delete them first"
        )
    await leasestore.drop_ended(conn, subnet_id)
    await conn.execute("DELETE FROM subnets WHERE id = $1", subnet_id)
    await audit.record(conn, actor, "delete", "subnet", subnet_id, public(current), None)
