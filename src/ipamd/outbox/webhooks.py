"""Webhooks, the resource: where events are delivered. Admin-only rows; every change audited.

Everything about a webhook row lives here: the field rules (``check_*``: name, URL with the
SSRF guard, secret reference syntax, topics), the host vetting done at create/update
(``vet_host``), the request values turned into row values (``create_values``,
``update_changes``) and the CRUD units. The route (api/routes/webhooks.py) only declares
the fields. One delivery of a webhook is ``webhook_delivery``.

The audit entry leaves the secret references out (core/secret_locations: audit entries are
readable by viewers and go out as ipam.audit events, and a reference reveals where the secret
lives).
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import trio

from ipamd.core import audit
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.core.rows import fetch_one
from ipamd.core.secret_locations import redacted
from ipamd.core.tenancy import tenant_for_create
from ipamd.outbox import queue, secrets, topics
from ipamd.outbox.urlguard import ResolveError, Resolver, UrlRefused
from ipamd.outbox.urlguard import check_url as _check_url

_COLUMNS = ("id, tenant_id, name, url, secret_ref, previous_secret_ref, topics, enabled, "
            "created_at, updated_at")
# Columns a PATCH may change (the keys are fixed here, never taken from input).
UPDATABLE = ("name", "url", "secret_ref", "previous_secret_ref", "topics", "enabled")


# Resolving the host at create time is a courtesy (delivery checks again); never wait long.
CREATE_RESOLVE_TIMEOUT_SECONDS = 3.0


# ---- field rules: each returns the value or raises ValueError (the caller names the field)

def check_url(value: str) -> str:
    try:
        _check_url(value)
    except UrlRefused as error:
        raise ValueError(str(error).removeprefix("url: ")) from None
    return value


def check_secret_ref(value: str) -> str:
    secrets.parse_ref(value)
    return value


def check_topics(value: str) -> str:
    return topics.render(topics.parse(value))


async def vet_host(hosts_file: str, url: str) -> None:
    """A name that resolves to a forbidden address is refused now (and at every delivery)."""
    target = _check_url(url)
    if target.literal is not None:
        return
    resolver = Resolver(hosts_file)
    with trio.move_on_after(CREATE_RESOLVE_TIMEOUT_SECONDS):
        try:
            await resolver.vetted(target.host, target.port)
        except UrlRefused as error:
            raise invalid("url", str(error)) from None
        except ResolveError:
            pass  # the receiver's name may not exist yet; delivery resolves again


def create_values(fields: dict[str, Any]) -> dict[str, Any]:
    """Checked request fields → the row's values (topics as a list)."""
    return {**fields, "topics": topics.parse(fields["topics"])}


def update_changes(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields a PATCH gave → the row's changes; only previous_secret_ref may be null."""
    changes: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None and name != "previous_secret_ref":
            raise invalid(name, "must not be null")
        changes[name] = value
    if "topics" in changes:
        changes["topics"] = topics.parse(changes["topics"])
    return changes


# ---- rows

def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "tenant_id": row["tenant_id"],
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
    shown: dict[str, Any] = redacted(public(row))
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
    tenant_id = await tenant_for_create(conn, values.get("tenant_id"))
    try:
        # A savepoint, so a duplicate name leaves the surrounding transaction usable.
        async with conn.transaction():
            row = await fetch_one(
                conn,
                f"""INSERT INTO webhooks (name, url, secret_ref, previous_secret_ref, topics,
                                          enabled, tenant_id)
                    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {_COLUMNS}""",
                values["name"], values["url"], values["secret_ref"],
                values.get("previous_secret_ref"), values["topics"], values.get("enabled", True),
                tenant_id,
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
    conn: asyncpg.Connection, tenant_id: uuid.UUID | None, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM webhooks WHERE ($1::uuid IS NULL OR id > $1)
              AND ($3::uuid IS NULL OR tenant_id = $3)
            ORDER BY id LIMIT $2""",
        after, limit + 1, tenant_id,
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
            after = await fetch_one(
                conn,
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
