"""DNS zones, the resource: a forward or reverse zone and the server that holds it.

The name is fixed at creation (static records and subnets refer to it); the server and the
default TTL may change.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import audit, validate
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.core.rows import fetch_one
from ipamd.core.tenancy import tenant_for_create
from ipamd.dns.common import fetch_unique, page_sql

COLUMNS = "id, tenant_id, name, server_id, default_ttl, created_at, updated_at"


def check_name(value: str) -> str:
    name = validate.dns_name(value)
    if name.endswith("ip6.arpa"):
        return name
    if name.endswith("in-addr.arpa"):
        return validate.reverse_zone(name)
    return name


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"], "tenant_id": row["tenant_id"], "name": row["name"],
        "server_id": row["server_id"],
        "kind": "reverse" if row["name"].endswith(".arpa") else "forward",
        "default_ttl": row["default_ttl"], "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


async def _server_exists(conn: asyncpg.Connection, server_id: uuid.UUID) -> None:
    found = await conn.fetchval("SELECT 1 FROM dns_servers WHERE id = $1 FOR SHARE", server_id)
    if not found:
        raise invalid("server_id", f"no DNS server with this id ({server_id})")


async def create(conn: asyncpg.Connection, actor: str, values: dict[str, Any]) -> dict[str, Any]:
    await _server_exists(conn, values["server_id"])
    tenant_id = await tenant_for_create(conn, values.get("tenant_id"))
    row = await fetch_unique(
        conn, f"name: the zone {values['name']!r} already exists",
        f"""INSERT INTO dns_zones (name, server_id, default_ttl, tenant_id)
            VALUES ($1, $2, $3, $4) RETURNING {COLUMNS}""",
        values["name"], values["server_id"], values.get("default_ttl", 3600), tenant_id,
    )
    await audit.record(conn, actor, "create", "dns_zone", row["id"], None, public(row))
    return public(row)


async def get(conn: asyncpg.Connection, zone_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM dns_zones WHERE id = $1", zone_id)
    if row is None:
        raise not_found("DNS zone", str(zone_id))
    return public(row)


async def list_page(
    conn: asyncpg.Connection, name: str | None, tenant_id: uuid.UUID | None,
    after: uuid.UUID | None, limit: int,
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        page_sql(COLUMNS, "dns_zones",
                 "($3::text IS NULL OR name = $3) AND ($4::uuid IS NULL OR tenant_id = $4)"),
        after, limit + 1, name, tenant_id,
    )
    return [public(r) for r in rows]


async def update(
    conn: asyncpg.Connection, actor: str, zone_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    before = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM dns_zones WHERE id = $1 FOR UPDATE", zone_id
    )
    if before is None:
        raise not_found("DNS zone", str(zone_id))
    for name, value in changes.items():
        if value is None:
            raise invalid(name, "must not be null")
    if not changes:
        return public(before)
    if "server_id" in changes:
        await _server_exists(conn, changes["server_id"])
    after = await fetch_one(
        conn,
        f"""UPDATE dns_zones SET server_id = $2, default_ttl = $3, updated_at = now()
            WHERE id = $1 RETURNING {COLUMNS}""",
        zone_id, changes.get("server_id", before["server_id"]),
        changes.get("default_ttl", before["default_ttl"]),
    )
    await audit.record(conn, actor, "update", "dns_zone", zone_id, public(before), public(after))
    return public(after)


async def delete(conn: asyncpg.Connection, actor: str, zone_id: uuid.UUID) -> None:
    before = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM dns_zones WHERE id = $1 FOR UPDATE", zone_id
    )
    if before is None:
        raise not_found("DNS zone", str(zone_id))
    users = await fetch_one(
        conn,
        """SELECT (SELECT count(*) FROM dns_records WHERE zone_id = $1) AS records,
                  (SELECT count(*) FROM subnets
                   WHERE ddns_zone = $2 OR ddns_reverse_zone = $2) AS subnets""",
        zone_id, before["name"],
    )
    if users["records"] or users["subnets"]:
        raise conflict(f"the zone still has {users['records']} static record(s) and is used "
                       f"by {users['subnets']} subnet(s)")
    try:
        async with conn.transaction():
            await conn.execute("DELETE FROM dns_zones WHERE id = $1", zone_id)
    except asyncpg.ForeignKeyViolationError:
        raise conflict("the zone gained a static record meanwhile") from None
    await audit.record(conn, actor, "delete", "dns_zone", zone_id, public(before), None)
