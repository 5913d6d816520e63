"""Pools: the dynamic ranges the DHCP server hands out; inside the subnet, never overlapping."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core.errors import conflict, invalid
from ipamd.ipam import children, ranges
from ipamd.ipam.dberrors import guarded

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
        "size": ranges.count_out(ranges.span(row["start_ip"], row["end_ip"]),
                                 row["start_ip"].version),
        "class_id": row["class_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


KIND = children.Kind("pool", "pools", "p", COLUMNS, FROM, UPDATABLE, public)


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, p: dict[str, Any], own: uuid.UUID | None
) -> None:
    if not subnet["dhcp_enabled"]:
        raise conflict(
            f"the subnet {subnet['cidr']} has dhcp_enabled=false: a subnet without DHCP has "
            "no pools"
        )
    start, end = p["start_ip"], p["end_ip"]
    ranges.range_rules(subnet["cidr"], start, end)
    shown = f"{start}-{end}"
    other = await ranges.overlapping(conn, "pools", subnet["id"], start, end, own)
    if other is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} overlaps the pool {other['name']!r} "
            f"({other['start_ip']}-{other['end_ip']}, id {other['id']})"
        )
    gateway = subnet["gateway"]
    if gateway is not None and start <= gateway <= end:
        raise conflict(f"start_ip/end_ip: {shown} contains the subnet's gateway {gateway}")
    static = await ranges.lowest_inside(conn, "assignments", subnet["id"], start, end)
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
    subnet = await children.lock_for_create(conn, subnet_id, fields.get("tenant_id"))
    p = {name: fields.get(name) for name in UPDATABLE}
    await _check(conn, subnet, p, None)
    new_id = await conn.fetchval(
        """INSERT INTO pools (subnet_id, name, start_ip, end_ip, class_id)
           VALUES ($1, $2, $3, $4, $5) RETURNING id""",
        subnet_id, p["name"], p["start_ip"], p["end_ip"], p["class_id"],
    )
    return await children.created(conn, actor, KIND, new_id)


async def get(conn: asyncpg.Connection, pool_id: uuid.UUID) -> dict[str, Any]:
    return await children.get(conn, KIND, pool_id)


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, class_id: uuid.UUID | None,
    after: uuid.UUID | None, limit: int,
) -> list[dict[str, Any]] | None:
    if not await children.subnet_exists(conn, subnet_id):
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
    subnet, current = await children.lock_for_change(conn, KIND, pool_id)
    before = public(current)
    if not changes:
        return before
    await _check(conn, subnet, {name: current[name] for name in UPDATABLE} | changes, pool_id)
    return await children.write_change(conn, actor, KIND, pool_id, before, changes)


@guarded
async def delete(conn: asyncpg.Connection, actor: str, pool_id: uuid.UUID) -> None:
    await children.delete(conn, actor, KIND, pool_id)
