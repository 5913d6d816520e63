"""/shared-networks: IPv4 subnets of one link grouped (Kea's shared-networks, ISC's
shared-network); a subnet joins one with its ``shared_network_id`` (routes/subnets.py)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import Description, Id, Name, patch
from ipamd.api.routes.ipam_models import SharedNetworkOut
from ipamd.api.schemas import Page
from ipamd.ipam import shared_networks

router = Router("shared-networks")


class SharedNetworkCreate(Body):
    name: Name = Field(description="unique within the tenant")
    description: Description = ""
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out; "
                                 "its members must be this tenant's subnets")


class SharedNetworkPatch(Body):
    name: Name = patch("unique within the tenant")
    description: Description = patch()


class SharedNetworkQuery(paging.PageQuery):
    tenant_id: uuid.UUID | None = None
    name: Name | None = Field(default=None, description="exactly this name")


@router.route(
    "POST", "/shared-networks", role="operator",
    summary="Create a shared network (several subnets on one link)",
    body=SharedNetworkCreate, response=SharedNetworkOut, status=201, idempotent=True,
    errors=(400, 401, 403, 409, 422),
)
async def create_shared_network(ctx: RequestContext) -> Reply:
    return await ctx.create(shared_networks.create, ctx.actor, ctx.fields())


@router.route(
    "GET", "/shared-networks", role="viewer", summary="List shared networks with their subnets",
    query=SharedNetworkQuery, response=Page[SharedNetworkOut], errors=(400, 401, 403),
)
async def list_shared_networks(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(SharedNetworkQuery)
    return await listing.by_id(ctx, shared_networks.list_page, q.tenant_id, q.name)


@router.route(
    "GET", "/shared-networks/{shared_network_id}", role="viewer",
    summary="Read a shared network and its subnets", response=SharedNetworkOut,
    errors=(401, 403, 404),
)
async def get_shared_network(ctx: RequestContext,
                             shared_network_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(shared_networks.get, shared_network_id)


@router.route(
    "PATCH", "/shared-networks/{shared_network_id}", role="operator",
    summary="Rename or describe a shared network", body=SharedNetworkPatch,
    response=SharedNetworkOut, errors=(401, 403, 404, 409, 422),
)
async def update_shared_network(ctx: RequestContext,
                                shared_network_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(shared_networks.update, ctx.actor, shared_network_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/shared-networks/{shared_network_id}", role="operator",
    summary="Delete a shared network no subnet is in", status=204,
    errors=(401, 403, 404, 409),
)
async def delete_shared_network(ctx: RequestContext, shared_network_id: uuid.UUID) -> Reply:
    await ctx.tx(shared_networks.delete, ctx.actor, shared_network_id)
    return Reply(None, 204)
