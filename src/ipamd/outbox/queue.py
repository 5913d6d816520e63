"""The outbox queue in SQL, as the scheduler's workers use it (asyncio side: each function is
one unit of database work). The operator's view of the same rows is ``work``.

claim            take due rows with FOR UPDATE SKIP LOCKED; the claim pushes the due time
                 out by the claim timeout, so a crashed worker's rows come back by themselves
record_outcomes  apply a batch of outcomes (state, backoff, history) in one statement
fail_queued_for_webhook  a deleted webhook's queued rows;  purge  retention
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

CHANNEL = "ipamd_outbox"
KINDS = ("webhook", "dns", "alert")
STATES = ("pending", "retrying", "delivered", "failed")
QUEUED = ("pending", "retrying")


@dataclass(frozen=True)
class Job:
    """A claimed row with everything its delivery needs."""

    id: uuid.UUID
    kind: str
    topic: str
    event_id: uuid.UUID
    attempt: int  # this attempt's number, 1-based
    claim: uuid.UUID
    body: str  # the event payload as JSON text, exactly as stored: the request body
    webhook_id: uuid.UUID | None
    target: str | None
    url: str | None
    secret_ref: str | None
    previous_secret_ref: str | None
    webhook_state: str  # ok | disabled | deleted (webhook kind only)
    dns: Any = None  # kind dns: the change (server, name, records), as the fan-out wrote it

    @property
    def payload(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Outcome:
    job_id: uuid.UUID
    claim: uuid.UUID
    attempt: int
    ok: bool
    started: dt.datetime
    duration_ms: float
    status: int | None = None
    error: str | None = None
    response: str | None = None
    delay_seconds: float | None = None  # when to try again; None with ok or final
    final: bool = False  # no retry whatever attempts remain (the target is gone)


_CLAIM = """
WITH due AS (
    SELECT id FROM outbox
    WHERE state IN ('pending', 'retrying') AND next_attempt_at <= now()
      AND kind = ANY ($1::text[])
    ORDER BY next_attempt_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE outbox o
    SET claim = $3, claimed_by = $5, attempts = o.attempts + 1,
        next_attempt_at = now() + make_interval(secs => $4), updated_at = now()
    FROM due WHERE o.id = due.id
    RETURNING o.id, o.kind, o.topic, o.event_id, o.webhook_id, o.target, o.attempts,
              o.next_attempt_at, o.dns
)
SELECT c.*, e.payload::text AS body, w.url, w.secret_ref, w.previous_secret_ref,
       CASE WHEN c.kind <> 'webhook' THEN 'ok'
            WHEN w.id IS NULL THEN 'deleted'
            WHEN NOT w.enabled THEN 'disabled'
            ELSE 'ok' END AS webhook_state
FROM claimed c
JOIN events e ON e.id = c.event_id
LEFT JOIN webhooks w ON w.id = c.webhook_id
ORDER BY c.next_attempt_at, c.id
"""


async def claim(
    conn: asyncpg.Connection,
    kinds: list[str],
    limit: int,
    claim_timeout: float,
    node: str,
) -> list[Job]:
    """Claim up to `limit` due rows; run it in a transaction (the row locks end at commit)."""
    token = uuid.uuid4()
    rows = await conn.fetch(_CLAIM, kinds, limit, token, claim_timeout, node)
    return [
        Job(
            id=r["id"], kind=r["kind"], topic=r["topic"], event_id=r["event_id"],
            attempt=r["attempts"], claim=token, body=r["body"],
            webhook_id=r["webhook_id"], target=r["target"], url=r["url"],
            secret_ref=r["secret_ref"], previous_secret_ref=r["previous_secret_ref"],
            webhook_state=r["webhook_state"], dns=r["dns"],
        )
        for r in rows
    ]


_RECORD = """
WITH o AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::bool[], $5::bool[],
                         $6::timestamptz[], $7::float8[], $8::int[], $9::text[], $10::text[],
                         $11::float8[])
        AS o(id, claim, attempt, ok, final, started, duration_ms, status, error, response,
             delay)
), history AS (
    INSERT INTO outbox_attempts (outbox_id, attempt, at, duration_ms, status, error, response,
                                 node)
    SELECT o.id, o.attempt, o.started, o.duration_ms, o.status, o.error, o.response, $13
    FROM o WHERE EXISTS (SELECT 1 FROM outbox b WHERE b.id = o.id)
)
UPDATE outbox b SET
    state = CASE WHEN o.ok THEN 'delivered'
                 WHEN o.final OR b.attempts >= $12 THEN 'failed'
                 ELSE 'retrying' END,
    next_attempt_at = CASE WHEN o.ok OR o.final OR b.attempts >= $12 THEN now()
                           ELSE now() + make_interval(secs => o.delay) END,
    delivered_at = CASE WHEN o.ok THEN now() ELSE b.delivered_at END,
    last_status = o.status,
    last_error = o.error,
    claim = NULL,
    claimed_by = NULL,
    updated_at = now()
