"""/settings/alert-destinations: where alerts are sent (docs/operations-monitoring.md) —
admin only, reads included (settings name where credentials live)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes.ipam_fields import Id, Name
from ipamd.api.schemas import Page
from ipamd.ops import destinations

router = Router("alert destinations")
PATH = "/settings/alert-destinations"


class DestinationCreate(Body):
    name: Name
    kind: Literal["smtp", "alertmanager", "pager", "webhook"]
    settings: dict[str, Any] = Field(
        description="smtp: host, port, starttls, from, to, username?, password_ref?; "
        "alertmanager: url; pager: url?, routing_key_ref; webhook: url")
    enabled: bool = True
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out")


class DestinationPatch(Body):
    name: Name | None = None
    settings: dict[str, Any] | None = Field(default=None, description="replaces the settings")
    enabled: bool | None = None


class DestinationOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    kind: str
    settings: dict[str, Any]
    enabled: bool
    created_at: dt.datetime
    updated_at: dt.datetime


@router.route("POST", PATH, role="admin", summary="Create an alert destination",
              body=DestinationCreate, response=DestinationOut, status=201, idempotent=True,
              errors=(401, 403, 409, 422))
async def create_destination(ctx: RequestContext) -> Reply:
    return await ctx.create(destinations.create, ctx.actor, ctx.fields())


@router.route("GET", PATH, role="admin", summary="List alert destinations",
              query=paging.TenantPageQuery, response=Page[DestinationOut],
              errors=(400, 401, 403))
async def list_destinations(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(paging.TenantPageQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    after = paging.after(q, [uuid.UUID])
    rows = await ctx.run(destinations.list_page, q.tenant_id, after[0] if after else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["id"]])


@router.route("GET", PATH + "/{destination_id}", role="admin",
              summary="Read an alert destination", response=DestinationOut,
              errors=(401, 403, 404))
async def get_destination(ctx: RequestContext, destination_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(destinations.get, destination_id)


@router.route("PATCH", PATH + "/{destination_id}", role="admin",
              summary="Change an alert destination", body=DestinationPatch,
              response=DestinationOut, errors=(401, 403, 404, 409, 422))
async def update_destination(ctx: RequestContext, destination_id: uuid.UUID) -> dict[str, Any]:
    body = ctx.body_as(DestinationPatch)
    changes = {k: v for k, v in body.model_dump(include=body.model_fields_set).items()
               if v is not None}
    return await ctx.tx(destinations.update, ctx.actor, destination_id, changes)


@router.route("DELETE", PATH + "/{destination_id}", role="admin",
              summary="Delete an alert destination (its queued deliveries fail)",
              status=204, errors=(401, 403, 404))
async def delete_destination(ctx: RequestContext, destination_id: uuid.UUID) -> Reply:
    await ctx.tx(destinations.delete, ctx.actor, destination_id)
    return Reply(None, 204)
