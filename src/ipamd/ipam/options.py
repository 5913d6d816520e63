"""DHCP options on a subnet: one per (code, vendor_class); payload shapes in option_shapes."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.api.errors import conflict, invalid
from ipamd.ipam import audit, option_shapes, subnets
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import one, set_clause, tenant_for_create

COLUMNS = (
    "o.id, o.subnet_id, s.tenant_id, o.code, o.payload, o.vendor_class, o.created_at, "
    "o.updated_at"
)
FROM = "dhcp_options o JOIN subnets s ON s.id = o.subnet_id"
UPDATABLE = ("code", "payload", "vendor_class")


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "subnet_id": row["subnet_id"],
        "tenant_id": row["tenant_id"],
        "code": row["code"],
        "payload": row["payload"],
        "vendor_class": row["vendor_class"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def normalise(o: dict[str, Any]) -> dict[str, Any]:
    """The option with its payload in canonical form; 422 naming code, payload or vendor_class."""
    code = o["code"]
    try:
        option_shapes.check_code(code)
    except ValueError as error:
        raise invalid("code", str(error)) from None
    if o["vendor_class"] is not None and code != option_shapes.VENDOR_SPECIFIC:
        raise invalid("vendor_class", "only used with code 43 (vendor-specific information)")
    try:
        payload = option_shapes.normalise(code, o["payload"])
    except ValueError as error:
        raise invalid("payload", f"{error} (option {code})") from None
    return {**o, "payload": payload}


async def _duplicate(conn: asyncpg.Connection, subnet_id: uuid.UUID, o: dict[str, Any],
                     own: uuid.UUID | None) -> None:
    other = await conn.fetchval(
        """SELECT id FROM dhcp_options
           WHERE subnet_id = $1 AND code = $2 AND coalesce(vendor_class, '') = coalesce($3, '')
             AND id IS DISTINCT FROM $4""",
        subnet_id, o["code"], o["vendor_class"], own,
    )
    if other is not None:
        which = f" for vendor_class {o['vendor_class']!r}" if o["vendor_class"] else ""
        raise conflict(f"code: the subnet already has option {o['code']}{which} (id {other})")


async def _fetch(conn: asyncpg.Connection, option_id: uuid.UUID) -> asyncpg.Record:
    return await one(conn, f"SELECT {COLUMNS} FROM {FROM} WHERE o.id = $1", option_id, "option")


@guarded
async def create(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await subnets.lock(conn, subnet_id)
    await tenant_for_create(conn, fields.get("tenant_id"), subnet["tenant_id"])
    o = normalise({name: fields.get(name) for name in UPDATABLE})
    await _duplicate(conn, subnet_id, o, None)
    new_id = await conn.fetchval(
        """INSERT INTO dhcp_options (subnet_id, code, payload, vendor_class)
           VALUES ($1, $2, $3, $4) RETURNING id""",
        subnet_id, o["code"], o["payload"], o["vendor_class"],
    )
    out = public(await _fetch(conn, new_id))
    await audit.record(conn, actor, "create", "option", new_id, None, out)
    return out


async def get(conn: asyncpg.Connection, option_id: uuid.UUID) -> dict[str, Any]:
    return public(await _fetch(conn, option_id))


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, code: int | None, after: uuid.UUID | None,
    limit: int,
) -> list[dict[str, Any]] | None:
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM subnets WHERE id = $1)", subnet_id):
        return None
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {FROM}
            WHERE o.subnet_id = $1 AND ($2::uuid IS NULL OR o.id > $2)
              AND ($3::integer IS NULL OR o.code = $3)
            ORDER BY o.id LIMIT $4""",
        subnet_id, after, code, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, option_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    subnet_id = await conn.fetchval("SELECT subnet_id FROM dhcp_options WHERE id = $1", option_id)
    if subnet_id is None:
        await _fetch(conn, option_id)  # raises the 404
    await subnets.lock(conn, subnet_id)
    current = await _fetch(conn, option_id)
    before = public(current)
    if not changes:
        return before
    o = normalise({name: current[name] for name in UPDATABLE} | changes)
    await _duplicate(conn, subnet_id, o, option_id)
    stored = {name: o[name] for name in changes}
    if "code" in changes:
        stored["payload"] = o["payload"]  # normalised for the new code
    clause, values = set_clause(stored, UPDATABLE)
    await conn.execute(f"UPDATE dhcp_options SET {clause} WHERE id = $1", option_id, *values)
    after = public(await _fetch(conn, option_id))
    await audit.record(conn, actor, "update", "option", option_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, option_id: uuid.UUID) -> None:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM {FROM} WHERE o.id = $1 FOR UPDATE OF o", option_id,
        "option",
    ))
    await conn.execute("DELETE FROM dhcp_options WHERE id = $1", option_id)
    await audit.record(conn, actor, "delete", "option", option_id, before, None)
