"""Small helpers shared by the resource modules: fetch-or-404, UPDATE clauses, tenants."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import asyncpg

from ipamd.core.errors import conflict, not_found

# Moved to core (the dns, outbox and ops rooms' creates use them too); kept importable here.
from ipamd.core.tenancy import DEFAULT_TENANT as DEFAULT_TENANT
from ipamd.core.tenancy import tenant_for_create as tenant_for_create


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


def plural(count: int, noun: str) -> str:
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}" + ("es" if noun.endswith(("s", "x")) else "s")


def inside_message(counts: Mapping[str, int]) -> str:
    """'2 pools, 1 reservation' for the non-zero counts."""
    return ", ".join(plural(n, noun) for noun, n in counts.items() if n)


# The tables whose names are unique per tenant, and what an error calls a row of each.
_NAMED = {"client_classes": "client class", "shared_networks": "shared network"}


async def name_free(conn: asyncpg.Connection, table: str, tenant_id: uuid.UUID, name: str,
                    own: uuid.UUID | None) -> None:
    """409 when another row of ``table`` (one of ``_NAMED``) in the tenant has ``name``."""
    noun = _NAMED[table]  # a constant of this module: only they reach the SQL
    other = await conn.fetchval(
        f"""SELECT id FROM {table}
            WHERE tenant_id = $1 AND name = $2 AND id IS DISTINCT FROM $3""",
        tenant_id, name, own,
    )
    if other is not None:
        raise conflict(f"name: this tenant already has the {noun} {name!r} (id {other})")
