"""Assignments: a static address and host name without DHCP; a managed IP (docs/api-ipam.md)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import validate
from ipamd.core.errors import conflict
from ipamd.ipam import children, license, occupancy
from ipamd.ipam.dberrors import guarded

COLUMNS = (
    "a.id, a.subnet_id, s.tenant_id, a.ip, a.hostname, a.description, a.created_at, a.updated_at"
)
FROM = "assignments a JOIN subnets s ON s.id = a.subnet_id"
UPDATABLE = ("ip", "hostname", "description")


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "subnet_id": row["subnet_id"],
        "tenant_id": row["tenant_id"],
        "ip": str(row["ip"]),
        "hostname": row["hostname"],
        "description": row["description"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


KIND = children.Kind("assignment", "assignments", "a", COLUMNS, FROM, UPDATABLE, public)


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, ip: validate.IPAddress,
    own: uuid.UUID | None,
) -> None:
    children.host_rules(subnet, ip)
    for occupant in await occupancy.occupants(conn, subnet["id"], ip, skip_assignment=own):
        if occupant.kind == "exclude":
            continue  # excludes are where static hosts usually live
        if occupant.kind == "pool":
            raise conflict(
                f"ip: {ip} lies inside {occupant.describe()}; a static host outside DHCP must "
                "not sit in a DHCP pool"
            )
        raise conflict(f"ip: {ip} is taken by {occupant.describe()}")


@guarded
async def create(
    conn: asyncpg.Connection,
    actor: str,
    grant: license.Entitlement,
    subnet_id: uuid.UUID,
    fields: dict[str, Any],
) -> dict[str, Any]:
    await license.lock(conn)
    subnet = await children.lock_for_create(conn, subnet_id, fields.get("tenant_id"))
    ip = fields.get("ip")
    if ip is None:
        ip = await children.lowest_free(conn, subnet)
    await _check(conn, subnet, ip, None)
    await license.check_room(conn, grant)
    new_id = await conn.fetchval(
        """INSERT INTO assignments (subnet_id, ip, hostname, description)
           VALUES ($1, $2, $3, $4) RETURNING id""",
        subnet_id, ip, fields["hostname"], fields.get("description") or "",
    )
    return await children.created(conn, actor, KIND, new_id)


async def get(conn: asyncpg.Connection, assignment_id: uuid.UUID) -> dict[str, Any]:
    return await children.get(conn, KIND, assignment_id)


@dataclass(frozen=True)
class Filters:
    ip: validate.IPAddress | None = None
    hostname: str | None = None


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, f: Filters, after: uuid.UUID | None,
    limit: int,
) -> list[dict[str, Any]] | None:
    if not await children.subnet_exists(conn, subnet_id):
        return None
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM {FROM}
            WHERE a.subnet_id = $1 AND ($2::uuid IS NULL OR a.id > $2)
              AND ($3::inet IS NULL OR a.ip = $3)
              AND ($4::text IS NULL OR lower(a.hostname) = lower($4))
            ORDER BY a.id LIMIT $5""",
        subnet_id, after, f.ip, f.hostname, limit + 1,
    )
    return [public(r) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, assignment_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    subnet, current = await children.lock_for_change(conn, KIND, assignment_id)
    before = public(current)
    if not changes:
        return before
    if "ip" in changes and changes["ip"] != current["ip"]:
        await _check(conn, subnet, changes["ip"], assignment_id)
    return await children.write_change(conn, actor, KIND, assignment_id, before, changes)


@guarded
async def delete(conn: asyncpg.Connection, actor: str, assignment_id: uuid.UUID) -> None:
    await children.delete(conn, actor, KIND, assignment_id)
