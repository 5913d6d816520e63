"""Assignments (static IP + host name without DHCP): nested create/list, flat items."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import IP, Description, Hostname, Id, patch
from ipamd.api.routes.ipam_models import AssignmentOut
from ipamd.api.routes.license import entitlement
from ipamd.api.schemas import Page
from ipamd.ipam import assignments

router = Router("assignments")


class AssignmentCreate(Body):
    ip: IP | None = Field(
        default=None, description="left out: the lowest free address outside pools and excludes")
    hostname: Hostname
    description: Description = ""
    tenant_id: Id | None = Field(default=None, description="the subnet's tenant when left out")


class AssignmentPatch(Body):
    ip: IP = patch()
    hostname: Hostname = patch()
    description: Description = patch()


class AssignmentQuery(paging.PageQuery):
    ip: IP | None = None
    hostname: Hostname | None = Field(default=None, description="exact, case-insensitive")


@router.route(
    "POST", "/subnets/{subnet_id}/assignments", role="operator",
    summary="Assign a static address and host name (counts against the license)",
    body=AssignmentCreate, response=AssignmentOut, status=201, idempotent=True,
    errors=(400, 401, 402, 403, 404, 409, 422),
)
async def create_assignment(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    return await ctx.create(assignments.create, ctx.actor, entitlement(ctx.state), subnet_id,
                            ctx.fields())


@router.route(
    "GET", "/subnets/{subnet_id}/assignments", role="viewer",
    summary="List a subnet's assignments",
    query=AssignmentQuery, response=Page[AssignmentOut], errors=(400, 401, 403, 404),
)
async def list_assignments(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(AssignmentQuery)
    filters = assignments.Filters(ip=q.ip, hostname=q.hostname)
    return await listing.of_subnet(ctx, assignments.list_page, subnet_id, filters)


@router.route(
    "GET", "/assignments/{assignment_id}", role="viewer", summary="Read an assignment",
    response=AssignmentOut, errors=(401, 403, 404),
)
async def get_assignment(ctx: RequestContext, assignment_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(assignments.get, assignment_id)


@router.route(
    "PATCH", "/assignments/{assignment_id}", role="operator", summary="Change an assignment",
    body=AssignmentPatch, response=AssignmentOut, errors=(401, 403, 404, 409, 422),
)
async def update_assignment(ctx: RequestContext, assignment_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(assignments.update, ctx.actor, assignment_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/assignments/{assignment_id}", role="operator", summary="Delete an assignment",
    status=204, errors=(401, 403, 404, 409),
)
async def delete_assignment(ctx: RequestContext, assignment_id: uuid.UUID) -> Reply:
    await ctx.tx(assignments.delete, ctx.actor, assignment_id)
    return Reply(None, 204)
