"""Pools: the dynamic ranges the DHCP server hands out; inside the subnet, never overlapping."""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

import asyncpg

from ipamd.api.errors import conflict, invalid
from ipamd.ipam import audit, subnets, validate
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import one, set_clause, tenant_for_create

COLUMNS = (
    "p.id, p.subnet_id, s.tenant_id, p.name, p.start_ip, p.end_ip, p.class_id, p.created_at, "
    "p.updated_at"
)
FROM = "pools p JOIN subnets s ON s.id = p.subnet_id"
UPDATABLE = ("name", "start_ip", "end_ip", "class_id")


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "subnet_id": row["subnet_id"],
        "tenant_id": row["tenant_id"],
        "name": row["name"],
        "start_ip": str(row["start_ip"]),
        "end_ip": str(row["end_ip"]),
        "size": int(row["end_ip"]) - int(row["start_ip"]) + 1,
        "class_id": row["class_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def range_rules(net: ipaddress.IPv4Network, start: ipaddress.IPv4Address,
                end: ipaddress.IPv4Address) -> None:
    """A range of host addresses of the subnet, in order (422 naming the field)."""
    for field, address in (("start_ip", start), ("end_ip", end)):
        reason = validate.host_in(net, address)
        if reason:
            raise invalid(field, reason)
    if end < start:
        raise invalid("end_ip", f"{end} is before start_ip {start}")


async def _fetch(conn: asyncpg.Connection, pool_id: uuid.UUID) -> asyncpg.Record:
    return await one(conn, f"SELECT {COLUMNS} FROM {FROM} WHERE p.id = $1", pool_id, "pool")


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, p: dict[str, Any], own: uuid.UUID | None
) -> None:
    if not subnet["dhcp_enabled"]:
        raise conflict(
            f"the subnet {subnet['cidr']} has dhcp_enabled=false: a subnet without DHCP has "
            "no pools"
        )
    start, end = p["start_ip"], p["end_ip"]
    range_rules(subnet["cidr"], start, end)
    shown = f"{start}-{end}"
    other = await conn.fetchrow(
        """SELECT id, name, start_ip, end_ip FROM pools
           WHERE subnet_id = $1 AND range && inetrange($2, $3, '[]') AND id IS DISTINCT FROM $4
           LIMIT 1""",
        subnet["id"], start, end, own,
    )
    if other is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} overlaps the pool {other['name']!r} "
            f"({other['start_ip']}-{other['end_ip']}, id {other['id']})"
        )
    gateway = subnet["gateway"]
    if gateway is not None and start <= gateway <= end:
        raise conflict(f"start_ip/end_ip: {shown} contains the subnet's gateway {gateway}")
    static = await conn.fetchrow(
        """SELECT id, ip, hostname FROM assignments
           WHERE subnet_id = $1 AND ip BETWEEN $2 AND $3 ORDER BY ip LIMIT 1""",
        subnet["id"], start, end,
    )
    if static is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} contains the assignment {static['ip']} "
            f"({static['hostname']}, id {static['id']}); static hosts stay outside pools"
        )
    if p["class_id"] is not None:
        tenant = await conn.fetchval(
            "SELECT tenant_id FROM client_classes WHERE id = $1", p["class_id"]
        )
        if tenant is None:
            raise invalid("class_id", f"client class {p['class_id']} does not exist")
        if tenant != subnet["tenant_id"]:
            raise invalid("class_id", "the client class belongs to another tenant")


@guarded
async def create(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await subnets.lock(conn, subnet_id)
    await tenant_for_create(conn, fields.get("tenant_id"), subnet["tenant_id"])
    p = {name: fields.get(name) for name in UPDATABLE}
    await _check(conn, subnet, p, None)
    new_id = await conn.fetchval(
        """INSERT INTO pools (subnet_id, name, start_ip, end_ip, class_id)
           VALUES ($1, $2, $3, $4, $5) RETURNING id""",
        subnet_id, p["name"], p["start_ip"], p["end_ip"], p["class_id"],
    )
    out = public(await _fetch(conn, new_id))
    await audit.record(conn, actor, "create", "pool", new_id, None, out)
    return out


async def get(conn: asyncpg.Connection, pool_id: uuid.UUID) -> dict[str, Any]:
    return public(await _fetch(conn, pool_id))


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, class_id: uuid.UUID | None,
    after: uuid.UUID | None, limit: int,
) -> list[dict[str, Any]] | None:
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM subnets WHERE id = $1)", subnet_id):
        return None
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {FROM}
            WHERE p.subnet_id = $1 AND ($2::uuid IS NULL OR p.id > $2)
              AND ($3::uuid IS NULL OR p.class_id = $3)
            ORDER BY p.id LIMIT $4""",
        subnet_id, after, class_id, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, pool_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    subnet_id = await conn.fetchval("SELECT subnet_id FROM pools WHERE id = $1", pool_id)
    if subnet_id is None:
        await _fetch(conn, pool_id)  # raises the 404
    subnet = await subnets.lock(conn, subnet_id)
    current = await _fetch(conn, pool_id)
    before = public(current)
    if not changes:
        return before
    p = {name: current[name] for name in UPDATABLE} | changes
    await _check(conn, subnet, p, pool_id)
    clause, values = set_clause(changes, UPDATABLE)
    await conn.execute(f"UPDATE pools SET {clause} WHERE id = $1", pool_id, *values)
    after = public(await _fetch(conn, pool_id))
    await audit.record(conn, actor, "update", "pool", pool_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, pool_id: uuid.UUID) -> None:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM {FROM} WHERE p.id = $1 FOR UPDATE OF p", pool_id, "pool"
    ))
    await conn.execute("DELETE FROM pools WHERE id = $1", pool_id)
    await audit.record(conn, actor, "delete", "pool", pool_id, before, None)
