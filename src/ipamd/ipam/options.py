"""DHCP options on a subnet: one per (code, vendor_class); payload shapes in option_shapes."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import option6_shapes, option_shapes
from ipamd.core.errors import conflict, invalid
from ipamd.ipam import children
from ipamd.ipam.dberrors import guarded

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


KIND = children.Kind("option", "dhcp_options", "o", COLUMNS, FROM, UPDATABLE, public)


def normalise(o: dict[str, Any], version: int = 4) -> dict[str, Any]:
    """The option with its payload in canonical form; 422 naming code, payload or vendor_class.

    ``version`` is the subnet's family: an IPv6 subnet takes DHCPv6 codes (option6_shapes),
    whose numbers mean other things in DHCPv4 (23 is the IP TTL there, DNS servers here)."""
    code = o["code"]
    shapes: Any = option6_shapes if version == 6 else option_shapes
    try:
        shapes.check_code(code)
    except ValueError as error:
        raise invalid("code", str(error)) from None
    if o["vendor_class"] is not None and (version == 6
                                          or code != option_shapes.VENDOR_SPECIFIC):
        raise invalid("vendor_class", "only used with code 43 (vendor-specific information) "
                      "on an IPv4 subnet")
    try:
        payload = shapes.normalise(code, o["payload"])
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


@guarded
async def create(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await children.lock_for_create(conn, subnet_id, fields.get("tenant_id"))
    o = normalise({name: fields.get(name) for name in UPDATABLE}, subnet["cidr"].version)
    await _duplicate(conn, subnet_id, o, None)
    new_id = await conn.fetchval(
        """INSERT INTO dhcp_options (subnet_id, code, payload, vendor_class)
           VALUES ($1, $2, $3, $4) RETURNING id""",
        subnet_id, o["code"], o["payload"], o["vendor_class"],
    )
    return await children.created(conn, actor, KIND, new_id)


async def get(conn: asyncpg.Connection, option_id: uuid.UUID) -> dict[str, Any]:
    return await children.get(conn, KIND, option_id)


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, code: int | None, after: uuid.UUID | None,
    limit: int,
) -> list[dict[str, Any]] | None:
    if not await children.subnet_exists(conn, subnet_id):
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
    subnet, current = await children.lock_for_change(conn, KIND, option_id)
    before = public(current)
    if not changes:
        return before
    o = normalise({name: current[name] for name in UPDATABLE} | changes,
                  subnet["cidr"].version)
    await _duplicate(conn, subnet["id"], o, option_id)
    stored = {name: o[name] for name in changes}
    if "code" in changes:
        stored["payload"] = o["payload"]  # normalised for the new code
    return await children.write_change(conn, actor, KIND, option_id, before, stored)


@guarded
async def delete(conn: asyncpg.Connection, actor: str, option_id: uuid.UUID) -> None:
    await children.delete(conn, actor, KIND, option_id)
