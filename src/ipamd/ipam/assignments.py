"""Assignments: a static address and host name without DHCP (spec §1); a managed IP."""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.api.errors import conflict, invalid
from ipamd.ipam import audit, license, nextfree, occupancy, subnets, validate
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import one, set_clause, tenant_for_create

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


async def _fetch(conn: asyncpg.Connection, assignment_id: uuid.UUID) -> asyncpg.Record:
    return await one(conn, f"SELECT {COLUMNS} FROM {FROM} WHERE a.id = $1", assignment_id,
                     "assignment")


async def _check(
    conn: asyncpg.Connection, subnet: asyncpg.Record, ip: ipaddress.IPv4Address,
    own: uuid.UUID | None,
) -> None:
    reason = validate.host_in(subnet["cidr"], ip)
    if reason:
        raise invalid("ip", reason)
    if ip == subnet["gateway"]:
        raise conflict(f"ip: {ip} is the subnet's gateway")
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
    subnet = await subnets.lock(conn, subnet_id)
    await tenant_for_create(conn, fields.get("tenant_id"), subnet["tenant_id"])
    ip = fields.get("ip")
    if ip is None:
        ip = await nextfree.lowest_free(conn, subnet_id, subnet["cidr"], subnet["gateway"])
        if ip is None:
            raise conflict(
                f"ip: the subnet {subnet['cidr']} has no free address outside its pools and "
                "excludes; give an ip"
            )
    await _check(conn, subnet, ip, None)
    await license.check_room(conn, grant)
    new_id = await conn.fetchval(
        """INSERT INTO assignments (subnet_id, ip, hostname, description)
           VALUES ($1, $2, $3, $4) RETURNING id""",
        subnet_id, ip, fields["hostname"], fields.get("description") or "",
    )
    out = public(await _fetch(conn, new_id))
    await audit.record(conn, actor, "create", "assignment", new_id, None, out)
    return out


async def get(conn: asyncpg.Connection, assignment_id: uuid.UUID) -> dict[str, Any]:
    return public(await _fetch(conn, assignment_id))


@dataclass(frozen=True)
class Filters:
    ip: ipaddress.IPv4Address | None = None
    hostname: str | None = None


async def list_page(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, f: Filters, after: uuid.UUID | None,
    limit: int,
) -> list[dict[str, Any]] | None:
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM subnets WHERE id = $1)", subnet_id):
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
    subnet_id = await conn.fetchval(
        "SELECT subnet_id FROM assignments WHERE id = $1", assignment_id
    )
    if subnet_id is None:
        await _fetch(conn, assignment_id)  # raises the 404
    subnet = await subnets.lock(conn, subnet_id)
    current = await _fetch(conn, assignment_id)
    before = public(current)
    if not changes:
        return before
    if "ip" in changes and changes["ip"] != current["ip"]:
        await _check(conn, subnet, changes["ip"], assignment_id)
    clause, values = set_clause(changes, UPDATABLE)
    await conn.execute(f"UPDATE assignments SET {clause} WHERE id = $1", assignment_id, *values)
    after = public(await _fetch(conn, assignment_id))
    await audit.record(conn, actor, "update", "assignment", assignment_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, assignment_id: uuid.UUID) -> None:
    before = public(await one(
        conn, f"SELECT {COLUMNS} FROM {FROM} WHERE a.id = $1 FOR UPDATE OF a", assignment_id,
        "assignment",
    ))
    await conn.execute("DELETE FROM assignments WHERE id = $1", assignment_id)
    await audit.record(conn, actor, "delete", "assignment", assignment_id, before, None)
