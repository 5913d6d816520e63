"""/webhooks: create, list, read, update, delete — admin only, reads included
(docs/security.md: secret_ref reveals where the secret lives, so operator and viewer get 403)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes.ipam_fields import Id, Name
from ipamd.api.schemas import Page
from ipamd.outbox import webhooks

router = Router("webhooks")


class _WebhookChecks(Body):
    """The field rules (outbox.webhooks) for create and update; a field left out is not checked."""

    @field_validator("url", check_fields=False)
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        return None if value is None else webhooks.check_url(value)

    @field_validator("secret_ref", "previous_secret_ref", check_fields=False)
    @classmethod
    def _check_secret(cls, value: str | None) -> str | None:
        return None if value is None else webhooks.check_secret_ref(value)

    @field_validator("topics", check_fields=False)
    @classmethod
    def _check_topics(cls, value: str | None) -> str | None:
        return None if value is None else webhooks.check_topics(value)


class WebhookCreate(_WebhookChecks):
    name: Name = Field(description="a label for people")
    url: str = Field(
        min_length=1, max_length=2048,
        description="https URL of the receiver; plain http only for localhost",
    )
    secret_ref: str = Field(
        description="env:<VARIABLE_NAME> or file:<absolute_path> (mode 0600); never the secret"
    )
    previous_secret_ref: str | None = Field(
        default=None,
        description="during a rotation, the old secret's reference: the Standard Webhooks header "
        "carries both signatures; X-Service-Signature only the current one (docs/webhooks.md)",
    )
    topics: str = Field(
        default="*", description="comma-separated topics (lease.granted, ..., ipam.audit) or *"
    )
    enabled: bool = Field(default=True, description="false: no new deliveries are queued")
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out")


class WebhookUpdate(_WebhookChecks):
    """Only the fields given change; previous_secret_ref: null ends a rotation."""

    name: Name | None = None
    url: str | None = Field(default=None, min_length=1, max_length=2048)
    secret_ref: str | None = None
    previous_secret_ref: str | None = None
    topics: str | None = None
    enabled: bool | None = None


class WebhookOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    url: str
    secret_ref: str
    previous_secret_ref: str | None
    topics: str = Field(description="comma-separated topics, or *")
    enabled: bool
    created_at: dt.datetime
    updated_at: dt.datetime


@router.route(
    "POST", "/webhooks", role="admin", summary="Create a webhook",
    body=WebhookCreate, response=WebhookOut, status=201, idempotent=True,
    errors=(401, 403, 409, 422),
)
async def create_webhook(ctx: RequestContext) -> Reply:
    body = ctx.body_as(WebhookCreate)
    await webhooks.vet_host(ctx.state.config.outbox.hosts_file, body.url)
    return await ctx.create(webhooks.create, ctx.actor, webhooks.create_values(body.model_dump()))


@router.route(
    "GET", "/webhooks", role="admin", summary="List webhooks",
    query=paging.TenantPageQuery, response=Page[WebhookOut], errors=(400, 401, 403),
)
async def list_webhooks(ctx: RequestContext) -> dict[str, Any]:
    query = ctx.query_as(paging.TenantPageQuery)
    limit = paging.limit_of(query, ctx.state.config.limits)
    after = paging.after(query, [uuid.UUID])
    rows = await ctx.run(webhooks.list_page, query.tenant_id, after[0] if after else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["id"]])


@router.route(
    "GET", "/webhooks/{webhook_id}", role="admin", summary="Read a webhook",
    response=WebhookOut, errors=(401, 403, 404),
)
async def get_webhook(ctx: RequestContext, webhook_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(webhooks.get, webhook_id)


@router.route(
    "PATCH", "/webhooks/{webhook_id}", role="admin", summary="Change a webhook",
    body=WebhookUpdate, response=WebhookOut, errors=(401, 403, 404, 409, 422),
)
async def update_webhook(ctx: RequestContext, webhook_id: uuid.UUID) -> dict[str, Any]:
    body = ctx.body_as(WebhookUpdate)
    changes = webhooks.update_changes(body.model_dump(include=body.model_fields_set))
    if "url" in changes:
        await webhooks.vet_host(ctx.state.config.outbox.hosts_file, changes["url"])
    return await ctx.tx(webhooks.update, ctx.actor, webhook_id, changes)


@router.route(
    "DELETE", "/webhooks/{webhook_id}", role="admin",
    summary="Delete a webhook (its queued deliveries become failed; history stays)",
    status=204, errors=(401, 403, 404),
)
async def delete_webhook(ctx: RequestContext, webhook_id: uuid.UUID) -> Reply:
    await ctx.tx(webhooks.delete, ctx.actor, webhook_id)
    return Reply(None, 204)
