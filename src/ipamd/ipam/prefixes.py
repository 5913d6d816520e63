"""Prefixes: the plan. They may nest; a tenant holds each CIDR once; subnets live inside them."""

from __future__ import annotations

import ipaddress
import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict
from ipamd.core.jsonutil import dumps
from ipamd.core.rendered import RenderedRows
from ipamd.core.rows import fetch_one
from ipamd.ipam import pd_pools, utilisation
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import (
    one,
    plural,
    set_clause,
    tenant_for_create,
)

COLUMNS = "id, tenant_id, cidr, description, created_at, updated_at"
UPDATABLE = ("cidr", "description")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "tenant_id": row["tenant_id"],
        "cidr": str(row["cidr"]),
        "family": row["cidr"].version,
        "description": row["description"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


@dataclass(frozen=True)
class Filters:
    tenant_id: uuid.UUID | None = None
    cidr: Network | None = None
    contains: Network | None = None
    within: Network | None = None


async def _duplicate(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, cidr: Network, own: uuid.UUID | None
) -> None:
    other = await conn.fetchval(
        "SELECT id FROM prefixes WHERE tenant_id = $1 AND cidr = $2 AND id IS DISTINCT FROM $3",
        tenant_id, cidr, own,
    )
    if other is not None:
        raise conflict(f"cidr: this tenant already has the prefix {cidr} (id {other})")


@guarded
async def create(conn: asyncpg.Connection, actor: str, fields: dict[str, Any]) -> dict[str, Any]:
    tenant_id = await tenant_for_create(conn, fields.get("tenant_id"))
    cidr = fields["cidr"]
    await _duplicate(conn, tenant_id, cidr, None)
    row = await fetch_one(
        conn,
        f"""INSERT INTO prefixes (tenant_id, cidr, description) VALUES ($1, $2, $3)
            RETURNING {COLUMNS}""",
        tenant_id, cidr, fields.get("description") or "",
    )
    out = public(row)
    await audit.record(conn, actor, "create", "prefix", row["id"], None, out)
    return out


async def get(conn: asyncpg.Connection, prefix_id: uuid.UUID) -> dict[str, Any]:
    return public(await one(conn, f"SELECT {COLUMNS} FROM prefixes WHERE id = $1", prefix_id,
                            "prefix"))


# A page's conditions, in the order of list_page's values. Its statement names only the
# conditions it has: a prepared statement's generic plan of "$1 IS NULL OR id > $1" cannot
# start the index scan at the cursor, and costs PostgreSQL more per page.
_CONDITIONS = ("id > {}::uuid", "tenant_id = {}::uuid", "cidr = {}::cidr", "cidr >>= {}::cidr",
               "cidr <<= {}::cidr")


def _page_sql(present: tuple[bool, ...]) -> str:
    """The page's statement for the conditions present (values are parameters; the text is
    made of the constants above only)."""
    wanted = [c for c, given in zip(_CONDITIONS, present, strict=True) if given]
    where = " AND ".join(c.format(f"${n}") for n, c in enumerate(wanted, 1))
    return (f"SELECT id, xmin AS version FROM prefixes {'WHERE ' + where if where else ''} "
            f"ORDER BY id LIMIT ${len(wanted) + 1}")


# Every shape, made once: (which conditions are present) -> the statement.
PAGE_SQL = {present: _page_sql(present)
            for present in itertools.product((False, True), repeat=len(_CONDITIONS))}


async def list_page(
    conn: asyncpg.Connection, rendered: RenderedRows, f: Filters, after: uuid.UUID | None,
    limit: int,
) -> list[tuple[uuid.UUID, str]]:
    """(id, the prefix as JSON text) in id order: limit + 1 of them at most. Rows whose
    version ``rendered`` holds are not read again (core/rendered.py)."""
    given = (after, f.tenant_id, f.cidr, f.contains, f.within)
    values = [value for value in given if value is not None]
    shape = tuple(value is not None for value in given)
    page = await conn.fetch(PAGE_SQL[shape], *values, limit + 1)
    key = ("prefix", shape, *values, limit)
    kept: list[tuple[uuid.UUID, str]] | None = rendered.page(key, page)
    if kept is not None:
        return kept  # (shared by the requests that get it: read, never changed)
    held = rendered.get_many("prefix", page)  # each row is (id, version)
    shown: list[tuple[uuid.UUID, str]] = []
    missing: list[uuid.UUID] = []
    for row, text in zip(page, held, strict=True):
        if text is None:
            missing.append(row[0])
        else:
            shown.append((row[0], text))
    if not missing:
        rendered.keep_page("prefix", key, page, shown)
        return shown
    texts = dict(shown)
    # A row changed since the page was read is shown as it is now; one deleted is left out.
    for row in await conn.fetch(
            f"SELECT {COLUMNS}, xmin AS version FROM prefixes WHERE id = ANY($1::uuid[])",
            missing):
        texts[row["id"]] = text = dumps(public(row))
        rendered.put("prefix", row["id"], row["version"], text)
    return [(row[0], texts[row[0]]) for row in page if row[0] in texts]


async def list_page_utilised(
    conn: asyncpg.Connection, rendered: RenderedRows, f: Filters, after: uuid.UUID | None,
    limit: int,
) -> list[tuple[uuid.UUID, str]]:
    """``list_page``, each prefix with its ``utilisation`` (GET /prefixes/{id}/utilisation's
    object) read for the whole page in one statement and added to its rendering."""
    page = await list_page(conn, rendered, f, after, limit)
    figures = await utilisation.prefixes_page(conn, [row_id for row_id, _ in page])
    # A rendering is one JSON object: the field goes in before its closing brace.
    return [(row_id, f'{text[:-1]},"utilisation":{dumps(figures[row_id])}}}')
            for row_id, text in page if row_id in figures]


async def _delegation_held(conn: asyncpg.Connection, current: asyncpg.Record,
                           becomes: Network | None) -> None:
    """409 when a delegation pool would lie in none of its tenant's prefixes any more."""
    pool = await pd_pools.only_holder(conn, current, becomes)
    if pool is not None:
        change = "deleted" if becomes is None else f"made {becomes}"
        raise conflict(f"cidr: the delegation pool {pool['name']!r} ({pool['prefix']}, id "
                       f"{pool['id']}) would lie in none of the tenant's prefixes once this "
                       f"one is {change}; delete or move the pool first")


@guarded
async def update(
    conn: asyncpg.Connection, actor: str, prefix_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    current = await one(
        conn, f"SELECT {COLUMNS} FROM prefixes WHERE id = $1 FOR UPDATE", prefix_id, "prefix"
    )
    before = public(current)
    if not changes:
        return before
    cidr = changes.get("cidr", current["cidr"])
    if "cidr" in changes and cidr != current["cidr"]:
        await _duplicate(conn, current["tenant_id"], cidr, prefix_id)
        outside = await conn.fetch(
            "SELECT cidr FROM subnets WHERE prefix_id = $1 AND NOT cidr <<= $2 ORDER BY cidr"
            " LIMIT 5",
            prefix_id, cidr,
        )
        if outside:
            listed = ", ".join(str(r["cidr"]) for r in outside)
            raise conflict(f"cidr: the subnets {listed} would no longer be inside {cidr}")
        await _delegation_held(conn, current, cidr)
    clause, values = set_clause(changes, UPDATABLE)
    row = await fetch_one(
        conn,
        f"UPDATE prefixes SET {clause} WHERE id = $1 RETURNING {COLUMNS}", prefix_id, *values
    )
    after = public(row)
    await audit.record(conn, actor, "update", "prefix", prefix_id, before, after)
    return after


@guarded
async def delete(conn: asyncpg.Connection, actor: str, prefix_id: uuid.UUID) -> None:
    current = await one(
        conn, f"SELECT {COLUMNS} FROM prefixes WHERE id = $1 FOR UPDATE", prefix_id, "prefix"
    )
    before = public(current)
    subnets = await conn.fetch(
        "SELECT cidr, count(*) OVER () AS n FROM subnets WHERE prefix_id = $1 ORDER BY cidr"
        " LIMIT 5",
        prefix_id,
    )
    if subnets:
        listed = ", ".join(str(r["cidr"]) for r in subnets)
        more = " …" if subnets[0]["n"] > len(subnets) else ""
        raise conflict(
            f"prefix {before['cidr']} still has {plural(subnets[0]['n'], 'subnet')} "
            f"({listed}{more}); delete them first"
        )
    await _delegation_held(conn, current, None)
    await conn.execute("DELETE FROM prefixes WHERE id = $1", prefix_id)
    await audit.record(conn, actor, "delete", "prefix", prefix_id, before, None)
