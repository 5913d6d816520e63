"""Pools: create and list under /subnets/{subnet_id}/pools; item paths /pools/{pool_id}."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import IP, Id, Name, patch
from ipamd.api.routes.ipam_models import PoolOut, PoolUtilisation
from ipamd.api.schemas import Page
from ipamd.ipam import pools, utilisation

router = Router("pools")


class PoolCreate(Body):
    name: Name
    start_ip: IP
    end_ip: IP
    class_id: Id | None = Field(default=None, description="a client class to steer clients")
    tenant_id: Id | None = Field(default=None, description="the subnet's tenant when left out")


class PoolPatch(Body):
    name: Name = patch()
    start_ip: IP = patch()
    end_ip: IP = patch()
    class_id: Id | None = patch("null detaches the client class")


class PoolQuery(paging.PageQuery):
    class_id: uuid.UUID | None = None


@router.route(
    "POST", "/subnets/{subnet_id}/pools", role="operator", summary="Create a pool in a subnet",
    body=PoolCreate, response=PoolOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_pool(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    return await ctx.create(pools.create, ctx.actor, subnet_id, ctx.fields())


@router.route(
    "GET", "/subnets/{subnet_id}/pools", role="viewer", summary="List a subnet's pools",
    query=PoolQuery, response=Page[PoolOut], errors=(400, 401, 403, 404),
)
async def list_pools(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(PoolQuery)
    return await listing.of_subnet(ctx, pools.list_page, subnet_id, q.class_id)


@router.route(
    "GET", "/pools/{pool_id}", role="viewer", summary="Read a pool",
    response=PoolOut, errors=(401, 403, 404),
)
async def get_pool(ctx: RequestContext, pool_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(pools.get, pool_id)


@router.route(
    "PATCH", "/pools/{pool_id}", role="operator", summary="Change a pool",
    body=PoolPatch, response=PoolOut, errors=(401, 403, 404, 409, 422),
)
async def update_pool(ctx: RequestContext, pool_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(pools.update, ctx.actor, pool_id, ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/pools/{pool_id}", role="operator", summary="Delete a pool", status=204,
    errors=(401, 403, 404, 409),
)
async def delete_pool(ctx: RequestContext, pool_id: uuid.UUID) -> Reply:
    await ctx.tx(pools.delete, ctx.actor, pool_id)
    return Reply(None, 204)


@router.route(
    "GET", "/pools/{pool_id}/utilisation", role="viewer",
    summary="Size, used (leased, reserved), excluded and free addresses of a pool",
    response=PoolUtilisation, errors=(401, 403, 404),
)
async def pool_utilisation(ctx: RequestContext, pool_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(utilisation.pool, pool_id)
