"""One webhook delivery (docs/webhooks.md): signed POST, no redirects, bounded time and
response size.

The HTTP call happens outside any transaction. Every failure becomes an Outcome with a
last_error an operator can act on; secrets never appear in it.
"""

from __future__ import annotations

import http
import time
from dataclasses import dataclass

import trio

from ipamd import __version__
from ipamd.config import OutboxConfig
from ipamd.outbox import signing
from ipamd.outbox.attempt import Attempt
from ipamd.outbox.backoff import Backoff
from ipamd.outbox.client import Client, HttpError
from ipamd.outbox.queue import Job, Outcome
from ipamd.outbox.secrets import SecretError, resolve
from ipamd.outbox.urlguard import ResolveError, Target, UrlRefused, check_url

USER_AGENT = f"ipamd-webhook/{__version__}"
# Kept in the attempt history: enough to read a receiver's error message.
RESPONSE_EXCERPT_CHARS = 512


def body_of(job: Job) -> bytes:
    """Lease topics carry the lease fields; ipam.audit carries the audit entry (docs/webhooks.md).

    The stored JSON text as it is: no decode and re-encode per attempt."""
    return job.body.encode()


def _reason(status: int, given: str) -> str:
    if given:
        return given
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _excerpt(body: bytes) -> str | None:
    if not body:
        return None
    text = body[: RESPONSE_EXCERPT_CHARS * 4].decode("utf-8", errors="replace")
    return text.replace("\x00", "\ufffd")[:RESPONSE_EXCERPT_CHARS]  # text columns refuse NUL


@dataclass
class WebhookDeliverer:
    client: Client
    config: OutboxConfig
    backoff: Backoff

    async def deliver(self, job: Job) -> Outcome:
        attempt = Attempt(job, self.backoff)
        if job.webhook_state != "ok" or job.url is None or job.secret_ref is None:
            state = "was deleted" if job.webhook_state == "deleted" else "is disabled"
            return attempt.final(f"webhook {job.webhook_id} {state}")
        try:
            # The rules may have tightened since the webhook was saved: check again.
            target = check_url(job.url)
            secrets = [resolve(job.secret_ref)]
            if job.previous_secret_ref:
                secrets.append(resolve(job.previous_secret_ref))
        except (UrlRefused, SecretError) as error:
            return attempt.retry(str(error))

        body = body_of(job)
        headers = signing.headers(
            secrets, delivery_id=str(job.id), topic=job.topic, timestamp=int(time.time()),
            body=body,
        )
        headers["User-Agent"] = USER_AGENT
        timeout = self.config.request_timeout_seconds
        result: Outcome | None = None
        # One deadline over the whole exchange (resolve, connect, TLS, send, read): a receiver
        # trickling a byte at a time holds a worker no longer than this.
        with trio.move_on_after(timeout):
            result = await self._post(attempt, target, body, headers)
        if result is None:
            return attempt.retry(f"no complete response within {timeout:g} s")
        return result

    async def _post(
        self, attempt: Attempt, target: Target, body: bytes, headers: dict[str, str]
    ) -> Outcome:
        try:
            response = await self.client.post(
                target, headers, body, self.config.max_response_bytes
            )
        except UrlRefused as error:
            return attempt.retry(f"refused at delivery: {error}")
        except ResolveError as error:
            return attempt.retry(str(error))
        except HttpError as error:
            return attempt.retry(str(error)[:500])
        status = response.status
        excerpt = _excerpt(response.body)
        if 200 <= status < 300:
            return attempt.delivered(status, excerpt)
        if 300 <= status < 400:
            where = response.headers.get("location", "")[:200]
            return attempt.retry(
                f"HTTP {status} redirect (not followed) to {where!r}", status, excerpt
            )
        return attempt.retry(
            f"HTTP {status} {_reason(status, response.reason)}".strip(), status, excerpt,
            response.headers.get("retry-after"),
        )
