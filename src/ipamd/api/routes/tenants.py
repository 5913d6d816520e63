"""/tenants: separate address spaces; the default tenant always exists."""

from __future__ import annotations

import uuid
from typing import Any

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import Description, Name, patch
from ipamd.api.routes.ipam_models import TenantOut
from ipamd.api.schemas import Page
from ipamd.ipam import tenants

router = Router("tenants")


class TenantCreate(Body):
    name: Name
    description: Description = ""


class TenantPatch(Body):
    name: Name = patch()
    description: Description = patch()


class TenantQuery(paging.PageQuery):
    name: str | None = None


@router.route(
    "POST", "/tenants", role="operator", summary="Create a tenant",
    body=TenantCreate, response=TenantOut, status=201, idempotent=True,
    errors=(400, 401, 403, 409, 422),
)
async def create_tenant(ctx: RequestContext) -> Reply:
    return await ctx.create(tenants.create, ctx.actor, ctx.fields())


@router.route(
    "GET", "/tenants", role="viewer", summary="List tenants",
    query=TenantQuery, response=Page[TenantOut], errors=(400, 401, 403),
)
async def list_tenants(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(TenantQuery)
    return await listing.by_id(ctx, tenants.list_page, q.name)


@router.route(
    "GET", "/tenants/{tenant_id}", role="viewer", summary="Read a tenant",
    response=TenantOut, errors=(401, 403, 404),
)
async def get_tenant(ctx: RequestContext, tenant_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(tenants.get, tenant_id)


@router.route(
    "PATCH", "/tenants/{tenant_id}", role="operator",
    summary="Change a tenant's name or description",
    body=TenantPatch, response=TenantOut, errors=(401, 403, 404, 409, 422),
)
async def update_tenant(ctx: RequestContext, tenant_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(tenants.update, ctx.actor, tenant_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/tenants/{tenant_id}", role="operator",
    summary="Delete an empty tenant (not the default one)", status=204,
    errors=(401, 403, 404, 409),
)
async def delete_tenant(ctx: RequestContext, tenant_id: uuid.UUID) -> Reply:
    await ctx.tx(tenants.delete, ctx.actor, tenant_id)
    return Reply(None, 204)