FROM o
WHERE b.id = o.id AND b.claim = o.claim
RETURNING b.id, b.state
"""


TEXT_LIMIT = 2000


def _text(value: str | None) -> str | None:
    """Safe for a text column: Postgres refuses NUL, and nothing here needs to be long."""
    return None if value is None else value.replace("\x00", "\ufffd")[:TEXT_LIMIT]


async def record_outcomes(
    conn: asyncpg.Connection, outcomes: list[Outcome], max_attempts: int, node: str
) -> dict[uuid.UUID, str]:
    """Apply outcomes; a row whose claim was taken over by another worker keeps its state
    (its attempt still goes into the history). Returns the new state of each row updated."""
    if not outcomes:
        return {}
    rows = await conn.fetch(
        _RECORD,
        [o.job_id for o in outcomes],
        [o.claim for o in outcomes],
        [o.attempt for o in outcomes],
        [o.ok for o in outcomes],
        [o.final for o in outcomes],
        [o.started for o in outcomes],
        [o.duration_ms for o in outcomes],
        [o.status for o in outcomes],
        [_text(o.error) for o in outcomes],
        [_text(o.response) for o in outcomes],
        [o.delay_seconds if o.delay_seconds is not None else 0.0 for o in outcomes],
        max_attempts,
        node,
    )
    return {r["id"]: r["state"] for r in rows}


async def fail_queued_for_webhook(conn: asyncpg.Connection, webhook_id: uuid.UUID) -> int:
    """A deleted webhook's queued rows become failed (kept for the Work view)."""
    result = await conn.execute(
        """UPDATE outbox SET state = 'failed', last_error = 'the webhook was deleted',
               claim = NULL, claimed_by = NULL, updated_at = now()
           WHERE webhook_id = $1 AND state IN ('pending', 'retrying')""",
        webhook_id,
    )
    return int(result.split()[-1])


async def purge(conn: asyncpg.Connection, retention_days: int, batch: int = 5000) -> int:
    """Delete finished rows past retention, then events no row refers to, in batches."""
    total = 0
    for statement in (
        """DELETE FROM outbox WHERE id IN (
               SELECT id FROM outbox WHERE state IN ('delivered', 'failed')
                 AND updated_at < now() - make_interval(days => $1) LIMIT $2)""",
        """DELETE FROM events WHERE id IN (
               SELECT e.id FROM events e
               WHERE e.created_at < now() - make_interval(days => $1)
                 AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.id)
                 AND NOT EXISTS (SELECT 1 FROM dns_staged d WHERE e.id = ANY (d.event_ids))
               LIMIT $2)""",
    ):
        while True:
            count = int((await conn.execute(statement, retention_days, batch)).split()[-1])
            total += count
            if count < batch:
                break
    return total
