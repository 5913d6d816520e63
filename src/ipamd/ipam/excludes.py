"""Excludes: ranges the DHCP server never hands out and next-free skips (one address: start=end)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core.errors import conflict
from ipamd.ipam import children, ranges
from ipamd.ipam.dberrors import guarded

COLUMNS = "e.id, e.subnet_id, s.tenant_id, e.start_ip, e.end_ip, e.created_at, e.updated_at"
FROM = "excludes e JOIN subnets s ON s.id = e.subnet_id"
UPDATABLE = ("start_ip", "end_ip")


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "subnet_id": row["subnet_id"],
        "tenant_id": row["tenant_id"],
        "start_ip": str(row["start_ip"]),
        "end_ip": str(row["end_ip"]),
        "size": ranges.count_out(ranges.span(row["start_ip"], row["end_ip"]),
                                 row["start_ip"].version),
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


KIND = children.Kind("exclude", "excludes", "e", COLUMNS, FROM, UPDATABLE, public)


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, x: dict[str, Any], own: uuid.UUID | None
) -> None:
    start, end = x["start_ip"], x["end_ip"]
    ranges.range_rules(subnet["cidr"], start, end)
    shown = f"{start}-{end}"
    other = await ranges.overlapping(conn, "excludes", subnet["id"], start, end, own)
    if other is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} overlaps the exclude {other['start_ip']}-"
            f"{other['end_ip']} (id {other['id']})"
        )
    reserved = await ranges.lowest_inside(conn, "reservations", subnet["id"], start, end)
    if reserved is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} contains the reservation {reserved['ip']} "
            f"(id {reserved['id']}); a reserved address cannot be excluded"
        )


@guarded
async def create(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await children.lock_for_create(conn, subnet_id, fields.get("tenant_id"))
    x = {name: fields[name] for name in UPDATABLE}
    await _check(conn, subnet, x, None)
    new_id = await conn.fetchval(
        "INSERT INTO excludes (subnet_id, start_ip, end_ip) VALUES ($1, $2, $3) RETURNING id",
        subnet_id, x["start_ip"], x["end_ip"],
    )
    return await children.created(conn, actor, KIND, new_id)


async def get(conn: asyncpg.Connection, exclude_id: uuid.UUID) -> dict[str, Any]:
    return await children.get(conn, KIND, exclude_id)


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]] | None:
    if not await children.subnet_exists(conn, subnet_id):
        return None
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {FROM}
            WHERE e.subnet_id = $1 AND ($2::uuid IS NULL OR e.id > $2)
            ORDER BY e.id LIMIT $3""",
        subnet_id, after, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, exclude_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    subnet, current = await children.lock_for_change(conn, KIND, exclude_id)
    before = public(current)
    if not changes:
        return before
    x = {name: current[name] for name in UPDATABLE} | changes
    await _check(conn, subnet, x, exclude_id)
    return await children.write_change(conn, actor, KIND, exclude_id, before, changes)


@guarded
async def delete(conn: asyncpg.Connection, actor: str, exclude_id: uuid.UUID) -> None:
    await children.delete(conn, actor, KIND, exclude_id)
