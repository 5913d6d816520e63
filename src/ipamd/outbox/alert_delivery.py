"""One alert delivery (kind ``alert``): an alert opening or clearing to one alert destination.

The row's target is the destination id; its settings are read at each attempt, so a fix to a
destination applies to its queued rows. Kinds (no topic, no HMAC; docs/operations-monitoring.md):
  alertmanager  POST <url>/api/v2/alerts, labels + annotations, endsAt on clear
  pager         PagerDuty Events API v2: trigger / resolve with the alert id as dedup_key
  webhook       POST the alert as JSON
  smtp          a plain-text mail (smtplib in a worker thread, to a vetted address)
HTTP kinds go through the outbox client and its SSRF guard; the mail host is vetted the same
way before connecting. Failures retry with the outbox backoff; nothing waits on them.
"""

from __future__ import annotations

import json
import smtplib
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import asyncpg
import trio

from ipamd import __version__
from ipamd.config import OutboxConfig
from ipamd.outbox.attempt import Attempt
from ipamd.outbox.backoff import Backoff
from ipamd.outbox.client import Client, HttpError
from ipamd.outbox.queue import Job, Outcome
from ipamd.outbox.secrets import SecretError, resolve
from ipamd.outbox.urlguard import ResolveError, Resolver, UrlRefused, check_url
from ipamd.outbox.webhook_delivery import _excerpt

USER_AGENT = f"ipamd-alert/{__version__}"
Fetch = Callable[[uuid.UUID], Awaitable[asyncpg.Record | None]]


async def fetch_destination(conn: asyncpg.Connection, destination_id: uuid.UUID
                            ) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT id, name, kind, settings::text AS settings, enabled FROM alert_destinations"
        " WHERE id = $1", destination_id)


def _labels(alert: dict[str, Any]) -> dict[str, str]:
    return {"alertname": f"ipamd_{alert['rule']}", "rule": alert["rule"],
            "subject": alert["subject"], "severity": alert["severity"], "service": "ipamd"}


def alertmanager_body(alert: dict[str, Any]) -> list[dict[str, Any]]:
    item: dict[str, Any] = {
        "labels": _labels(alert),
        "annotations": {"summary": alert["summary"], "alert_id": alert["id"],
                        "value": str(alert["value"]), "threshold": str(alert["threshold"])},
        "startsAt": alert["opened_at"],
    }
    if alert["cleared_at"]:
        item["endsAt"] = alert["cleared_at"]
    return [item]


def pager_body(alert: dict[str, Any], routing_key: str) -> dict[str, Any]:
    cleared = bool(alert["cleared_at"])
    body: dict[str, Any] = {"routing_key": routing_key,
                            "event_action": "resolve" if cleared else "trigger",
                            "dedup_key": f"ipamd-{alert['id']}"}
    if not cleared:
        body["payload"] = {"summary": alert["summary"][:1024], "source": "ipamd",
                           "severity": alert["severity"], "component": alert["rule"],
                           "custom_details": {"subject": alert["subject"],
                                              "value": alert["value"],
                                              "threshold": alert["threshold"]}}
    return body


def mail(alert: dict[str, Any], settings: dict[str, Any]) -> EmailMessage:
    msg = EmailMessage()
    state = "CLEARED" if alert["cleared_at"] else "OPEN"
    msg["Subject"] = f"[ipamd] {state}: {alert['summary']}"[:200]
    msg["From"] = settings["from"]
    msg["To"] = ", ".join(settings["to"])
    msg.set_content(json.dumps(alert, indent=2))
    return msg


def _send_mail(address: str, host: str, settings: dict[str, Any], msg: EmailMessage,
               password: str | None, timeout: float) -> None:
    with smtplib.SMTP(timeout=timeout) as smtp:
        smtp.connect(address, settings["port"])
        smtp._host = host  # type: ignore[attr-defined]  # STARTTLS checks the name, not the IP
        smtp.ehlo()
        if settings["starttls"]:
            smtp.starttls(context=ssl.create_default_context())
            smtp.ehlo()
        if settings.get("username"):
            smtp.login(settings["username"], password or "")
        smtp.send_message(msg)


@dataclass
class AlertDeliverer:
    client: Client
    config: OutboxConfig
    backoff: Backoff
    fetch: Fetch
    resolver: Resolver

    async def deliver(self, job: Job) -> Outcome:
        attempt = Attempt(job, self.backoff)
        try:
            destination_id = uuid.UUID(job.target or "")
        except ValueError:
            return attempt.final("no alert destination on this row")
        row = await self.fetch(destination_id)
        if row is None:
            return attempt.final(f"alert destination {destination_id} was deleted")
        if not row["enabled"]:
            return attempt.final(f"alert destination {row['name']} is disabled")
        settings = json.loads(row["settings"])
        alert = job.payload
        result: Outcome | None = None
        with trio.move_on_after(self.config.request_timeout_seconds):
            try:
                if row["kind"] == "smtp":
                    result = await self._smtp(attempt, settings, alert)
                elif row["kind"] == "alertmanager":
                    url = settings["url"].rstrip("/") + "/api/v2/alerts"
                    result = await self._post(attempt, url, alertmanager_body(alert))
                elif row["kind"] == "pager":
                    key = resolve(settings["routing_key_ref"]).decode()
                    result = await self._post(attempt, settings["url"], pager_body(alert, key))
                else:
                    event = "cleared" if alert["cleared_at"] else "opened"
                    result = await self._post(attempt, settings["url"],
                                              {"event": event, "alert": alert})
            except SecretError as error:
                return attempt.retry(str(error))
        if result is None:
            return attempt.retry(
                f"no complete answer within {self.config.request_timeout_seconds:g} s")
        return result

    async def _post(self, attempt: Attempt, url: str, body: Any) -> Outcome:
        data = json.dumps(body, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        try:
            target = check_url(url)
            response = await self.client.post(target, headers, data,
                                              self.config.max_response_bytes)
        except (UrlRefused, ResolveError) as error:
            return attempt.retry(str(error))
        except HttpError as error:
            return attempt.retry(str(error)[:500])
        excerpt = _excerpt(response.body)
        if 200 <= response.status < 300:
            return attempt.delivered(response.status, excerpt)
        return attempt.retry(f"HTTP {response.status}", response.status, excerpt,
                             response.headers.get("retry-after"))

    async def _smtp(self, attempt: Attempt, settings: dict[str, Any], alert: dict[str, Any]
                    ) -> Outcome:
        host = settings["host"]
        try:
            addresses = await self.resolver.vetted(host, settings["port"])
        except (UrlRefused, ResolveError) as error:
            return attempt.retry(str(error))
        password = (resolve(settings["password_ref"]).decode()
                    if settings.get("password_ref") else None)
        msg = mail(alert, settings)
        try:
            await trio.to_thread.run_sync(
                _send_mail, str(addresses[0]), host, settings, msg, password,
                self.config.request_timeout_seconds, abandon_on_cancel=True)
        except (smtplib.SMTPException, OSError, ssl.SSLError) as error:
            # smtplib's messages hold the server's reply, never our credentials.
            return attempt.retry(f"smtp: {type(error).__name__}: {error}"[:500])
        return attempt.delivered(None, f"mail accepted by {host}")
