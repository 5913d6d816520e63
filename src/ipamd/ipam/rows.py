"""Small helpers shared by the resource modules: fetch-or-404, UPDATE clauses, tenants."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import asyncpg

from ipamd.core.errors import invalid, not_found

# Fixed in 0002_ipam.sql so every node and every test agrees on it.
DEFAULT_TENANT = uuid.UUID("00000000-0000-7000-8000-000000000001")


async def one(
    conn: asyncpg.Connection, sql: str, ident: Any, what: str, *args: Any
) -> asyncpg.Record:
    """The single row ``sql`` returns for ``ident`` ($1), or 404 naming ``what``."""
    row = await conn.fetchrow(sql, ident, *args)
    if row is None:
        raise not_found(what, str(ident))
    return row


def set_clause(
    changes: Mapping[str, Any], allowed: Iterable[str], first: int = 2
) -> tuple[str, list[Any]]:
    """``col = $n, ...`` for the changed columns (names from code, never from input)."""
    allowed = set(allowed)
    parts, values = [], []
    for offset, (column, value) in enumerate(changes.items()):
        if column not in allowed:
            raise ValueError(f"column {column!r} is not updatable")
        parts.append(f"{column} = ${first + offset}")
        values.append(value)
    parts.append("updated_at = now()")
    return ", ".join(parts), values


async def tenant_for_create(
    conn: asyncpg.Connection, tenant_id: uuid.UUID | None, inherited: uuid.UUID | None = None
) -> uuid.UUID:
    """The tenant a new object belongs to: the given one (which must exist), else the parent's
    tenant for objects with a parent, else the default tenant (spec §2)."""
    if tenant_id is None:
        return inherited or DEFAULT_TENANT
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM tenants WHERE id = $1)", tenant_id):
        raise invalid("tenant_id", f"tenant {tenant_id} does not exist")
    if inherited is not None and tenant_id != inherited:
        raise invalid(
            "tenant_id", f"must be the parent's tenant {inherited} (or be left out)"
        )
    return tenant_id


def plural(count: int, noun: str) -> str:
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}" + ("es" if noun.endswith(("s", "x")) else "s")


def inside_message(counts: Mapping[str, int]) -> str:
    """'2 pools, 1 reservation' for the non-zero counts."""
    return ", ".join(plural(n, noun) for noun, n in counts.items() if n)


