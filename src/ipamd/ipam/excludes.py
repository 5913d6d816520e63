"""Excludes: ranges the DHCP server never hands out and next-free skips (one address: start=end)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.api.errors import conflict
from ipamd.ipam import audit, subnets
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.pools import range_rules
from ipamd.ipam.rows import one, set_clause, tenant_for_create

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
        "size": int(row["end_ip"]) - int(row["start_ip"]) + 1,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


async def _fetch(conn: asyncpg.Connection, exclude_id: uuid.UUID) -> asyncpg.Record:
    return await one(conn, f"SELECT {COLUMNS} FROM {FROM} WHERE e.id = $1", exclude_id,
                     "exclude")


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, x: dict[str, Any], own: uuid.UUID | None
) -> None:
    start, end = x["start_ip"], x["end_ip"]
    range_rules(subnet["cidr"], start, end)
    shown = f"{start}-{end}"
    other = await conn.fetchrow(
        """SELECT id, start_ip, end_ip FROM excludes
           WHERE subnet_id = $1 AND range && inetrange($2, $3, '[]') AND id IS DISTINCT FROM $4
           LIMIT 1""",
        subnet["id"], start, end, own,
    )
    if other is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} overlaps the exclude {other['start_ip']}-"
            f"{other['end_ip']} (id {other['id']})"
        )
    reserved = await conn.fetchrow(
        """SELECT id, ip FROM reservations
           WHERE subnet_id = $1 AND ip BETWEEN $2 AND $3 ORDER BY ip LIMIT 1""",
        subnet["id"], start, end,
    )
    if reserved is not None:
        raise conflict(
            f"start_ip/end_ip: {shown} contains the reservation {reserved['ip']} "
            f"(id {reserved['id']}); a reserved address cannot be excluded"
        )


@guarded
async def create(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await subnets.lock(conn, subnet_id)
    await tenant_for_create(conn, fields.get("tenant_id"), subnet["tenant_id"])
    x = {name: fields[name] for name in UPDATABLE}
    await _check(conn, subnet, x, None)
    new_id = await conn.fetchval(
        "INSERT INTO excludes (subnet_id, start_ip, end_ip) VALUES ($1, $2, $3) RETURNING id",
        subnet_id, x["start_ip"], x["end_ip"],
    )
    out = public(await _fetch(conn, new_id))
    await audit.record(conn, actor, "create", "exclude", new_id, None, out)
    return out


async def get(conn: asyncpg.Connection, exclude_id: uuid.UUID) -> dict[str, Any]:
    return public(await _fetch(conn, exclude_id))


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]] | None:
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM subnets WHERE id = $1)", subnet_id):
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
    subnet_id = await conn.fetchval("SELECT subnet_id FROM excludes WHERE id = $1", exclude_id)
    if subnet_id is None:
        await _fetch(conn, exclude_id)  # raises the 404
    subnet = await subnets.lock(conn, subnet_id)
    current = await _fetch(conn, exclude_id)
    before = public(current)
    if not changes:
        return before
    x = {name: current[name] for name in UPDATABLE} | changes
    await _check(conn, subnet, x, exclude_id)
    clause, values = set_clause(changes, UPDATABLE)
    await conn.execute(f"UPDATE excludes SET {clause} WHERE id = $1", exclude_id, *values)
    after = public(await _fetch(conn, exclude_id))
    await audit.record(conn, actor, "update", "exclude", exclude_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, exclude_id: uuid.UUID) -> None:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM {FROM} WHERE e.id = $1 FOR UPDATE OF e", exclude_id,
        "exclude",
    ))
    await conn.execute("DELETE FROM excludes WHERE id = $1", exclude_id)
    await audit.record(conn, actor, "delete", "exclude", exclude_id, before, None)
