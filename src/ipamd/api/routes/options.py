"""DHCP options on a subnet: nested create/list, flat items. Payload shapes: docs/api-ipam.md."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import Id, VendorClass, patch
from ipamd.api.routes.ipam_models import OptionOut
from ipamd.api.schemas import Page
from ipamd.ipam import options

router = Router("options")

PAYLOAD_HELP = (
    'Shape depends on the code: {"addresses": [...]} for address lists (6 DNS, 42 NTP, 44, '
    '...); {"value": "..."} for text (15 domain name, ...); {"value": n} for integers (26 MTU, '
    '...); {"domains": [...]} for 119; {"routes": [{"destination", "router"}]} for 121; '
    '{"hex": "..."} for 43 and every other code.'
)


class OptionCreate(Body):
    code: int = Field(ge=1, le=254, description="DHCP option code; server-owned codes refused")
    payload: dict[str, Any] = Field(description=PAYLOAD_HELP)
    vendor_class: VendorClass | None = Field(
        default=None, description="code 43 only: send to clients of this vendor class")
    tenant_id: Id | None = Field(default=None, description="the subnet's tenant when left out")


class OptionPatch(Body):
    code: int = patch(ge=1, le=254)
    payload: dict[str, Any] = patch(PAYLOAD_HELP)
    vendor_class: VendorClass | None = patch()


class OptionQuery(paging.PageQuery):
    code: int | None = Field(default=None, ge=1, le=254)


@router.route(
    "POST", "/subnets/{subnet_id}/options", role="operator",
    summary="Set a DHCP option on a subnet",
    body=OptionCreate, response=OptionOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_option(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    return await ctx.create(options.create, ctx.actor, subnet_id, ctx.fields())


@router.route(
    "GET", "/subnets/{subnet_id}/options", role="viewer", summary="List a subnet's options",
    query=OptionQuery, response=Page[OptionOut], errors=(400, 401, 403, 404),
)
async def list_options(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(OptionQuery)
    return await listing.of_subnet(ctx, options.list_page, subnet_id, q.code)


@router.route(
    "GET", "/options/{option_id}", role="viewer", summary="Read an option",
    response=OptionOut, errors=(401, 403, 404),
)
async def get_option(ctx: RequestContext, option_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(options.get, option_id)


@router.route(
    "PATCH", "/options/{option_id}", role="operator", summary="Change an option",
    body=OptionPatch, response=OptionOut, errors=(401, 403, 404, 409, 422),
)
async def update_option(ctx: RequestContext, option_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(options.update, ctx.actor, option_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/options/{option_id}", role="operator", summary="Delete an option", status=204,
    errors=(401, 403, 404, 409),
)
async def delete_option(ctx: RequestContext, option_id: uuid.UUID) -> Reply:
    await ctx.tx(options.delete, ctx.actor, option_id)
    return Reply(None, 204)
