"""/client-classes: match clients by vendor class, user class, MAC prefix, architecture or
relay circuit/remote id; pools refer to them; they may carry options (routes/options.py)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import (
    BootFile,
    Description,
    Id,
    IPv4,
    MatchValue,
    Name,
    patch,
)
from ipamd.api.routes.ipam_models import ClientClassOut
from ipamd.api.schemas import Page
from ipamd.ipam import client_classes

router = Router("client-classes")

Match = Literal["vendor_class", "user_class", "mac_prefix", "arch", "circuit_id", "remote_id"]
VALUE_HELP = (
    "vendor_class: option 60 starts with it; user_class: an option 77 instance equals it; "
    "mac_prefix: 1-6 leading octets of the MAC (e.g. an OUI 00:1a:2b); arch: an option 93 "
    "architecture type, 0-65535 (0 BIOS, 7 x64 UEFI); circuit_id, remote_id: the relay's "
    "option 82 sub-option 1 or 2 as hex octets (01:02:0a)"
)
PRIORITY_HELP = "among classes a client matches, the lowest number's options win (default 100)"


class ClientClassCreate(Body):
    name: Name
    match: Match
    value: MatchValue = Field(description=VALUE_HELP)
    description: Description = ""
    priority: int = Field(default=100, ge=0, le=65535, description=PRIORITY_HELP)
    next_server: IPv4 | None = Field(default=None, description="PXE next server (siaddr)")
    boot_file: BootFile | None = Field(default=None, description="PXE boot file name")
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out")


class ClientClassPatch(Body):
    name: Name = patch()
    match: Match = patch()
    value: MatchValue = patch(VALUE_HELP)
    description: Description = patch()
    priority: int = patch(PRIORITY_HELP, ge=0, le=65535)
    next_server: IPv4 | None = patch()
    boot_file: BootFile | None = patch()


class ClientClassQuery(paging.PageQuery):
    tenant_id: uuid.UUID | None = None
    match: Match | None = None


@router.route(
    "POST", "/client-classes", role="operator", summary="Create a client class",
    body=ClientClassCreate, response=ClientClassOut, status=201, idempotent=True,
    errors=(400, 401, 403, 409, 422),
)
async def create_client_class(ctx: RequestContext) -> Reply:
    return await ctx.create(client_classes.create, ctx.actor, ctx.fields())


@router.route(
    "GET", "/client-classes", role="viewer", summary="List client classes",
    query=ClientClassQuery, response=Page[ClientClassOut], errors=(400, 401, 403),
)
async def list_client_classes(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(ClientClassQuery)
    return await listing.by_id(ctx, client_classes.list_page, q.tenant_id, q.match)


@router.route(
    "GET", "/client-classes/{class_id}", role="viewer", summary="Read a client class",
    response=ClientClassOut, errors=(401, 403, 404),
)
async def get_client_class(ctx: RequestContext, class_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(client_classes.get, class_id)


@router.route(
    "PATCH", "/client-classes/{class_id}", role="operator", summary="Change a client class",
    body=ClientClassPatch, response=ClientClassOut, errors=(401, 403, 404, 409, 422),
)
async def update_client_class(ctx: RequestContext, class_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(client_classes.update, ctx.actor, class_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/client-classes/{class_id}", role="operator",
    summary="Delete a client class no pool uses", status=204, errors=(401, 403, 404, 409),
)
async def delete_client_class(ctx: RequestContext, class_id: uuid.UUID) -> Reply:
    await ctx.tx(client_classes.delete, ctx.actor, class_id)
    return Reply(None, 204)
