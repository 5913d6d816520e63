"""Reservations: create and list under /subnets/{subnet_id}/reservations; items flat."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ConfigDict, Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import (
    IP,
    BootFile,
    ClientId,
    Duid,
    Hostname,
    Id,
    IPv4,
    Mac,
    patch,
)
from ipamd.api.routes.ipam_models import ReservationOut
from ipamd.api.routes.license import entitlement
from ipamd.api.schemas import Page
from ipamd.ipam import reservations

router = Router("reservations")


class ReservationCreate(Body):
    # A reservation's identity, in the document too: a mac or a duid (or both).
    model_config = ConfigDict(
        json_schema_extra={"anyOf": [{"required": ["mac"]}, {"required": ["duid"]}]}
    )

    ip: IP | None = Field(
        default=None, description="left out: the lowest free address outside pools and excludes")
    mac: Mac | None = Field(default=None, description="mac or duid (or both) is required")
    duid: Duid | None = None
    client_id: ClientId | None = Field(
        default=None, description="match this raw option 61 too (the identity is still mac/duid)")
    hostname: Hostname | None = None
    next_server: IPv4 | None = Field(
        default=None, description="PXE next server (siaddr) for this client, over its classes' "
        "and the subnet's")
    boot_file: BootFile | None = Field(
        default=None, description="PXE boot file for this client, over its classes' and the "
        "subnet's")
    tenant_id: Id | None = Field(default=None, description="the subnet's tenant when left out")


class ReservationPatch(Body):
    ip: IP = patch()
    mac: Mac | None = patch("null removes it (a duid must remain)")
    duid: Duid | None = patch("null removes it (a mac must remain)")
    client_id: ClientId | None = patch()
    hostname: Hostname | None = patch()
    next_server: IPv4 | None = patch()
    boot_file: BootFile | None = patch()


class ReservationQuery(paging.PageQuery):
    ip: IP | None = None
    mac: Mac | None = None
    duid: Duid | None = None
    hostname: Hostname | None = Field(default=None, description="exact, case-insensitive")


@router.route(
    "POST", "/subnets/{subnet_id}/reservations", role="operator",
    summary="Reserve an address for a client (counts against the license)",
    body=ReservationCreate, response=ReservationOut, status=201, idempotent=True,
    errors=(400, 401, 402, 403, 404, 409, 422),
)
async def create_reservation(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    return await ctx.create(reservations.create, ctx.actor, entitlement(ctx.state), subnet_id,
                            ctx.fields())


@router.route(
    "GET", "/subnets/{subnet_id}/reservations", role="viewer",
    summary="List a subnet's reservations",
    query=ReservationQuery, response=Page[ReservationOut], errors=(400, 401, 403, 404),
)
async def list_reservations(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    q = ctx.query_as(ReservationQuery)
    filters = reservations.Filters(ip=q.ip, mac=q.mac, duid=q.duid, hostname=q.hostname)
    return await listing.of_subnet(ctx, reservations.list_page, subnet_id, filters)


@router.route(
    "GET", "/reservations/{reservation_id}", role="viewer", summary="Read a reservation",
    response=ReservationOut, errors=(401, 403, 404),
)
async def get_reservation(ctx: RequestContext, reservation_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(reservations.get, reservation_id)


@router.route(
    "PATCH", "/reservations/{reservation_id}", role="operator", summary="Change a reservation",
    body=ReservationPatch, response=ReservationOut, errors=(401, 403, 404, 409, 422),
)
async def update_reservation(ctx: RequestContext, reservation_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(reservations.update, ctx.actor, reservation_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/reservations/{reservation_id}", role="operator", summary="Delete a reservation",
    status=204, errors=(401, 403, 404, 409),
)
async def delete_reservation(ctx: RequestContext, reservation_id: uuid.UUID) -> Reply:
    await ctx.tx(reservations.delete, ctx.actor, reservation_id)
    return Reply(None, 204)


