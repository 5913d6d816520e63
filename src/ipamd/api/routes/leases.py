"""GET /leases, GET /leases/{lease_id}, POST /leases/{lease_id}/release."""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ipamd.api import paging
from ipamd.api.router import RequestContext, Router
from ipamd.api.schemas import Page
from ipamd.core import identifiers
from ipamd.ipam import leases

router = Router("leases")

class LeaseOut(BaseModel):
    lease_id: uuid.UUID
    ip: str
    subnet_id: uuid.UUID
    hostname: str | None = Field(description="option 12, as the client sent it")
    fqdn: str | None = Field(description="option 81, as the client sent it")
    state: Literal["offered", "active", "released", "expired", "declined"]
    mac: str | None
    client_id: str | None = Field(description="option 61, colon-separated hex")
    duid: str | None = Field(description="DHCPv6: the client's DUID; DHCPv4: the DUID of an "
                             "RFC 4361 client identifier")
    circuit_id: str | None = Field(description="option 82 sub-option 1, colon-separated hex")
    remote_id: str | None = Field(description="DHCPv4: option 82 sub-option 2; DHCPv6: the "
                                  "relay's Remote-Id (option 37: enterprise number and id); "
                                  "colon-separated hex")
    giaddr: str | None = Field(description="the relay the lease was granted through (DHCPv6: "
                               "the link-address naming the client's link)")
    iaid: int | None = Field(default=None, description="DHCPv6: the IA's IAID")
    ia_type: Literal["na", "pd"] | None = Field(
        default=None, description="DHCPv6: na (an address, IA_NA) or pd (a delegated prefix, "
        "IA_PD, whose first address is ip)")
    prefix_length: int | None = Field(default=None, description="DHCPv6: 128 for an address, "
                                      "the delegated prefix's length for IA_PD")
    preferred_lifetime: int | None = Field(default=None, description="DHCPv6: seconds, as "
                                           "last given to the client")
    valid_lifetime: int | None = Field(default=None, description="DHCPv6: seconds, as last "
                                       "given to the client")
    subscriber_id: str | None = Field(default=None, description="DHCPv6: the relay's "
                                      "Subscriber-Id (option 38), colon-separated hex")
    starts_at: dt.datetime
    expires_at: dt.datetime = Field(description="for a declined lease: the probation end")
    created_at: dt.datetime
    updated_at: dt.datetime


class LeaseQuery(paging.PageQuery):
    subnet_id: uuid.UUID | None = None
    state: Literal["offered", "active", "released", "expired", "declined"] | None = None
    ip: str | None = Field(default=None, description="an IPv4 or IPv6 address (for a "
                           "delegated prefix: its first address)")
    mac: str | None = Field(default=None, description="aa:bb:cc:dd:ee:ff (any common notation)")
    hostname: str | None = Field(default=None, description="exact, case-insensitive")

    @field_validator("ip")
    @classmethod
    def _ip(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            address = ipaddress.ip_address(value.strip())
        except ValueError:
            address = None
        if address is None or getattr(address, "scope_id", None):  # no zone: Postgres has none
            raise ValueError(f"{value!r} is not an IPv4 or IPv6 address")
        return str(address)

    @field_validator("mac")
    @classmethod
    def _mac(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return identifiers.lookup_mac(value)


@router.route(
    "GET", "/leases", role="viewer", summary="List leases (filters: subnet_id, state, ip, mac, "
    "hostname)", query=LeaseQuery, response=Page[LeaseOut], errors=(400, 401, 403),
)
async def list_leases(ctx: RequestContext) -> dict[str, Any]:
    q: LeaseQuery = ctx.query
    limit = paging.limit_of(q, ctx.state.config.limits)
    after = paging.after(q, [uuid.UUID])
    f = leases.LeaseFilter(subnet_id=q.subnet_id, state=q.state, ip=q.ip, mac=q.mac,
                           hostname=q.hostname)
    rows = await ctx.run(leases.list_page, f, after[0] if after else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["lease_id"]])


@router.route(
    "GET", "/leases/{lease_id}", role="viewer", summary="Read one lease",
    response=LeaseOut, errors=(401, 403, 404),
)
async def get_lease(ctx: RequestContext, lease_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(leases.get, lease_id)


@router.route(
    "POST", "/leases/{lease_id}/release", role="operator",
    summary="Force-release a lease (emits lease.released; the address is free again)",
    response=LeaseOut, errors=(401, 403, 404, 409),
)
async def release_lease(ctx: RequestContext, lease_id: uuid.UUID) -> dict[str, Any]:
    after = await ctx.tx(leases.release, ctx.actor, lease_id)
    for server in (ctx.state.dhcp, ctx.state.dhcp6):
        if server is not None:
            server.forget([(lease_id, after["subnet_id"], "released")])
    return after
