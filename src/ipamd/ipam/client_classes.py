"""Client classes: match a client by vendor class, user class, MAC prefix, architecture
(option 93) or relay circuit/remote id (option 82); pools refer to them, and they may carry
options and next_server/boot_file (docs/api-ipam.md, "Option scopes")."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import audit, identifiers
from ipamd.core.errors import conflict, invalid
from ipamd.core.rows import fetch_one
from ipamd.ipam import options
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import name_free, one, plural, set_clause, tenant_for_create

COLUMNS = ("id, tenant_id, name, match, value, description, priority, next_server, boot_file, "
           "created_at, updated_at")
UPDATABLE = ("name", "match", "value", "description", "priority", "next_server", "boot_file")
MATCH_KINDS = ("vendor_class", "user_class", "mac_prefix", "arch", "circuit_id", "remote_id")
DEFAULT_PRIORITY = 100


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {name: row[name] for name in
            ("id", "tenant_id", "name", "match", "value", "description", "priority",
             "next_server", "boot_file", "created_at", "updated_at")}


def match_value(match: str, value: str) -> str:
    """The canonical value for the match kind; 422 naming value."""
    if match == "mac_prefix":
        try:
            return identifiers.mac_prefix(value)
        except ValueError as error:
            raise invalid("value", str(error)) from None
    if match == "arch":
        return _arch(value)
    if match in ("circuit_id", "remote_id"):
        try:  # compared with the relay's sub-option octets (RFC 3046 §2.0), as history shows them
            return identifiers.colon_hex(identifiers.hex_bytes(value))
        except ValueError as error:
            raise invalid("value", f"a {match} is hex octets: {error}") from None
    if not value or len(value.encode()) > 255:
        raise invalid("value", f"a {match} is 1 to 255 octets")
    return value


def _arch(value: str) -> str:
    """An option 93 architecture type (RFC 4578 §2.1, IANA "Processor Architecture Types":
    0 x86 BIOS, 7 x64 UEFI, ...) as its decimal number."""
    text = value.strip()
    if not text.isdigit() or not 0 <= int(text) <= 0xFFFF:
        raise invalid("value", "an arch is a client architecture type, 0 to 65535 "
                      "(0 x86 BIOS, 6 x86 UEFI, 7 x64 UEFI, 10 ARM32 UEFI, 11 ARM64 UEFI)")
    return str(int(text))


def _stored(fields: dict[str, Any]) -> dict[str, Any]:
    """next_server as the column stores it (text: an address)."""
    out = dict(fields)
    if out.get("next_server") is not None:
        out["next_server"] = str(out["next_server"])
    return out


@guarded
async def create(conn: asyncpg.Connection, actor: str, fields: dict[str, Any]) -> dict[str, Any]:
    tenant_id = await tenant_for_create(conn, fields.get("tenant_id"))
    value = match_value(fields["match"], fields["value"])
    await name_free(conn, "client_classes", tenant_id, fields["name"], None)
    pxe = _stored(fields)
    row = await fetch_one(
        conn,
        f"""INSERT INTO client_classes (tenant_id, name, match, value, description, priority,
                                        next_server, boot_file)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}""",
        tenant_id, fields["name"], fields["match"], value, fields.get("description") or "",
        fields.get("priority", DEFAULT_PRIORITY), pxe.get("next_server"), pxe.get("boot_file"),
    )
    out = public(row)
    await audit.record(conn, actor, "create", "client_class", row["id"], None, out)
    return out


async def get(conn: asyncpg.Connection, class_id: uuid.UUID) -> dict[str, Any]:
    return public(await one(conn, f"SELECT {COLUMNS} FROM client_classes WHERE id = $1",
                            class_id, "client class"))


async def list_page(
    conn: asyncpg.Connection, tenant_id: uuid.UUID | None, match: str | None,
    after: uuid.UUID | None, limit: int,
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM client_classes
            WHERE ($1::uuid IS NULL OR id > $1) AND ($2::uuid IS NULL OR tenant_id = $2)
              AND ($3::text IS NULL OR match = $3)
            ORDER BY id LIMIT $4""",
        after, tenant_id, match, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, class_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    current = await one(
        conn, f"SELECT {COLUMNS} FROM client_classes WHERE id = $1 FOR UPDATE", class_id,
        "client class",
    )
    before = public(current)
    if not changes:
        return before
    merged = {name: current[name] for name in UPDATABLE} | changes
    changes = _stored(changes)
    if "match" in changes or "value" in changes:
        changes["value"] = match_value(merged["match"], merged["value"])
    if "name" in changes:
        await name_free(conn, "client_classes", current["tenant_id"], changes["name"], class_id)
    clause, values = set_clause(changes, UPDATABLE)
    row = await fetch_one(
        conn,
        f"UPDATE client_classes SET {clause} WHERE id = $1 RETURNING {COLUMNS}", class_id,
        *values,
    )
    after = public(row)
    await audit.record(conn, actor, "update", "client_class", class_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, class_id: uuid.UUID) -> None:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM client_classes WHERE id = $1 FOR UPDATE", class_id,
        "client class",
    ))
    used = await conn.fetchval("SELECT count(*) FROM pools WHERE class_id = $1", class_id)
    if used:
        raise conflict(
            f"client class {before['name']!r} is used by {plural(used, 'pool')}; "
            "detach it first (PATCH the pools' class_id to null)"
        )
    await options.delete_owned(conn, actor, "class_id", class_id)
    await conn.execute("DELETE FROM client_classes WHERE id = $1", class_id)
    await audit.record(conn, actor, "delete", "client_class", class_id, before, None)
