"""DHCP options on a subnet, a client class or a reservation: nested create/list, flat items.
Payload shapes and the scopes' precedence: docs/api-ipam.md."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Query, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import (
    ClientId,
    Id,
    Mac,
    MatchValue,
    RelayId,
    VendorClass,
    patch,
)
from ipamd.api.routes.ipam_models import EffectiveOptionsOut, OptionOut
from ipamd.api.schemas import Page
from ipamd.dhcp import effective
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


# Options of the other scopes (docs/api-ipam.md, "Option scopes"): nested create and list,
# the same flat items (/options/{option_id}) as a subnet's.


@router.route(
    "POST", "/client-classes/{class_id}/options", role="operator",
    summary="Set a DHCP option on a client class (over the subnet's for its clients)",
    body=OptionCreate, response=OptionOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_class_option(ctx: RequestContext, class_id: uuid.UUID) -> Reply:
    return await ctx.create(options.create_for_class, ctx.actor, class_id, ctx.fields())


@router.route(
    "GET", "/client-classes/{class_id}/options", role="viewer",
    summary="List a client class's options", query=OptionQuery, response=Page[OptionOut],
    errors=(400, 401, 403, 404),
)
async def list_class_options(ctx: RequestContext, class_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(OptionQuery)
    return await listing.by_id(ctx, options.list_page_of, "class_id", class_id, q.code)


@router.route(
    "POST", "/reservations/{reservation_id}/options", role="operator",
    summary="Set a DHCP option on a reservation (over its classes' and subnet's)",
    body=OptionCreate, response=OptionOut, status=201, idempotent=True,
    errors=(400, 401, 403, 404, 409, 422),
)
async def create_reservation_option(ctx: RequestContext, reservation_id: uuid.UUID) -> Reply:
    return await ctx.create(options.create_for_reservation, ctx.actor, reservation_id,
                            ctx.fields())


@router.route(
    "GET", "/reservations/{reservation_id}/options", role="viewer",
    summary="List a reservation's options", query=OptionQuery, response=Page[OptionOut],
    errors=(400, 401, 403, 404),
)
async def list_reservation_options(ctx: RequestContext,
                                   reservation_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(OptionQuery)
    return await listing.by_id(ctx, options.list_page_of, "reservation_id", reservation_id,
                               q.code)


class EffectiveQuery(Query):
    """The client whose options are asked for: the fields of its Discover that decide them."""

    mac: Mac = Field(description="the client's hardware address (reservations match it)")
    client_id: ClientId | None = Field(default=None, description="option 61 as hex octets")
    vendor_class: VendorClass | None = Field(default=None, description="option 60")
    user_class: MatchValue | None = Field(default=None, description="one option 77 instance")
    arch: int | None = Field(default=None, ge=0, le=65535,
                             description="option 93 architecture type (0 BIOS, 7 x64 UEFI)")
    circuit_id: RelayId | None = Field(default=None, description="option 82 sub-option 1, hex")
    remote_id: RelayId | None = Field(default=None, description="option 82 sub-option 2, hex")


@router.route(
    "GET", "/subnets/{subnet_id}/effective-options", role="viewer",
    summary="The options a client would receive on a subnet, each with its scope",
    query=EffectiveQuery, response=EffectiveOptionsOut, errors=(400, 401, 403, 404, 422),
)
async def effective_options(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(EffectiveQuery)
    client = effective.Client(
        mac=bytes.fromhex(q.mac.replace(":", "")), client_id=q.client_id,
        vendor_class=q.vendor_class, user_class=q.user_class, arch=q.arch,
        circuit_id=q.circuit_id, remote_id=q.remote_id)
    return await ctx.run(effective.effective_options, subnet_id, client)
