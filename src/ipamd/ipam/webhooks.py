"""Webhooks: where events are delivered. Admin-only rows; every change is audited.

Values arrive validated (api/routes/webhooks.py: URL rules with name resolution, secret_ref
syntax, topics). The audit entry leaves the secret references out: audit entries are readable
by viewers and go out as ipam.audit events, and a reference reveals where the secret lives.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.outbox import queue, topics

_COLUMNS = "id, name, url, secret_ref, previous_secret_ref, topics, enabled, created_at, updated_at"
REDACTED = "(redacted)"  # stands in for a secret reference in audit entries
# Columns a PATCH may change (the keys are fixed here, never taken from input).
UPDATABLE = ("name", "url", "secret_ref", "previous_secret_ref", "topics", "enabled")


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "url": row["url"],
        "secret_ref": row["secret_ref"],
        "previous_secret_ref": row["previous_secret_ref"],
        "topics": topics.render(list(row["topics"])),
        "enabled": row["enabled"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def audited(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    shown = public(row)
    shown["secret_ref"] = REDACTED
    shown["previous_secret_ref"] = None if row["previous_secret_ref"] is None else REDACTED
    return shown


def _duplicate_name(name: str) -> Exception:
    return conflict(f"name: a webhook named {name!r} already exists")


def _check_pair(secret_ref: str, previous: str | None) -> None:
    if previous is not None and previous == secret_ref:
        raise invalid("previous_secret_ref", "must differ from secret_ref")


async def create(
    conn: asyncpg.Connection, actor: str, values: dict[str, Any]
) -> dict[str, Any]:
    _check_pair(values["secret_ref"], values.get("previous_secret_ref"))
    try:
        # A savepoint, so a duplicate name leaves the surrounding transaction usable.
        async with conn.transaction():
            row = await conn.fetchrow(
                f"""INSERT INTO webhooks (name, url, secret_ref, previous_secret_ref, topics,
                                          enabled)
                    VALUES ($1, $2, $3, $4, $5, $6) RETURNING {_COLUMNS}""",
                values["name"], values["url"], values["secret_ref"],
                values.get("previous_secret_ref"), values["topics"], values.get("enabled", True),
            )
    except asyncpg.UniqueViolationError:
        raise _duplicate_name(values["name"]) from None
    await audit.record(conn, actor, "create", "webhook", row["id"], None, audited(row))
    return public(row)


async def get(conn: asyncpg.Connection, webhook_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM webhooks WHERE id = $1", webhook_id)
    if row is None:
        raise not_found("webhook", str(webhook_id))
    return public(row)


async def list_page(
    conn: asyncpg.Connection, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM webhooks WHERE ($1::uuid IS NULL OR id > $1)
            ORDER BY id LIMIT $2""",
        after, limit + 1,
    )
    return [public(r) for r in rows]


async def update(
    conn: asyncpg.Connection, actor: str, webhook_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    before = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM webhooks WHERE id = $1 FOR UPDATE", webhook_id
    )
    if before is None:
        raise not_found("webhook", str(webhook_id))
    columns = [name for name in UPDATABLE if name in changes]
    if not columns:
        return public(before)
    _check_pair(
        changes.get("secret_ref", before["secret_ref"]),
        changes.get("previous_secret_ref", before["previous_secret_ref"]),
    )
    assignments = ", ".join(f"{name} = ${i}" for i, name in enumerate(columns, start=2))
    try:
        async with conn.transaction():
            after = await conn.fetchrow(
                f"""UPDATE webhooks SET {assignments}, updated_at = now() WHERE id = $1
                    RETURNING {_COLUMNS}""",
                webhook_id, *(changes[name] for name in columns),
            )
    except asyncpg.UniqueViolationError:
        raise _duplicate_name(changes["name"]) from None
    await audit.record(
        conn, actor, "update", "webhook", webhook_id, audited(before), audited(after)
    )
    return public(after)


async def delete(conn: asyncpg.Connection, actor: str, webhook_id: uuid.UUID) -> None:
    """Delete; its queued deliveries become failed, the delivery history stays."""
    before = await conn.fetchrow(
        f"DELETE FROM webhooks WHERE id = $1 RETURNING {_COLUMNS}", webhook_id
    )
    if before is None:
        raise not_found("webhook", str(webhook_id))
    await queue.fail_queued_for_webhook(conn, webhook_id)
    await audit.record(conn, actor, "delete", "webhook", webhook_id, audited(before), None)
