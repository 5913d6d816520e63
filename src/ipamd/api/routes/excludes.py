"""Excludes: create and list under /subnets/{subnet_id}/excludes; item paths /excludes/{id}."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import IP, Id, patch
from ipamd.api.routes.ipam_models import ExcludeOut
from ipamd.api.schemas import Page
from ipamd.ipam import excludes

router = Router("excludes")


class ExcludeCreate(Body):
    start_ip: IP
    end_ip: IP = Field(description="equal to start_ip for a single address")
    tenant_id: Id | None = Field(default=None, description="the subnet's tenant when left out")


class ExcludePatch(Body):
    start_ip: IP = patch()
    end_ip: IP = patch()


@router.route(
    "POST", "/subnets/{subnet_id}/excludes", role="operator",
    summary="Exclude a range (or one address) of a subnet",
    body=ExcludeCreate, response=ExcludeOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_exclude(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    return await ctx.create(excludes.create, ctx.actor, subnet_id, ctx.fields())


@router.route(
    "GET", "/subnets/{subnet_id}/excludes", role="viewer", summary="List a subnet's excludes",
    query=paging.PageQuery, response=Page[ExcludeOut], errors=(400, 401, 403, 404),
)
async def list_excludes(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    return await listing.of_subnet(ctx, excludes.list_page, subnet_id)


@router.route(
    "GET", "/excludes/{exclude_id}", role="viewer", summary="Read an exclude",
    response=ExcludeOut, errors=(401, 403, 404),
)
async def get_exclude(ctx: RequestContext, exclude_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(excludes.get, exclude_id)


@router.route(
    "PATCH", "/excludes/{exclude_id}", role="operator", summary="Change an exclude",
    body=ExcludePatch, response=ExcludeOut, errors=(401, 403, 404, 409, 422),
)
async def update_exclude(ctx: RequestContext, exclude_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(excludes.update, ctx.actor, exclude_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/excludes/{exclude_id}", role="operator", summary="Delete an exclude",
    status=204, errors=(401, 403, 404, 409),
)
async def delete_exclude(ctx: RequestContext, exclude_id: uuid.UUID) -> Reply:
    await ctx.tx(excludes.delete, ctx.actor, exclude_id)
    return Reply(None, 204)
