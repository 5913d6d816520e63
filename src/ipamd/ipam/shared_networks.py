"""Shared networks: IPv4 subnets of one link grouped, as Kea's shared-networks and ISC
dhcpd's shared-network (docs/api-ipam.md, "Shared networks"). A subnet joins one group at
most (``subnets.shared_network_id``); the DHCP server serves the group (dhcp/shared.py)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import audit, validate
from ipamd.core.errors import conflict, invalid
from ipamd.core.rows import fetch_one
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import name_free, one, plural, set_clause, tenant_for_create

COLUMNS = "id, tenant_id, name, description, created_at, updated_at"
UPDATABLE = ("name", "description")
# The members in the order the DHCP server tries them after the subnet the relay named
# (dhcp/plan.py builds the same order: by network address).
_MEMBERS = """SELECT shared_network_id, id, cidr, name FROM subnets
              WHERE shared_network_id = ANY($1::uuid[]) ORDER BY cidr, id"""


def public(row: asyncpg.Record, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": row["id"], "tenant_id": row["tenant_id"], "name": row["name"],
            "description": row["description"], "subnets": members,
            "created_at": row["created_at"], "updated_at": row["updated_at"]}


async def _members(conn: asyncpg.Connection,
                   ids: list[uuid.UUID]) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Each group's members, for a whole page in one query."""
    found: dict[uuid.UUID, list[dict[str, Any]]] = {ident: [] for ident in ids}
    for r in await conn.fetch(_MEMBERS, ids):
        found[r["shared_network_id"]].append(
            {"id": r["id"], "cidr": str(r["cidr"]), "name": r["name"]})
    return found


async def _with_members(conn: asyncpg.Connection, row: asyncpg.Record) -> dict[str, Any]:
    return public(row, (await _members(conn, [row["id"]]))[row["id"]])


@guarded
async def create(conn: asyncpg.Connection, actor: str, fields: dict[str, Any]) -> dict[str, Any]:
    tenant_id = await tenant_for_create(conn, fields.get("tenant_id"))
    await name_free(conn, "shared_networks", tenant_id, fields["name"], None)
    row = await fetch_one(
        conn,
        f"""INSERT INTO shared_networks (tenant_id, name, description) VALUES ($1, $2, $3)
            RETURNING {COLUMNS}""",
        tenant_id, fields["name"], fields.get("description") or "",
    )
    out = public(row, [])
    await audit.record(conn, actor, "create", "shared_network", row["id"], None, out)
    return out


async def get(conn: asyncpg.Connection, network_id: uuid.UUID) -> dict[str, Any]:
    row = await one(conn, f"SELECT {COLUMNS} FROM shared_networks WHERE id = $1", network_id,
                    "shared network")
    return await _with_members(conn, row)


async def list_page(
    conn: asyncpg.Connection, tenant_id: uuid.UUID | None, name: str | None,
    after: uuid.UUID | None, limit: int,
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM shared_networks
            WHERE ($1::uuid IS NULL OR id > $1) AND ($2::uuid IS NULL OR tenant_id = $2)
              AND ($3::text IS NULL OR name = $3)
            ORDER BY id LIMIT $4""",
        after, tenant_id, name, limit + 1,
    )
    members = await _members(conn, [r["id"] for r in rows])
    return [public(r, members[r["id"]]) for r in rows]


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, network_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    current = await one(
        conn, f"SELECT {COLUMNS} FROM shared_networks WHERE id = $1 FOR UPDATE", network_id,
        "shared network",
    )
    before = await _with_members(conn, current)
    if not changes:
        return before
    if "name" in changes:
        await name_free(conn, "shared_networks", current["tenant_id"], changes["name"], network_id)
    clause, values = set_clause(changes, UPDATABLE)
    row = await fetch_one(
        conn, f"UPDATE shared_networks SET {clause} WHERE id = $1 RETURNING {COLUMNS}",
        network_id, *values,
    )
    after = public(row, before["subnets"])
    await audit.record(conn, actor, "update", "shared_network", network_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, network_id: uuid.UUID) -> None:
    # FOR UPDATE first: a subnet joining meanwhile waits on the row its key refers to (FOR
    # KEY SHARE), then finds it gone; one that joined before is counted here.
    current = await one(
        conn, f"SELECT {COLUMNS} FROM shared_networks WHERE id = $1 FOR UPDATE", network_id,
        "shared network",
    )
    before = await _with_members(conn, current)
    if before["subnets"]:
        count = len(before["subnets"])
        raise conflict(
            f"shared network {current['name']!r} still has {plural(count, 'subnet')}; "
            "take them out first (PATCH each subnet's shared_network_id to null)"
        )
    await conn.execute("DELETE FROM shared_networks WHERE id = $1", network_id)
    await audit.record(conn, actor, "delete", "shared_network", network_id, before, None)


async def check_member(conn: asyncpg.Connection, subnet: dict[str, Any]) -> None:
    """A subnet joining ``subnet["shared_network_id"]``: the group exists, is the subnet's
    tenant's, and the subnet is IPv4 (422 naming shared_network_id otherwise)."""
    network_id = subnet["shared_network_id"]
    net: validate.Network = subnet["cidr"]
    if net.version != 4:
        raise invalid("shared_network_id", f"{net} is an IPv6 subnet; shared networks group "
                      "IPv4 subnets only (the DHCPv6 server serves each IPv6 subnet alone)")
    owner = await conn.fetchval(
        "SELECT tenant_id FROM shared_networks WHERE id = $1 FOR KEY SHARE", network_id)
    if owner is None:
        raise invalid("shared_network_id", f"no shared network with this id ({network_id})")
    if owner != subnet["tenant_id"]:
        raise invalid("shared_network_id", f"the shared network belongs to tenant {owner}, "
                      f"the subnet to tenant {subnet['tenant_id']}")
