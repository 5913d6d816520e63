"""Audit entries and their ipam.audit events, written in the mutation's own transaction."""

from __future__ import annotations

from typing import Any

import asyncpg

from ipamd.core import jsonutil
from ipamd.core.rows import fetch_one
from ipamd.core.secret_locations import redacted

AUDIT_TOPIC = "ipam.audit"

_RECORD = """
WITH entry AS (
    INSERT INTO audit_log (actor, action, object_type, object_id, before, after)
    VALUES ($1, $2, $3, $4, $5, $6)
    RETURNING id, at, actor, action, object_type, object_id, before, after
), event AS (
    INSERT INTO events (topic, payload)
    SELECT $7, jsonb_build_object(
        -- 'at' as the API writes times (RFC 3339, UTC, Z), not jsonb's +00:00
        'id', id, 'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'actor', actor, 'action', action, 'object_type', object_type,
        'object_id', object_id, 'before', before, 'after', after)
    FROM entry
)
SELECT * FROM entry
"""


async def record(
    conn: asyncpg.Connection,
    actor: str,
    action: str,
    object_type: str,
    object_id: Any,
    before: Any,
    after: Any,
) -> dict[str, Any]:
    """One audit entry plus its ipam.audit event row; one round trip.

    Secret locations never enter it (core/secret_locations: viewers read entries, and each
    goes out as an event body)."""
    row = await fetch_one(
        conn,
        _RECORD,
        actor,
        action,
        object_type,
        None if object_id is None else str(object_id),
        None if before is None else redacted(jsonutil.plain(before)),
        None if after is None else redacted(jsonutil.plain(after)),
        AUDIT_TOPIC,
    )
    return dict(row)


def entry_out(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    """An entry as the API shows it; redacted again for entries written before the rule."""
    return {
        "id": row["id"],
        "at": row["at"],
        "actor": row["actor"],
        "action": row["action"],
        "object_type": row["object_type"],
        "object_id": row["object_id"],
        "before": redacted(row["before"]),
        "after": redacted(row["after"]),
    }


async def purge(conn: asyncpg.Connection, retention_days: int, batch: int = 10_000) -> int:
    """Delete entries older than the retention, in batches so no lock is held long."""
    total = 0
    while True:
        result = await conn.execute(
            """DELETE FROM audit_log WHERE id IN (
                   SELECT id FROM audit_log WHERE at < now() - make_interval(days => $1)
                   LIMIT $2)""",
            retention_days,
            batch,
        )
        count = int(result.split()[-1])
        total += count
        if count < batch:
            return total
