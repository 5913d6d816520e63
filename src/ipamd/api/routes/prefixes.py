"""/prefixes: the address plan (IPv4 or IPv6), with utilisation."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import Cidr, CidrOrAddress, Description, Id, patch
from ipamd.api.routes.ipam_models import PrefixListItem, PrefixOut, PrefixUtilisation
from ipamd.api.schemas import Page
from ipamd.ipam import prefixes, utilisation

router = Router("prefixes")


class PrefixCreate(Body):
    cidr: Cidr
    description: Description = ""
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out")


class PrefixPatch(Body):
    cidr: Cidr = patch("the prefix must still hold its subnets")
    description: Description = patch()


class PrefixQuery(paging.PageQuery):
    tenant_id: uuid.UUID | None = None
    cidr: Cidr | None = Field(default=None, description="exactly this CIDR")
    contains: CidrOrAddress | None = Field(
        default=None, description="prefixes that contain this CIDR or address")
    within: Cidr | None = Field(default=None, description="prefixes inside this CIDR")
    include: Literal["utilisation"] | None = Field(
        default=None, description="utilisation: each item with its utilisation object, read "
                                  "for the whole page at once")


@router.route(
    "POST", "/prefixes", role="operator", summary="Create a prefix",
    body=PrefixCreate, response=PrefixOut, status=201, idempotent=True,
    errors=(400, 401, 403, 409, 422),
)
async def create_prefix(ctx: RequestContext) -> Reply:
    return await ctx.create(prefixes.create, ctx.actor, ctx.fields())


@router.route(
    "GET", "/prefixes", role="viewer", summary="List prefixes",
    query=PrefixQuery, response=Page[PrefixListItem], errors=(400, 401, 403),
)
async def list_prefixes(ctx: RequestContext) -> Reply:
    q = ctx.query_as(PrefixQuery)
    filters = prefixes.Filters(tenant_id=q.tenant_id, cidr=q.cidr, contains=q.contains,
                               within=q.within)
    unit = prefixes.list_page_utilised if q.include == "utilisation" else prefixes.list_page
    return await listing.by_id_rendered(ctx, unit, ctx.state.rendered, filters)


@router.route(
    "GET", "/prefixes/{prefix_id}", role="viewer", summary="Read a prefix",
    response=PrefixOut, errors=(401, 403, 404),
)
async def get_prefix(ctx: RequestContext, prefix_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(prefixes.get, prefix_id)


@router.route(
    "PATCH", "/prefixes/{prefix_id}", role="operator", summary="Change a prefix",
    body=PrefixPatch, response=PrefixOut, errors=(401, 403, 404, 409, 422),
)
async def update_prefix(ctx: RequestContext, prefix_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(prefixes.update, ctx.actor, prefix_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/prefixes/{prefix_id}", role="operator",
    summary="Delete a prefix that holds no subnets", status=204, errors=(401, 403, 404, 409),
)
async def delete_prefix(ctx: RequestContext, prefix_id: uuid.UUID) -> Reply:
    await ctx.tx(prefixes.delete, ctx.actor, prefix_id)
    return Reply(None, 204)


@router.route(
    "GET", "/prefixes/{prefix_id}/utilisation", role="viewer",
    summary="Size, used (covered by subnets) and free addresses of a prefix",
    response=PrefixUtilisation, errors=(401, 403, 404),
)
async def prefix_utilisation(ctx: RequestContext, prefix_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(utilisation.prefix, prefix_id)
