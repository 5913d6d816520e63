"""/subnets: the L3 networks the DHCP server serves, with utilisation and next free address."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field

from ipamd.api import paging
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import (
    IP,
    BootFile,
    Cidr,
    CidrOrAddress,
    Description,
    DnsZone,
    Id,
    IPv4,
    Label,
    ReverseZone,
    patch,
)
from ipamd.api.routes.ipam_models import NextFree, SubnetListItem, SubnetOut, SubnetUtilisation
from ipamd.api.schemas import Page
from ipamd.ipam import nextfree, subnets, utilisation

router = Router("subnets")

# A client's requested lease time (option 51) is honoured within these (docs/api-ipam.md).
MIN_LEASE = ("the shortest lease a client may ask for (option 51); null: lease_time_seconds. "
             "IPv4 only")
MAX_LEASE = ("the longest lease a client may ask for (option 51); null: lease_time_seconds. "
             "IPv4 only")
SHARED = ("the shared network (several IPv4 subnets on one link, docs/api-ipam.md) it joins; "
          "null: none")
# The ping check before an Offer (docs/api-ipam.md, "Ping check").
PING = ("ICMP echo to an address before it is offered; one that answers is held as a "
        "conflict and another offered. IPv4 only")
PING_TIMEOUT = "how long the ping check waits for an echo reply before the Offer"
DdnsAdapter = Literal["none", "ad_gsstsig", "bind_tsig", "powerdns_http", "embedded"]


class SubnetCreate(Body):
    prefix_id: Id = Field(description="the prefix the subnet lies in")
    cidr: Cidr = Field(description="IPv4 or IPv6; an IPv6 subnet differs (docs/api-ipam.md)")
    gateway: IP | None = Field(
        default=None, description="the router (option 3); IPv4 only: IPv6 routers are "
        "announced by Router Advertisements")
    lease_time_seconds: int = Field(default=86_400, ge=1, le=2_147_483_647)
    min_lease_time_seconds: int | None = Field(
        default=None, ge=1, le=2_147_483_647, description=MIN_LEASE)
    max_lease_time_seconds: int | None = Field(
        default=None, ge=1, le=2_147_483_647, description=MAX_LEASE)
    dhcp_enabled: bool = Field(default=True, description="false: a VLAN without DHCP, no pools")
    ping_check: bool = Field(default=False, description=PING)
    ping_timeout_ms: int = Field(default=500, ge=100, le=5000, description=PING_TIMEOUT)
    name: Label = ""
    description: Description = ""
    next_server: IPv4 | None = Field(default=None, description="PXE next server (siaddr)")
    boot_file: BootFile | None = Field(default=None, description="PXE boot file name")
    ntp_servers: list[IP] = Field(
        default_factory=list, max_length=63,
        description="option 42 (DHCPv6: 56), the subnet's family; a stored option wins")
    ddns_adapter: DdnsAdapter = "none"
    ddns_zone: DnsZone | None = Field(default=None,
                                      description="forward zone for A (AAAA) records")
    ddns_reverse_zone: ReverseZone | None = Field(
        default=None, description="reverse zone for PTR records (…in-addr.arpa; an IPv6 "
                                  "subnet's …ip6.arpa)")
    ddns_ttl: int | None = Field(default=None, ge=1, le=2_147_483_647,
                                 description="record TTL; null: a third of the lease time")
    ddns_server_id: Id | None = Field(default=None, description="the DNS server to update")
    shared_network_id: Id | None = Field(default=None, description=SHARED)
    tenant_id: Id | None = Field(default=None, description="the prefix's tenant when left out")


class SubnetPatch(Body):
    prefix_id: Id = patch("move the subnet to another prefix of its tenant")
    cidr: Cidr = patch("every child must still fit; the family cannot change")
    gateway: IP | None = patch()
    lease_time_seconds: int = patch(ge=1, le=2_147_483_647)
    min_lease_time_seconds: int | None = patch(MIN_LEASE, ge=1, le=2_147_483_647)
    max_lease_time_seconds: int | None = patch(MAX_LEASE, ge=1, le=2_147_483_647)
    dhcp_enabled: bool = patch("false only when the subnet has no pools")
    ping_check: bool = patch(PING)
    ping_timeout_ms: int = patch(PING_TIMEOUT, ge=100, le=5000)
    name: Label = patch()
    description: Description = patch()
    next_server: IPv4 | None = patch()
    boot_file: BootFile | None = patch()
    ntp_servers: list[IP] = patch(max_length=63)
    ddns_adapter: DdnsAdapter = patch()
    ddns_zone: DnsZone | None = patch()
    ddns_reverse_zone: ReverseZone | None = patch()
    ddns_ttl: int | None = patch(ge=1, le=2_147_483_647)
    ddns_server_id: Id | None = patch()
    shared_network_id: Id | None = patch(SHARED)


class SubnetQuery(paging.PageQuery):
    tenant_id: uuid.UUID | None = None
    prefix_id: uuid.UUID | None = None
    cidr: Cidr | None = Field(default=None, description="exactly this CIDR")
    contains: CidrOrAddress | None = Field(
        default=None, description="subnets that contain this address or CIDR")
    within: CidrOrAddress | None = Field(default=None, description="subnets inside this CIDR")
    dhcp_enabled: bool | None = None
    include: Literal["utilisation"] | None = Field(
        default=None, description="utilisation: each item with its utilisation object, read "
                                  "for the whole page at once")


@router.route(
    "POST", "/subnets", role="operator", summary="Create a subnet inside a prefix",
    body=SubnetCreate, response=SubnetOut, status=201, idempotent=True,
    errors=(400, 401, 403, 409, 422),
)
async def create_subnet(ctx: RequestContext) -> Reply:
    return await ctx.create(subnets.create, ctx.actor, ctx.fields())


@router.route(
    "GET", "/subnets", role="viewer", summary="List subnets",
    query=SubnetQuery, response=Page[SubnetListItem], errors=(400, 401, 403),
)
async def list_subnets(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(SubnetQuery)
    filters = subnets.Filters(
        tenant_id=q.tenant_id, prefix_id=q.prefix_id, cidr=q.cidr, contains=q.contains,
        within=q.within, dhcp_enabled=q.dhcp_enabled,
    )
    unit = subnets.list_page_utilised if q.include == "utilisation" else subnets.list_page
    return await listing.by_id(ctx, unit, filters)


@router.route(
    "GET", "/subnets/{subnet_id}", role="viewer", summary="Read a subnet",
    response=SubnetOut, errors=(401, 403, 404),
)
async def get_subnet(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(subnets.get, subnet_id)


@router.route(
    "PATCH", "/subnets/{subnet_id}", role="operator", summary="Change a subnet",
    body=SubnetPatch, response=SubnetOut, errors=(401, 403, 404, 409, 422),
)
async def update_subnet(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(subnets.update, ctx.actor, subnet_id,
                        ctx.fields(exclude_unset=True))


@router.route(
    "DELETE", "/subnets/{subnet_id}", role="operator",
    summary="Delete a subnet that holds nothing", status=204, errors=(401, 403, 404, 409),
)
async def delete_subnet(ctx: RequestContext, subnet_id: uuid.UUID) -> Reply:
    await ctx.tx(subnets.delete, ctx.actor, subnet_id)
    return Reply(None, 204)


@router.route(
    "GET", "/subnets/{subnet_id}/utilisation", role="viewer",
    summary="Size, used, excluded and free addresses of a subnet",
    response=SubnetUtilisation, errors=(401, 403, 404),
)
async def subnet_utilisation(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(utilisation.subnet, subnet_id)


@router.route(
    "GET", "/subnets/{subnet_id}/next-free-ip", role="viewer",
    summary="The address an assignment or reservation without ip would take now",
    response=NextFree, errors=(401, 403, 404),
)
async def next_free_ip(ctx: RequestContext, subnet_id: uuid.UUID) -> dict[str, Any]:
    ip = await ctx.run(nextfree.peek, subnet_id)
    return {"ip": None if ip is None else str(ip)}
