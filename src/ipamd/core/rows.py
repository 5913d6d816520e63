"""Rows a statement always yields, typed as such.

asyncpg's ``fetchrow`` answers ``None`` when a statement yields no row. An aggregate without
GROUP BY, an ``INSERT … RETURNING`` and an ``UPDATE … RETURNING`` of a row this transaction
holds (locked by an earlier ``SELECT … FOR UPDATE``) always yield one; ``fetch_one`` says so to
the type checker and fails loudly should that ever be untrue, instead of a ``TypeError`` on
``None`` later.
"""

from __future__ import annotations

import asyncpg


async def fetch_one(conn: asyncpg.Connection, sql: str, *args: object) -> asyncpg.Record:
    """The one row ``sql`` yields (see above); ``LookupError`` if it yields none."""
    row = await conn.fetchrow(sql, *args)
    if row is None:
        raise LookupError("a statement that always yields a row yielded none")
    return row
