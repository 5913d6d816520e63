"""Tenants: separate address spaces (their subnets may overlap each other's); one is the default."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict
from ipamd.core.rows import fetch_one
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import DEFAULT_TENANT, inside_message, one, set_clause

COLUMNS = "id, name, description, created_at, updated_at"
UPDATABLE = ("name", "description")


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "default": row["id"] == DEFAULT_TENANT,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


@guarded
async def create(conn: asyncpg.Connection, actor: str, fields: dict[str, Any]) -> dict[str, Any]:
    row = await fetch_one(
        conn,
        f"INSERT INTO tenants (name, description) VALUES ($1, $2) RETURNING {COLUMNS}",
        fields["name"],
        fields.get("description") or "",
    )
    out = public(row)
    await audit.record(conn, actor, "create", "tenant", row["id"], None, out)
    return out


async def get(conn: asyncpg.Connection, tenant_id: uuid.UUID) -> dict[str, Any]:
    return public(await one(conn, f"SELECT {COLUMNS} FROM tenants WHERE id = $1", tenant_id,
                            "tenant"))


async def list_page(
    conn: asyncpg.Connection, name: str | None, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM tenants
            WHERE ($1::uuid IS NULL OR id > $1) AND ($2::text IS NULL OR name = $2)
            ORDER BY id LIMIT $3""",
        after, name, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, tenant_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM tenants WHERE id = $1 FOR UPDATE", tenant_id, "tenant"
    ))
    if not changes:
        return before
    clause, values = set_clause(changes, UPDATABLE)
    row = await fetch_one(
        conn,
        f"UPDATE tenants SET {clause} WHERE id = $1 RETURNING {COLUMNS}", tenant_id, *values
    )
    after = public(row)
    await audit.record(conn, actor, "update", "tenant", tenant_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, tenant_id: uuid.UUID) -> None:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM tenants WHERE id = $1 FOR UPDATE", tenant_id, "tenant"
    ))
    if tenant_id == DEFAULT_TENANT:
        raise conflict("the default tenant cannot be deleted")
    counts = await fetch_one(
        conn,
        """SELECT (SELECT count(*) FROM prefixes WHERE tenant_id = $1) AS prefix,
                  (SELECT count(*) FROM subnets WHERE tenant_id = $1) AS subnet,
                  (SELECT count(*) FROM client_classes WHERE tenant_id = $1) AS "client class",
                  (SELECT count(*) FROM shared_networks WHERE tenant_id = $1)
                      AS "shared network",
                  (SELECT count(*) FROM dns_servers WHERE tenant_id = $1) AS "DNS server",
                  (SELECT count(*) FROM dns_zones WHERE tenant_id = $1) AS "DNS zone",
                  (SELECT count(*) FROM webhooks WHERE tenant_id = $1) AS webhook,
                  (SELECT count(*) FROM alert_destinations WHERE tenant_id = $1)
                      AS "alert destination",
                  (SELECT count(*) FROM tokens WHERE tenant_id = $1 AND revoked_at IS NULL)
                      AS token
        """,
        tenant_id,
    )
    if any(counts.values()):
        raise conflict(
            f"tenant {before['name']!r} still holds {inside_message(dict(counts))}; "
            "delete them first"
        )
    await conn.execute("DELETE FROM tenants WHERE id = $1", tenant_id)
    await audit.record(conn, actor, "delete", "tenant", tenant_id, before, None)
