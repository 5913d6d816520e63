"""Alert destinations (admin): where alert openings and clearings are sent
(docs/operations-monitoring.md).

Kinds and their settings (no topic, no HMAC):
  smtp          host, port, starttls, from, to[], username?, password_ref?
  alertmanager  url (the Alertmanager base URL; alerts go to <url>/api/v2/alerts)
  pager         url (PagerDuty Events API v2 enqueue URL), routing_key_ref
  webhook       url (a generic JSON POST)
URLs obey the webhook SSRF rules (outbox.urlguard); credentials are secret_refs only.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.core.rows import fetch_one
from ipamd.core.secret_locations import redacted
from ipamd.core.tenancy import tenant_for_create
from ipamd.outbox import secrets
from ipamd.outbox.urlguard import UrlRefused, check_url

KINDS = ("smtp", "alertmanager", "pager", "webhook")
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
_EMAIL = re.compile(r"^[^@\s<>\"',;]{1,64}@[A-Za-z0-9.-]{1,253}$")
_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}$|^[0-9a-fA-F:]{2,39}$")
_FIELDS = {
    "smtp": {"host", "port", "starttls", "from", "to", "username", "password_ref"},
    "alertmanager": {"url"},
    "pager": {"url", "routing_key_ref"},
    "webhook": {"url"},
}


def _url(value: Any) -> str:
    if not isinstance(value, str):
        raise invalid("settings.url", "must be a string")
    try:
        check_url(value)
    except UrlRefused as error:
        raise invalid("settings.url", str(error).removeprefix("url: ")) from None
    return value


def _ref(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise invalid(f"settings.{name}", "must be a string")
    try:
        secrets.parse_ref(value)
    except ValueError as error:
        raise invalid(f"settings.{name}", str(error)) from None
    return value


def _email(name: str, value: Any) -> str:
    if not isinstance(value, str) or not _EMAIL.match(value):
        raise invalid(f"settings.{name}", "must be an address like ops@example.net")
    return value


def check_settings(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The settings of one kind, complete and checked; a field the kind lacks is refused."""
    extra = set(raw) - _FIELDS[kind]
    if extra:
        raise invalid(f"settings.{sorted(extra)[0]}", f"not a field of kind {kind}")
    if kind == "smtp":
        host = raw.get("host")
        if not isinstance(host, str) or not _HOST.match(host):
            raise invalid("settings.host", "a host name or address is required")
        try:  # the SSRF address rules apply to a literal mail host as to a URL
            check_url(f"https://{host if ':' not in host else f'[{host}]'}/")
        except UrlRefused as error:
            raise invalid("settings.host", str(error).removeprefix("url: ")) from None
        port = raw.get("port", 587)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise invalid("settings.port", "must be a port number (1-65535)")
        starttls = raw.get("starttls", True)
        if not isinstance(starttls, bool):
            raise invalid("settings.starttls", "must be true or false")
        to = raw.get("to")
        if not isinstance(to, list) or not 1 <= len(to) <= 20:
            raise invalid("settings.to", "a list of 1 to 20 addresses")
        out: dict[str, Any] = {"host": host, "port": port, "starttls": starttls,
                               "from": _email("from", raw.get("from")),
                               "to": [_email(f"to[{i}]", v) for i, v in enumerate(to)]}
        username = raw.get("username")
        if username is not None:
            if not isinstance(username, str) or not 1 <= len(username) <= 256:
                raise invalid("settings.username", "1 to 256 characters")
            if "password_ref" not in raw:
                raise invalid("settings.password_ref", "required with a username")
            if not starttls:  # never a password in clear text over the network
                raise invalid("settings.starttls", "must be true when a username is given")
            out["username"] = username
            out["password_ref"] = _ref("password_ref", raw["password_ref"])
        elif "password_ref" in raw:
            raise invalid("settings.username", "required with a password_ref")
        return out
    if kind == "pager":
        return {"url": _url(raw.get("url", PAGERDUTY_URL)),
                "routing_key_ref": _ref("routing_key_ref", raw.get("routing_key_ref"))}
    return {"url": _url(raw.get("url"))}


