"""Small helpers shared by the DNS resources' units."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core.errors import conflict
from ipamd.core.rows import fetch_one


async def fetch_unique(
    conn: asyncpg.Connection, what: str, sql: str, *args: Any
) -> asyncpg.Record:
    """One INSERT/UPDATE … RETURNING in a savepoint; a duplicate becomes 409 naming ``what``."""
    try:
        async with conn.transaction():
            return await fetch_one(conn, sql, *args)
    except asyncpg.UniqueViolationError:
        raise conflict(what) from None


def page_sql(columns: str, table: str, where: str = "TRUE") -> str:
    return (f"SELECT {columns} FROM {table} WHERE ($1::uuid IS NULL OR id > $1) AND {where} "
            "ORDER BY id LIMIT $2")


def as_uuid(value: Any) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(str(value))
