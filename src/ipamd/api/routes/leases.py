"""GET /leases (filtered, sorted), GET /leases/count, GET /leases/{lease_id},
POST /leases/{lease_id}/release, POST /leases/release (many at once)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ipamd.api import paging
from ipamd.api.errors import bad_request
from ipamd.api.router import Body, Query, RequestContext, Router
from ipamd.api.routes.ipam_fields import Id
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
    ping_conflict: bool = Field(description="declined because the address answered the ping "
                                "check before an Offer (no client's lease)")
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


LeaseSort = Literal["ip", "-ip", "state", "-state", "mac", "-mac", "hostname", "-hostname",
                    "expires_at", "-expires_at"]


class LeaseFilters(Query):
    """The list's filters: also what a count selects."""

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

    def filters(self) -> leases.LeaseFilter:
        return leases.LeaseFilter(subnet_id=self.subnet_id, state=self.state, ip=self.ip,
                                  mac=self.mac, hostname=self.hostname)


class LeaseQuery(paging.PageQuery, LeaseFilters):
    sort: LeaseSort | None = Field(
        default=None, description="order by this field, then lease_id; a leading - reverses "
        "it (hostname ignores case, a missing mac or hostname sorts first). Default: lease_id, "
        "oldest first")


class LeaseCount(BaseModel):
    count: int = Field(description="leases the filters select")


class ReleaseMany(Body):
    lease_ids: list[Id] = Field(min_length=1, max_length=1000,
                                description="the leases to release (unknown or no longer live "
                                "ones are skipped, with the reason)")


class ReleaseSkipped(BaseModel):
    lease_id: uuid.UUID
    reason: str = Field(description="why it was not released (unknown, or no longer live)")


class ReleaseManyOut(BaseModel):
    released: list[LeaseOut] = Field(description="each as a single Release leaves it, audited")
    skipped: list[ReleaseSkipped]


def _sort_cursor(q: LeaseQuery, sort: str) -> tuple[Any, uuid.UUID] | None:
    """The cursor of a sorted page: the last row's sort key (checked as its type) and id."""
    if sort == "expires_at":
        found = paging.after(q, [dt.datetime, uuid.UUID])
        return None if found is None else (found[0], found[1])
    found = paging.after(q, [str, uuid.UUID])
    if found is None:
        return None
    if sort == "ip":
        try:
            return (ipaddress.ip_address(found[0]), found[1])
        except ValueError:
            raise bad_request("invalid cursor (take it from next_cursor)") from None
    return (found[0], found[1])


@router.route(
    "GET", "/leases", role="viewer", summary="List leases (filters: subnet_id, state, ip, mac, "
    "hostname; sort)", query=LeaseQuery, response=Page[LeaseOut], errors=(400, 401, 403),
)
async def list_leases(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(LeaseQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    if q.sort is not None:
        sort = q.sort.lstrip("-")
        after = _sort_cursor(q, sort)
        pairs = await ctx.run(leases.sorted_page, q.filters(), sort, q.sort.startswith("-"),
                              after, limit)
        return paging.page(pairs, limit, key=lambda p: [p[1], p[0]["lease_id"]],
                           render=lambda p: p[0])
    first = paging.after(q, [uuid.UUID])
    rows = await ctx.run(leases.list_page, q.filters(), first[0] if first else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["lease_id"]])


@router.route(
    "GET", "/leases/count", role="viewer", summary="How many leases the list's filters select",
    query=LeaseFilters, response=LeaseCount, errors=(400, 401, 403),
)
async def count_leases(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(LeaseFilters)
    return {"count": await ctx.run(leases.count, q.filters())}


@router.route(
    "POST", "/leases/release", role="operator",
    summary="Force-release many leases in one transaction (each as a single Release)",
    body=ReleaseMany, response=ReleaseManyOut, errors=(400, 401, 403, 422),
)
async def release_leases(ctx: RequestContext) -> dict[str, Any]:
    body = ctx.body_as(ReleaseMany)
    done = await ctx.tx(leases.release_many, ctx.actor, body.lease_ids)
    for server in (ctx.state.dhcp, ctx.state.dhcp6):
        if server is not None and done["released"]:
            server.forget([(r["lease_id"], r["subnet_id"], "released") for r in done["released"]])
    return done


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