def _out(row: asyncpg.Record) -> dict[str, Any]:
    out = dict(row)
    if isinstance(out["settings"], str):
        out["settings"] = json.loads(out["settings"])
    return out


def audited(row: dict[str, Any]) -> dict[str, Any]:
    """The destination as the audit log keeps it: viewers read the log, and a *_ref says
    where a secret lives, so it reads (redacted) there (core/secret_locations)."""
    shown: dict[str, Any] = redacted(row)
    return shown


async def create(conn: asyncpg.Connection, actor: str, values: dict[str, Any]) -> dict[str, Any]:
    settings = check_settings(values["kind"], values["settings"])
    tenant_id = await tenant_for_create(conn, values.get("tenant_id"))
    row = await conn.fetchrow(
        """INSERT INTO alert_destinations (name, kind, settings, enabled, tenant_id)
           VALUES ($1, $2, $3::jsonb, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING *""",
        values["name"], values["kind"], settings, values["enabled"], tenant_id,
    )
    if row is None:
        raise conflict(f"an alert destination named {values['name']!r} exists")
    out = _out(row)
    await audit.record(conn, actor, "create", "alert_destination", out["id"], None,
                       audited(out))
    return out


async def get(conn: asyncpg.Connection, destination_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow("SELECT * FROM alert_destinations WHERE id = $1", destination_id)
    if row is None:
        raise not_found("alert destination", str(destination_id))
    return _out(row)


async def list_page(conn: asyncpg.Connection, tenant_id: uuid.UUID | None,
                    after: uuid.UUID | None, limit: int) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT * FROM alert_destinations WHERE ($1::uuid IS NULL OR id > $1)
             AND ($3::uuid IS NULL OR tenant_id = $3)
           ORDER BY id LIMIT $2""", after, limit + 1, tenant_id)
    return [_out(r) for r in rows]


async def update(conn: asyncpg.Connection, actor: str, destination_id: uuid.UUID,
                 changes: dict[str, Any]) -> dict[str, Any]:
    row = await conn.fetchrow(
        "SELECT * FROM alert_destinations WHERE id = $1 FOR UPDATE", destination_id)
    if row is None:
        raise not_found("alert destination", str(destination_id))
    before = _out(row)
    settings = before["settings"]
    if "settings" in changes:
        settings = check_settings(before["kind"], changes["settings"])
    name = changes.get("name", before["name"])
    enabled = changes.get("enabled", before["enabled"])
    if name != before["name"] and await conn.fetchval(
            "SELECT 1 FROM alert_destinations WHERE name = $1", name):
        raise conflict(f"an alert destination named {name!r} exists")
    after = _out(await fetch_one(
        conn,
        """UPDATE alert_destinations SET name = $2, settings = $3::jsonb, enabled = $4,
               updated_at = now() WHERE id = $1 RETURNING *""",
        destination_id, name, settings, enabled))
    await audit.record(conn, actor, "update", "alert_destination", destination_id,
                       audited(before), audited(after))
    return after


async def delete(conn: asyncpg.Connection, actor: str, destination_id: uuid.UUID) -> None:
    row = await conn.fetchrow(
        "DELETE FROM alert_destinations WHERE id = $1 RETURNING *", destination_id)
    if row is None:
        raise not_found("alert destination", str(destination_id))
    # Its queued deliveries fail (kept for the Work view), as a deleted webhook's do.
    await conn.execute(
        """UPDATE outbox SET state = 'failed', last_error = 'the alert destination was deleted',
               claim = NULL, claimed_by = NULL, updated_at = now()
           WHERE kind = 'alert' AND target = $1 AND state IN ('pending', 'retrying')""",
        str(destination_id))
    await audit.record(conn, actor, "delete", "alert_destination", destination_id,
                       audited(_out(row)), None)
