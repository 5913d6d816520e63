"""The units every subnet child (pool, exclude, option, reservation, assignment) shares.

Each child module keeps its own columns, rules and messages; what is the same for all of
them lives here: read by id, lock the parent subnet for a change, write a change with its
audit entry, delete with its audit entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit, validate
from ipamd.core.errors import conflict, invalid
from ipamd.ipam import nextfree, subnets
from ipamd.ipam.rows import one, set_clause, tenant_for_create


@dataclass(frozen=True)
class Kind:
    """How one kind of subnet child is stored and shown (all names come from code)."""

    noun: str  # audit object_type and the 404's wording: "pool"
    table: str  # "pools"
    alias: str  # the table's alias in ``source``: "p"
    columns: str  # the SELECT list over ``source``
    source: str  # "pools p JOIN subnets s ON s.id = p.subnet_id"
    updatable: tuple[str, ...]
    public: Callable[[asyncpg.Record], dict[str, Any]]


async def fetch(conn: asyncpg.Connection, kind: Kind, child_id: uuid.UUID,
                lock: bool = False) -> asyncpg.Record:
    """The child's row, or 404; ``lock`` takes the row lock a delete needs."""
    tail = f" FOR UPDATE OF {kind.alias}" if lock else ""
    return await one(
        conn, f"SELECT {kind.columns} FROM {kind.source} WHERE {kind.alias}.id = $1{tail}",
        child_id, kind.noun,
    )


async def get(conn: asyncpg.Connection, kind: Kind, child_id: uuid.UUID) -> dict[str, Any]:
    return kind.public(await fetch(conn, kind, child_id))


async def subnet_exists(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> bool:
    return bool(
        await conn.fetchval("SELECT EXISTS (SELECT 1 FROM subnets WHERE id = $1)", subnet_id)
    )


async def lock_for_create(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, tenant_id: uuid.UUID | None
) -> asyncpg.Record:
    """The locked parent subnet, after checking a given tenant_id is the subnet's."""
    subnet = await subnets.lock(conn, subnet_id)
    await tenant_for_create(conn, tenant_id, subnet["tenant_id"])
    return subnet


async def lock_for_change(
    conn: asyncpg.Connection, kind: Kind, child_id: uuid.UUID
) -> tuple[asyncpg.Record, asyncpg.Record]:
    """(locked parent subnet, current row): the subnet lock first, as creates take it."""
    subnet_id = await conn.fetchval(
        f"SELECT subnet_id FROM {kind.table} WHERE id = $1", child_id
    )
    if subnet_id is None:
        await fetch(conn, kind, child_id)  # raises the 404
    subnet = await subnets.lock(conn, subnet_id)
    return subnet, await fetch(conn, kind, child_id)


async def created(
    conn: asyncpg.Connection, actor: str, kind: Kind, new_id: uuid.UUID
) -> dict[str, Any]:
    """The new child as shown, with its create audit entry."""
    out = kind.public(await fetch(conn, kind, new_id))
    await audit.record(conn, actor, "create", kind.noun, new_id, None, out)
    return out


async def write_change(
    conn: asyncpg.Connection, actor: str, kind: Kind, child_id: uuid.UUID,
    before: dict[str, Any], changes: dict[str, Any],
) -> dict[str, Any]:
    """Store checked ``changes`` and audit them; the child as shown afterwards."""
    clause, values = set_clause(changes, kind.updatable)
    await conn.execute(f"UPDATE {kind.table} SET {clause} WHERE id = $1", child_id, *values)
    after = kind.public(await fetch(conn, kind, child_id))
    await audit.record(conn, actor, "update", kind.noun, child_id, before, after)
    return after


async def delete(
    conn: asyncpg.Connection, actor: str, kind: Kind, child_id: uuid.UUID
) -> None:
    before = kind.public(await fetch(conn, kind, child_id, lock=True))
    await conn.execute(f"DELETE FROM {kind.table} WHERE id = $1", child_id)
    await audit.record(conn, actor, "delete", kind.noun, child_id, before, None)


def host_rules(subnet: asyncpg.Record, ip: validate.IPAddress) -> None:
    """A single-address child's ip: a host address of the subnet, not its gateway."""
    reason = validate.host_in(subnet["cidr"], ip)
    if reason:
        raise invalid("ip", reason)
    if ip == subnet["gateway"]:
        raise conflict(f"ip: {ip} is the subnet's gateway")


async def lowest_free(conn: asyncpg.Connection, subnet: asyncpg.Record) -> validate.IPAddress:
    """The address a create without an ip gets, or 409 when the subnet has none left."""
    ip = await nextfree.lowest_free(conn, subnet["id"], subnet["cidr"], subnet["gateway"])
    if ip is None:
        raise conflict(
            f"ip: the subnet {subnet['cidr']} has no free address outside its pools and "
            "excludes; give an ip"
        )
    return ip
