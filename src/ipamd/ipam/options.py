"""DHCP options on a subnet, a client class or a reservation (docs/api-ipam.md, "Option
scopes"): one per owner, code and vendor_class; payload shapes in option_shapes."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import audit, option6_shapes, option_shapes
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.core.tenancy import tenant_for_create
from ipamd.ipam import children, subnets
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import one

COLUMNS = (
    "o.id, o.subnet_id, o.class_id, o.reservation_id, coalesce(s.tenant_id, c.tenant_id) "
    "AS tenant_id, o.code, o.payload, o.vendor_class, o.created_at, o.updated_at"
)
FROM = (
    "dhcp_options o LEFT JOIN reservations r ON r.id = o.reservation_id "
    "LEFT JOIN client_classes c ON c.id = o.class_id "
    "LEFT JOIN subnets s ON s.id = coalesce(o.subnet_id, r.subnet_id)"
)
UPDATABLE = ("code", "payload", "vendor_class")
# An option's owner: its column, and the owner's name in messages (all from code).
OWNERS = {"subnet_id": "subnet", "class_id": "client class", "reservation_id": "reservation"}


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "subnet_id": row["subnet_id"],
        "class_id": row["class_id"],
        "reservation_id": row["reservation_id"],
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


async def _duplicate(conn: asyncpg.Connection, column: str, owner_id: uuid.UUID,
                     o: dict[str, Any], own: uuid.UUID | None) -> None:
    other = await conn.fetchval(
        f"""SELECT id FROM dhcp_options
            WHERE {column} = $1 AND code = $2
              AND coalesce(vendor_class, '') = coalesce($3, '') AND id IS DISTINCT FROM $4""",
        owner_id, o["code"], o["vendor_class"], own,
    )
    if other is not None:
        which = f" for vendor_class {o['vendor_class']!r}" if o["vendor_class"] else ""
        raise conflict(f"code: the {OWNERS[column]} already has option {o['code']}{which} "
                       f"(id {other})")


@guarded
async def create(
    conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await children.lock_for_create(conn, subnet_id, fields.get("tenant_id"))
    return await _insert(conn, actor, "subnet_id", subnet_id, fields, subnet["cidr"].version)


@guarded
async def create_for_class(
    conn: asyncpg.Connection, actor: str, class_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    """An option of a client class: DHCPv4 (classes steer the DHCPv4 server's clients)."""
    owner = await one(conn, "SELECT tenant_id FROM client_classes WHERE id = $1 FOR UPDATE",
                      class_id, "client class")
    await tenant_for_create(conn, fields.get("tenant_id"), owner["tenant_id"])
    return await _insert(conn, actor, "class_id", class_id, fields, 4)


@guarded
async def create_for_reservation(
    conn: asyncpg.Connection, actor: str, reservation_id: uuid.UUID, fields: dict[str, Any]
) -> dict[str, Any]:
    subnet = await _reservation_subnet(conn, reservation_id)
    await tenant_for_create(conn, fields.get("tenant_id"), subnet["tenant_id"])
    return await _insert(conn, actor, "reservation_id", reservation_id, fields, 4)


async def _reservation_subnet(conn: asyncpg.Connection,
                              reservation_id: uuid.UUID) -> asyncpg.Record:
    """The reservation's subnet, locked as its children's changes lock it; IPv4 only."""
    subnet_id = await conn.fetchval("SELECT subnet_id FROM reservations WHERE id = $1",
                                    reservation_id)
    if subnet_id is None:
        raise not_found("reservation", str(reservation_id))
    subnet = await subnets.lock(conn, subnet_id)
    if subnet["cidr"].version != 4:
        raise invalid("reservation_id", "options on a reservation are DHCPv4 options; this "
                      "reservation is on an IPv6 subnet, whose options are set on the subnet")
    return subnet


async def _insert(conn: asyncpg.Connection, actor: str, column: str, owner_id: uuid.UUID,
                  fields: dict[str, Any], version: int) -> dict[str, Any]:
    o = normalise({name: fields.get(name) for name in UPDATABLE}, version)
    await _duplicate(conn, column, owner_id, o, None)
    new_id = await conn.fetchval(
        f"""INSERT INTO dhcp_options ({column}, code, payload, vendor_class)
            VALUES ($1, $2, $3, $4) RETURNING id""",
        owner_id, o["code"], o["payload"], o["vendor_class"],
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
    return await _page(conn, "subnet_id", subnet_id, code, after, limit)


async def list_page_of(
    conn: asyncpg.Connection, column: str, owner_id: uuid.UUID, code: int | None,
    after: uuid.UUID | None, limit: int,
) -> list[dict[str, Any]]:
    """A client class's (``class_id``) or reservation's (``reservation_id``) options; 404
    when it does not exist."""
    table = "client_classes" if column == "class_id" else "reservations"
    await one(conn, f"SELECT id FROM {table} WHERE id = $1", owner_id, OWNERS[column])
    return await _page(conn, column, owner_id, code, after, limit)


async def _page(conn: asyncpg.Connection, column: str, owner_id: uuid.UUID, code: int | None,
                after: uuid.UUID | None, limit: int) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {FROM}
            WHERE o.{column} = $1 AND ($2::uuid IS NULL OR o.id > $2)
              AND ($3::integer IS NULL OR o.code = $3)
            ORDER BY o.id LIMIT $4""",
        owner_id, after, code, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, option_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    column, version, current = await _lock_for_change(conn, option_id)
    before = public(current)
    if not changes:
        return before
    o = normalise({name: current[name] for name in UPDATABLE} | changes, version)
    await _duplicate(conn, column, current[column], o, option_id)
    stored = {name: o[name] for name in changes}
    if "code" in changes:
        stored["payload"] = o["payload"]  # normalised for the new code
    return await children.write_change(conn, actor, KIND, option_id, before, stored)


async def _lock_for_change(conn: asyncpg.Connection,
                           option_id: uuid.UUID) -> tuple[str, int, asyncpg.Record]:
    """(owner column, option family, current row), the owner locked as a create locks it."""
    owner = await conn.fetchrow(
        "SELECT subnet_id, class_id, reservation_id FROM dhcp_options WHERE id = $1", option_id)
    if owner is None:
        await children.fetch(conn, KIND, option_id)  # raises the 404
    assert owner is not None
    if owner["subnet_id"] is not None:
        subnet, current = await children.lock_for_change(conn, KIND, option_id)
        return "subnet_id", subnet["cidr"].version, current
    if owner["reservation_id"] is not None:
        await _reservation_subnet(conn, owner["reservation_id"])
        return "reservation_id", 4, await children.fetch(conn, KIND, option_id)
    await conn.execute("SELECT 1 FROM client_classes WHERE id = $1 FOR UPDATE", owner["class_id"])
    return "class_id", 4, await children.fetch(conn, KIND, option_id)


async def delete_owned(conn: asyncpg.Connection, actor: str, column: str,
                       owner_id: uuid.UUID) -> None:
    """Delete a client class's or reservation's options before it goes, each audited (the
    foreign key's cascade would take them silently)."""
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM {FROM} WHERE o.{column} = $1 ORDER BY o.id FOR UPDATE OF o",
        owner_id)
    for row in rows:
        await conn.execute("DELETE FROM dhcp_options WHERE id = $1", row["id"])
        await audit.record(conn, actor, "delete", KIND.noun, row["id"], public(row), None)


@guarded
async def delete(conn: asyncpg.Connection, actor: str, option_id: uuid.UUID) -> None:
    await children.delete(conn, actor, KIND, option_id)
