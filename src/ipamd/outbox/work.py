"""The operator's Work view of the outbox: list, count and read delivery rows, Replay a failed
one or every failed one a filter selects.

The scheduler's side of the same rows (claim, outcomes, retention) is ``queue``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict, not_found
from ipamd.core.rows import fetch_one
from ipamd.core.secret_locations import redacted
from ipamd.outbox.queue import CHANNEL, QUEUED

# The one rule of Replay: a failed row, whose webhook (kind webhook) still exists. Shown on
# every row (``replayable``) so the console offers Replay exactly where it would be accepted.
_REPLAYABLE = """(o.state = 'failed' AND (o.kind <> 'webhook'
    OR EXISTS (SELECT 1 FROM webhooks w WHERE w.id = o.webhook_id)))"""
_COLUMNS = f"""o.id, o.kind, o.topic, o.event_id, o.webhook_id, o.target, o.state, o.attempts,
    o.next_attempt_at, o.claim, o.last_error, o.last_status, o.delivered_at, o.created_at,
    o.updated_at, o.dns, (o.claim IS NOT NULL AND o.next_attempt_at > now()) AS in_flight,
    {_REPLAYABLE} AS replayable,
    (SELECT w.name FROM webhooks w WHERE w.id = o.webhook_id) AS webhook_name"""


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    queued = row["state"] in QUEUED
    return {
        "id": row["id"],
        "kind": row["kind"],
        "topic": row["topic"],
        "event_id": row["event_id"],
        "webhook_id": row["webhook_id"],
        # Its name (not secret, unlike where its secret lives): Work names targets to all roles.
        "webhook_name": row["webhook_name"],
        "target": row["target"],
        # kind dns: the change — server, name, records (dns/change.py); null for webhooks
        "dns": row["dns"],
        "state": row["state"],
        "attempts": row["attempts"],
        "in_flight": bool(row["in_flight"]) and queued,
        "replayable": bool(row["replayable"]),
        # While claimed, next_attempt_at is the claim's expiry, not a scheduled retry.
        "next_attempt_at": row["next_attempt_at"] if queued and not row["in_flight"] else None,
        "last_status": row["last_status"],
        "last_error": row["last_error"],
        "delivered_at": row["delivered_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


@dataclass(frozen=True)
class Filters:
    kind: str | None = None
    state: str | None = None
    topic: str | None = None
    webhook_id: uuid.UUID | None = None
    created_from: dt.datetime | None = None
    created_to: dt.datetime | None = None


# The list's filters as SQL, parameters $2..$7 (the order of ``_args``); $1 is the cursor.
_FILTERED = """($1::uuid IS NULL OR o.id < $1)
              AND ($2::text IS NULL OR o.kind = $2)
              AND ($3::text IS NULL OR o.state = $3)
              AND ($4::text IS NULL OR o.topic = $4)
              AND ($5::uuid IS NULL OR o.webhook_id = $5)
              AND ($6::timestamptz IS NULL OR o.created_at >= $6)
              AND ($7::timestamptz IS NULL OR o.created_at < $7)"""

# A bulk replay changes (and audits) at most this many rows in one transaction; the caller
# asks again while ``more`` says so.
REPLAY_BATCH = 500


def _args(filters: Filters) -> tuple[Any, ...]:
    return (filters.kind, filters.state, filters.topic, filters.webhook_id,
            filters.created_from, filters.created_to)


async def list_page(
    conn: asyncpg.Connection, filters: Filters, before: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    """Newest first; the cursor walks ids (UUIDv7, creation order) downwards."""
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM outbox o WHERE {_FILTERED}
            ORDER BY o.id DESC LIMIT $8""",
        before, *_args(filters), limit + 1,
    )
    return [public(r) for r in rows]


async def count(conn: asyncpg.Connection, filters: Filters) -> dict[str, int]:
    """How many rows the list's filters select, and how many of them Replay would take."""
    row = await fetch_one(
        conn,
        f"""SELECT count(*) AS rows, count(*) FILTER (WHERE {_REPLAYABLE}) AS replayable
            FROM outbox o WHERE {_FILTERED}""",
        None, *_args(filters),
    )
    return {"count": row["rows"], "replayable": row["replayable"]}


async def get(conn: asyncpg.Connection, outbox_id: uuid.UUID) -> dict[str, Any]:
    """One row with its event payload and every attempt, oldest first."""
    row = await conn.fetchrow(
        f"""SELECT {_COLUMNS}, e.payload FROM outbox o JOIN events e ON e.id = o.event_id
            WHERE o.id = $1""",
        outbox_id,
    )
    if row is None:
        raise not_found("outbox row", str(outbox_id))
    history = await conn.fetch(
        """SELECT attempt, at, duration_ms, status, error, response, node
           FROM outbox_attempts WHERE outbox_id = $1 ORDER BY at, id""",
        outbox_id,
    )
    return {
        **public(row),
        # An ipam.audit payload is an audit entry: no secret location (core/secret_locations).
        "payload": redacted(row["payload"]),
        "history": [
            {**dict(h), "duration_ms": round(h["duration_ms"], 3)} for h in history
        ],
    }


async def replay_all(
    conn: asyncpg.Connection, actor: str, filters: Filters, batch: int = REPLAY_BATCH
) -> dict[str, Any]:
    """Replay every replayable row the filters select (oldest first, ``batch`` at most),
    each audited as a single Replay is; wakes the schedulers at commit."""
    befores = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM outbox o WHERE {_FILTERED} AND {_REPLAYABLE}
            ORDER BY o.id LIMIT $8 FOR UPDATE OF o SKIP LOCKED""",
        None, *_args(filters), batch + 1,
    )
    chosen = befores[:batch]
    afters = await conn.fetch(
        f"""UPDATE outbox o SET state = 'pending', attempts = 0, next_attempt_at = now(),
                claim = NULL, claimed_by = NULL, updated_at = now()
            WHERE o.id = ANY($1::uuid[]) RETURNING {_COLUMNS}""",
        [r["id"] for r in chosen],
    )
    after_of = {r["id"]: r for r in afters}
    for before in chosen:
        await audit.record(conn, actor, "replay", "outbox", before["id"], public(before),
                           public(after_of[before["id"]]))
    for kind in sorted({r["kind"] for r in afters}):
        await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, kind)
    return {"replayed": len(afters), "more": len(befores) > batch}


async def replay(conn: asyncpg.Connection, actor: str, outbox_id: uuid.UUID) -> dict[str, Any]:
    """failed → pending with a fresh attempt budget; audited; wakes the schedulers at commit."""
    before = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM outbox o WHERE o.id = $1 FOR UPDATE", outbox_id
    )
    if before is None:
        raise not_found("outbox row", str(outbox_id))
    if not before["replayable"]:
        if before["state"] != "failed":
            raise conflict(
                f"outbox row {outbox_id} is {before['state']}: only failed rows can be replayed"
            )
        raise conflict(f"webhook {before['webhook_id']} was deleted: nothing to deliver to")
    after = await fetch_one(
        conn,
        f"""UPDATE outbox o SET state = 'pending', attempts = 0, next_attempt_at = now(),
                claim = NULL, claimed_by = NULL, updated_at = now()
            WHERE o.id = $1 RETURNING {_COLUMNS}""",
        outbox_id,
    )
    await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, after["kind"])
    shown_before, shown_after = public(before), public(after)
    await audit.record(conn, actor, "replay", "outbox", outbox_id, shown_before, shown_after)
    return shown_after
