"""Delegation pools (DHCPv6 IA_PD): /subnets/{subnet_id}/pd-pools, items /pd-pools/{id}; their
excludes and DUID reservations of delegated prefixes under /pd-pools/{id}/excludes and
/pd-pools/{id}/reservations, items /pd-excludes/{id} and /pd-reservations/{id}."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from pydantic import BaseModel, Field

from ipamd.api import paging
from ipamd.api.errors import not_found
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes.ipam_fields import Cidr, Duid, Hostname, Id, Name, patch
from ipamd.api.routes.ipam_models import Count
from ipamd.api.routes.license import entitlement
from ipamd.api.schemas import Page
from ipamd.ipam import pd_pools

router = Router("pd-pools")

DelegatedLength = Field(ge=1, le=128, description="the length of each delegated prefix")


class PdPoolCreate(Body):
    name: Name
    prefix: Cidr = Field(description="IPv6 CIDR inside a prefix of the tenant, apart from its "
                                     "subnets, e.g. 2001:db8:100::/40")
    delegated_length: int = DelegatedLength
    tenant_id: Id | None = Field(default=None, description="the subnet's tenant when left out")


class PdPoolPatch(Body):
    name: Name = patch()
    prefix: Cidr = patch("every exclude and reservation must still fit")
    delegated_length: int = patch(ge=1, le=128)


class PdPoolOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    subnet_id: uuid.UUID
    name: str
    prefix: str
    delegated_length: int
    size: Count = Field(description="delegated prefixes in the pool (a decimal string)")
    created_at: dt.datetime
    updated_at: dt.datetime


class PdExcludeCreate(Body):
    prefix: Cidr = Field(description="inside the pool; no shorter than it, no longer than a "
                                     "delegated prefix")
    tenant_id: Id | None = Field(default=None, description="the pool's tenant when left out")


class PdExcludePatch(Body):
    prefix: Cidr = patch()


class PdReservationCreate(Body):
    prefix: Cidr = Field(description="one delegated prefix of the pool (its delegated_length)")
    duid: Duid
    hostname: Hostname | None = None
    tenant_id: Id | None = Field(default=None, description="the pool's tenant when left out")


class PdReservationPatch(Body):
    prefix: Cidr = patch()
    duid: Duid = patch()
    hostname: Hostname | None = patch()


class _ChildOut(BaseModel):
    id: uuid.UUID
    pd_pool_id: uuid.UUID
    subnet_id: uuid.UUID
    tenant_id: uuid.UUID
    prefix: str
    created_at: dt.datetime
    updated_at: dt.datetime


class PdExcludeOut(_ChildOut):
    size: Count = Field(description="delegated prefixes it covers (a decimal string)")


class PdReservationOut(_ChildOut):
    duid: str
    hostname: str | None


async def _page(ctx: RequestContext, unit: Any, parent: uuid.UUID, what: str,
                *filters: Any) -> dict[str, Any]:
    q = ctx.query_as(paging.PageQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    after = paging.after(q, [uuid.UUID])
    rows = await ctx.run(unit, *filters, parent, after[0] if after else None, limit)
    if rows is None:
        raise not_found(what, str(parent))
    return paging.page(rows, limit, key=lambda r: [r["id"]])


# --- pools ---------------------------------------------------------------------------------

@router.route(
    "POST", "/subnets/{subnet_id}/pd-pools", role="operator",
    summary="Create a delegation pool (IA_PD) for an IPv6 subnet",
    body=PdPoolCreate, response=PdPoolOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_pd_pool(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    return await ctx.create(pd_pools.create_pool, ctx.actor, subnet_id, ctx.fields())


@router.route(
    "GET", "/subnets/{subnet_id}/pd-pools", role="viewer",
    summary="List a subnet's delegation pools",
    query=paging.PageQuery, response=Page[PdPoolOut], errors=(400, 401, 403, 404),
)
async def list_pd_pools(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    return await _page(ctx, pd_pools.list_pools, subnet_id, "subnet")


@router.route(
    "GET", "/pd-pools/{pd_pool_id}", role="viewer", summary="Read a delegation pool",
    response=PdPoolOut, errors=(401, 403, 404),
)
async def get_pd_pool(ctx: RequestContext, pd_pool_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(pd_pools.get_pool, pd_pool_id)


@router.route(
    "PATCH", "/pd-pools/{pd_pool_id}", role="operator", summary="Change a delegation pool",
    body=PdPoolPatch, response=PdPoolOut, errors=(401, 403, 404, 409, 422),
)
async def update_pd_pool(ctx: RequestContext, pd_pool_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(pd_pools.update_pool, ctx.actor, pd_pool_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/pd-pools/{pd_pool_id}", role="operator", summary="Delete a delegation pool",
    status=204, errors=(401, 403, 404, 409),
)
async def delete_pd_pool(ctx: RequestContext, pd_pool_id: uuid.UUID) -> Reply:
    await ctx.tx(pd_pools.delete_pool, ctx.actor, pd_pool_id)
    return Reply(None, 204)


# --- excludes ------------------------------------------------------------------------------

@router.route(
    "POST", "/pd-pools/{pd_pool_id}/excludes", role="operator",
    summary="Exclude delegated prefixes of a delegation pool",
    body=PdExcludeCreate, response=PdExcludeOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_pd_exclude(ctx: RequestContext, pd_pool_id: uuid.UUID) -> Reply:
    return await ctx.create(pd_pools.create_child, ctx.actor, entitlement(ctx.state),
                            pd_pools.EXCLUDE, pd_pool_id, ctx.fields())


@router.route(
    "GET", "/pd-pools/{pd_pool_id}/excludes", role="viewer",
    summary="List a delegation pool's excludes",
    query=paging.PageQuery, response=Page[PdExcludeOut], errors=(400, 401, 403, 404),
)
async def list_pd_excludes(ctx: RequestContext, pd_pool_id: uuid.UUID) -> dict[str, Any]:
    return await _page(ctx, pd_pools.list_children, pd_pool_id, "delegation pool",
                       pd_pools.EXCLUDE)


@router.route(
    "GET", "/pd-excludes/{pd_exclude_id}", role="viewer",
    summary="Read an exclude of a delegation pool", response=PdExcludeOut,
    errors=(401, 403, 404),
)
async def get_pd_exclude(ctx: RequestContext, pd_exclude_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(pd_pools.get_child, pd_pools.EXCLUDE, pd_exclude_id)


@router.route(
    "PATCH", "/pd-excludes/{pd_exclude_id}", role="operator",
    summary="Change an exclude of a delegation pool",
    body=PdExcludePatch, response=PdExcludeOut, errors=(401, 403, 404, 409, 422),
)
async def update_pd_exclude(ctx: RequestContext, pd_exclude_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(pd_pools.update_child, ctx.actor, pd_pools.EXCLUDE, pd_exclude_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/pd-excludes/{pd_exclude_id}", role="operator",
    summary="Delete an exclude of a delegation pool", status=204, errors=(401, 403, 404),
)
async def delete_pd_exclude(ctx: RequestContext, pd_exclude_id: uuid.UUID) -> Reply:
    await ctx.tx(pd_pools.delete_child, ctx.actor, pd_pools.EXCLUDE, pd_exclude_id)
    return Reply(None, 204)


# --- reservations --------------------------------------------------------------------------

@router.route(
    "POST", "/pd-pools/{pd_pool_id}/reservations", role="operator",
    summary="Reserve a delegated prefix for a DUID (counts against the license)",
    body=PdReservationCreate, response=PdReservationOut, status=201, idempotent=True,
    errors=(400, 401, 402, 403, 404, 409, 422),
)
async def create_pd_reservation(ctx: RequestContext, pd_pool_id: uuid.UUID) -> Reply:
    return await ctx.create(pd_pools.create_child, ctx.actor, entitlement(ctx.state),
                            pd_pools.RESERVATION, pd_pool_id, ctx.fields())


@router.route(
    "GET", "/pd-pools/{pd_pool_id}/reservations", role="viewer",
    summary="List a delegation pool's reservations",
    query=paging.PageQuery, response=Page[PdReservationOut], errors=(400, 401, 403, 404),
)
async def list_pd_reservations(ctx: RequestContext, pd_pool_id: uuid.UUID) -> dict[str, Any]:
    return await _page(ctx, pd_pools.list_children, pd_pool_id, "delegation pool",
                       pd_pools.RESERVATION)


@router.route(
    "GET", "/pd-reservations/{pd_reservation_id}", role="viewer",
    summary="Read a reservation of a delegated prefix", response=PdReservationOut,
    errors=(401, 403, 404),
)
async def get_pd_reservation(ctx: RequestContext, pd_reservation_id: uuid.UUID
                             ) -> dict[str, Any]:
    return await ctx.run(pd_pools.get_child, pd_pools.RESERVATION, pd_reservation_id)


@router.route(
    "PATCH", "/pd-reservations/{pd_reservation_id}", role="operator",
    summary="Change a reservation of a delegated prefix",
    body=PdReservationPatch, response=PdReservationOut, errors=(401, 403, 404, 409, 422),
)
async def update_pd_reservation(ctx: RequestContext, pd_reservation_id: uuid.UUID
                                ) -> dict[str, Any]:
    return await ctx.tx(pd_pools.update_child, ctx.actor, pd_pools.RESERVATION,
                        pd_reservation_id, ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/pd-reservations/{pd_reservation_id}", role="operator",
    summary="Delete a reservation of a delegated prefix", status=204, errors=(401, 403, 404),
)
async def delete_pd_reservation(ctx: RequestContext, pd_reservation_id: uuid.UUID) -> Reply:
    await ctx.tx(pd_pools.delete_child, ctx.actor, pd_pools.RESERVATION, pd_reservation_id)
    return Reply(None, 204)
