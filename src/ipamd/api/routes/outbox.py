"""/outbox: the Work view (Work → DNS, Work → Webhooks, Work → Alerts), its count and Replay.

List, count and read: viewer and up. Replay (a failed row is delivered again), one row or
every failed row the list's filters select: operator and up.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ipamd.api import paging
from ipamd.api.instant import Instant
from ipamd.api.router import Query, RequestContext, Router
from ipamd.api.schemas import Page
from ipamd.outbox import topics, work

router = Router("outbox")


class OutboxFilters(Query):
    """The list's filters: also what a count and a bulk Replay select."""

    kind: Literal["webhook", "dns", "alert"] | None = Field(
        default=None, description="webhook, dns or alert")
    state: Literal["pending", "retrying", "delivered", "failed"] | None = None
    topic: str | None = Field(default=None, description="one topic, e.g. lease.granted")
    webhook_id: uuid.UUID | None = None
    from_: Instant | None = Field(
        default=None, alias="from", description="rows created at or after this time"
    )
    to: Instant | None = Field(default=None, description="rows created before this time")

    @field_validator("topic")
    @classmethod
    def _known_topic(cls, value: str | None) -> str | None:
        if value is not None and value not in topics.KNOWN:
            raise ValueError(f"unknown topic; known topics: {', '.join(topics.KNOWN)}")
        return value

    def filters(self) -> work.Filters:
        return work.Filters(kind=self.kind, state=self.state, topic=self.topic,
                            webhook_id=self.webhook_id, created_from=self.from_,
                            created_to=self.to)


class OutboxQuery(paging.PageQuery, OutboxFilters):
    pass


class ReplayQuery(OutboxFilters):
    state: Literal["failed"] | None = Field(
        default=None, description="only failed rows are ever replayed")


class OutboxCount(BaseModel):
    count: int = Field(description="rows the filters select")
    replayable: int = Field(description="of them, rows Replay would take (failed, and their "
                            "webhook still exists)")


class ReplayResult(BaseModel):
    replayed: int = Field(description="rows queued again, each audited as a single Replay")
    more: bool = Field(description=f"more rows remain (at most {work.REPLAY_BATCH} are taken "
                       "per call): call again")


class OutboxRow(BaseModel):
    id: uuid.UUID = Field(description="also the X-Service-Delivery header of its requests")
    kind: str
    topic: str
    event_id: uuid.UUID
    webhook_id: uuid.UUID | None
    webhook_name: str | None = Field(description="the webhook's name (null once it is deleted)")
    target: str | None = Field(description="the DNS name changed (kind dns)")
    dns: dict[str, Any] | None = Field(
        default=None, description="kind dns: server_id, op, name, ip/zones or the static "
        "record before/after; the server's answer (REFUSED, NOTAUTH, BADSIG, ...) is "
        "last_error and each attempt's response")
    state: str = Field(description="pending, retrying, delivered or failed")
    attempts: int = Field(description="attempts so far (restarts at 0 on Replay)")
    in_flight: bool = Field(description="a worker holds the row right now")
    replayable: bool = Field(description="Replay would be accepted: the row failed and its "
                             "webhook (kind webhook) still exists")
    next_attempt_at: dt.datetime | None = Field(description="when it is tried next (queued)")
    last_status: int | None = Field(description="the receiver's last HTTP status")
    last_error: str | None
    delivered_at: dt.datetime | None
    created_at: dt.datetime
    updated_at: dt.datetime


class OutboxAttempt(BaseModel):
    attempt: int
    at: dt.datetime
    duration_ms: float
    status: int | None
    error: str | None = Field(description="null when the attempt succeeded")
    response: str | None = Field(description="the start of the receiver's reply")
    node: str | None = Field(description="the appliance node that made the attempt")


class OutboxDetail(OutboxRow):
    payload: Any = Field(description="the event body: lease fields, or the audit entry")
    history: list[OutboxAttempt] = Field(description="every attempt, oldest first")


@router.route(
    "GET", "/outbox", role="viewer", summary="Deliveries (webhook and DNS), newest first",
    query=OutboxQuery, response=Page[OutboxRow], errors=(400, 401, 403),
)
async def list_outbox(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(OutboxQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    before = paging.after(q, [uuid.UUID])
    rows = await ctx.run(work.list_page, q.filters(), before[0] if before else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["id"]])


@router.route(
    "GET", "/outbox/count", role="viewer",
    summary="How many deliveries the list's filters select, and how many Replay would take",
    query=OutboxFilters, response=OutboxCount, errors=(400, 401, 403),
)
async def count_outbox(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(OutboxFilters)
    return await ctx.run(work.count, q.filters())


@router.route(
    "POST", "/outbox/replay", role="operator",
    summary="Replay every failed delivery the list's filters select (in batches: see more)",
    query=ReplayQuery, response=ReplayResult, errors=(400, 401, 403),
)
async def replay_all_outbox(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(ReplayQuery)
    return await ctx.tx(work.replay_all, ctx.actor, q.filters())


@router.route(
    "GET", "/outbox/{outbox_id}", role="viewer",
    summary="One delivery with its payload and attempt history",
    response=OutboxDetail, errors=(401, 403, 404),
)
async def get_outbox(ctx: RequestContext, outbox_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(work.get, outbox_id)


@router.route(
    "POST", "/outbox/{outbox_id}/replay", role="operator",
    summary="Replay a failed delivery: it is queued again with a fresh attempt budget",
    response=OutboxRow, errors=(401, 403, 404, 409),
)
async def replay_outbox(ctx: RequestContext, outbox_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(work.replay, ctx.actor, outbox_id)
