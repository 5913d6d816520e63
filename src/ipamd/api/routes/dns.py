"""/dns-servers, /dns-zones, static records (created at /dns-zones/{zone_id}/records, items at
/dns-records/{id}). Reads: viewer and up; zone and record writes: operator and up, as other IPAM
resources. A DNS server makes the appliance use a secret (a TSIG key, an X-API-Key, a keytab),
so servers are created, changed and deleted by admins only, and their secret locations
(secret_ref, keytab_path) are shown to admins only (core/secret_locations).
The rules live in the dns room; these are the fields."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ipamd.api import paging
from ipamd.api.paging import TenantPageQuery
from ipamd.api.router import Body, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.routes.ipam_fields import Id, Name, patch
from ipamd.api.schemas import Page
from ipamd.core import secret_locations
from ipamd.dns import records, servers, zones

router = Router("dns")

Adapter = Literal["bind_tsig", "powerdns_http", "ad_gsstsig", "embedded"]
Algorithm = Literal["hmac-sha256", "hmac-sha384", "hmac-sha512", "hmac-sha224", "hmac-sha1"]
RecordType = Literal["A", "AAAA", "CNAME", "PTR", "TXT", "MX", "SRV", "NS"]


class _ServerChecks(Body):
    @field_validator("api_url", check_fields=False)
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_api_url(value)

    @field_validator("secret_ref", check_fields=False)
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_secret_ref(value)

    @field_validator("tsig_key_name", check_fields=False)
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_key_name(value)

    @field_validator("address", check_fields=False)
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_address(value)

    @field_validator("krb_service_host", check_fields=False)
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_key_name(value)

    @field_validator("krb_realm", check_fields=False)
    @classmethod
    def _realm(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_realm(value)

    @field_validator("krb_principal", check_fields=False)
    @classmethod
    def _principal(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_principal(value)

    @field_validator("keytab_path", check_fields=False)
    @classmethod
    def _keytab(cls, value: str | None) -> str | None:
        return None if value is None else servers.check_keytab(value)


class ServerCreate(_ServerChecks):
    name: Name
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out")
    adapter: Adapter = Field(description="bind_tsig (RFC 2136 + TSIG), powerdns_http, or "
                             "embedded (this appliance answers for the zones itself)")
    address: str | None = Field(default=None, description="bind_tsig: the server's address")
    port: int = Field(default=53, ge=1, le=65535, description="bind_tsig: UDP/TCP port")
    tsig_key_name: str | None = Field(default=None, description="bind_tsig: the TSIG key name")
    tsig_algorithm: Algorithm = "hmac-sha256"
    api_url: str | None = Field(default=None, max_length=2048,
                                description="powerdns_http: the API base, e.g. …/api/v1")
    pdns_server_id: Name = Field(default="localhost", description="powerdns_http: server id")
    secret_ref: str | None = Field(
        default=None, description="env:<VARIABLE> or file:<absolute_path> (mode 0600) holding "
        "the base64 TSIG secret or the X-API-Key; never the secret (not for embedded)")
    krb_realm: str | None = Field(default=None, max_length=253,
                                  description="ad_gsstsig: realm, when the principal has none")
    krb_principal: str | None = Field(default=None, description="ad_gsstsig: e.g. ipamd@AD.EXAMPLE")
    keytab_path: str | None = Field(default=None, max_length=1024,
                                    description="ad_gsstsig: the principal's keytab (mode 0600)")
    krb_service_host: str | None = Field(
        default=None, max_length=253,
        description="ad_gsstsig: the DNS server's host name (principal DNS/<host>)")


class ServerPatch(_ServerChecks):
    name: Name = patch()
    address: str | None = patch()
    port: int = patch(ge=1, le=65535)
    tsig_key_name: str | None = patch()
    tsig_algorithm: Algorithm = patch()
    api_url: str | None = patch(max_length=2048)
    pdns_server_id: Name = patch()
    secret_ref: str | None = patch()
    krb_realm: str | None = patch(max_length=253)
    krb_principal: str | None = patch()
    keytab_path: str | None = patch(max_length=1024)
    krb_service_host: str | None = patch(max_length=253)


class ServerOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    adapter: str
    address: str | None
    port: int
    tsig_key_name: str | None
    tsig_algorithm: str
    api_url: str | None
    pdns_server_id: str
    secret_ref: str | None = Field(description="admins only; (redacted) for other roles")
    krb_realm: str | None
    krb_principal: str | None
    keytab_path: str | None = Field(description="admins only; (redacted) for other roles")
    krb_service_host: str | None
    created_at: dt.datetime
    updated_at: dt.datetime


class ZoneCreate(Body):
    name: str = Field(max_length=253, description="forward, or …in-addr.arpa / …ip6.arpa")
    server_id: Id
    default_ttl: int = Field(default=3600, ge=1, le=2_147_483_647)
    tenant_id: Id | None = Field(default=None, description="the default tenant when left out")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return zones.check_name(value)


class ZonePatch(Body):
    server_id: Id = patch()
    default_ttl: int = patch(ge=1, le=2_147_483_647)


class ZoneOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    server_id: uuid.UUID
    kind: str = Field(description="forward or reverse")
    default_ttl: int
    created_at: dt.datetime
    updated_at: dt.datetime


class ZoneQuery(TenantPageQuery):
    name: str | None = None


class RecordCreate(Body):
    name: str = Field(max_length=254, description="@, relative to the zone, or absolute in it")
    type: RecordType
    value: str = Field(max_length=2000, description="presentation format, e.g. 10.0.0.5, "
                       "'10 mail', 'host.example.com.'")
    ttl: int | None = Field(default=None, ge=1, le=2_147_483_647,
                            description="null: the zone's default TTL")
    tenant_id: Id | None = Field(default=None,
                                 description="the zone's tenant when left out (no other)")


class RecordPatch(Body):
    name: str = patch(max_length=254)
    type: RecordType = patch()
    value: str = patch(max_length=2000)
    ttl: int | None = patch(ge=1, le=2_147_483_647)


class RecordOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID = Field(description="always the zone's")
    zone_id: uuid.UUID
    name: str = Field(description="absolute, no trailing dot")
    type: str
    value: str = Field(description="canonical presentation form")
    ttl: int | None
    created_at: dt.datetime
    updated_at: dt.datetime


# ---- servers

def _shown(ctx: RequestContext, value: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = secret_locations.shown_to(ctx.caller.role, value)
    return shown


@router.route("POST", "/dns-servers", role="admin", summary="Create a DNS server",
              body=ServerCreate, response=ServerOut, status=201, idempotent=True,
              errors=(400, 401, 403, 409, 422))
async def create_server(ctx: RequestContext) -> Reply:
    return await ctx.create(servers.create, ctx.actor, ctx.fields())


@router.route("GET", "/dns-servers", role="viewer", summary="List DNS servers",
              query=TenantPageQuery, response=Page[ServerOut], errors=(400, 401, 403))
async def list_servers(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(TenantPageQuery)
    return _shown(ctx, await listing.by_id(ctx, servers.list_page, q.tenant_id))


@router.route("GET", "/dns-servers/{server_id}", role="viewer", summary="Read a DNS server",
              response=ServerOut, errors=(401, 403, 404))
async def get_server(ctx: RequestContext, server_id: uuid.UUID) -> dict[str, Any]:
    return _shown(ctx, await ctx.run(servers.get, server_id))


@router.route("PATCH", "/dns-servers/{server_id}", role="admin",
              summary="Change a DNS server", body=ServerPatch, response=ServerOut,
              errors=(401, 403, 404, 409, 422))
async def update_server(ctx: RequestContext, server_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(servers.update, ctx.actor, server_id,
                        ctx.fields(exclude_unset=True))


@router.route("DELETE", "/dns-servers/{server_id}", role="admin",
              summary="Delete a DNS server no zone or subnet uses", status=204,
              errors=(401, 403, 404, 409))
async def delete_server(ctx: RequestContext, server_id: uuid.UUID) -> Reply:
    await ctx.tx(servers.delete, ctx.actor, server_id)
    return Reply(None, 204)


# ---- zones

@router.route("POST", "/dns-zones", role="operator", summary="Create a DNS zone",
              body=ZoneCreate, response=ZoneOut, status=201, idempotent=True,
              errors=(400, 401, 403, 409, 422))
async def create_zone(ctx: RequestContext) -> Reply:
    return await ctx.create(zones.create, ctx.actor, ctx.fields())


@router.route("GET", "/dns-zones", role="viewer", summary="List DNS zones",
              query=ZoneQuery, response=Page[ZoneOut], errors=(400, 401, 403))
async def list_zones(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(ZoneQuery)
    return await listing.by_id(ctx, zones.list_page, q.name.lower().rstrip(".") if q.name
                               else None, q.tenant_id)


@router.route("GET", "/dns-zones/{zone_id}", role="viewer", summary="Read a DNS zone",
              response=ZoneOut, errors=(401, 403, 404))
async def get_zone(ctx: RequestContext, zone_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(zones.get, zone_id)


@router.route("PATCH", "/dns-zones/{zone_id}", role="operator",
              summary="Change a zone's server or default TTL", body=ZonePatch,
              response=ZoneOut, errors=(401, 403, 404, 409, 422))
async def update_zone(ctx: RequestContext, zone_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(zones.update, ctx.actor, zone_id, ctx.fields(exclude_unset=True))


@router.route("DELETE", "/dns-zones/{zone_id}", role="operator",
              summary="Delete a zone with no records that no subnet uses", status=204,
              errors=(401, 403, 404, 409))
async def delete_zone(ctx: RequestContext, zone_id: uuid.UUID) -> Reply:
    await ctx.tx(zones.delete, ctx.actor, zone_id)
    return Reply(None, 204)


# ---- records

@router.route("POST", "/dns-zones/{zone_id}/records", role="operator",
              summary="Create a static record in a zone", body=RecordCreate,
              response=RecordOut, status=201, idempotent=True,
              errors=(400, 401, 403, 404, 409, 422))
async def create_record(ctx: RequestContext, zone_id: uuid.UUID) -> Reply:
    return await ctx.create(records.create, ctx.actor, zone_id, ctx.fields())


@router.route("GET", "/dns-zones/{zone_id}/records", role="viewer",
              summary="List a zone's static records", query=paging.PageQuery,
              response=Page[RecordOut], errors=(400, 401, 403, 404))
async def list_records(ctx: RequestContext, zone_id: uuid.UUID) -> dict[str, Any]:
    return await listing.by_id(ctx, records.list_page, zone_id)


@router.route("GET", "/dns-records/{record_id}", role="viewer", summary="Read a static record",
              response=RecordOut, errors=(401, 403, 404))
async def get_record(ctx: RequestContext, record_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(records.get, record_id)


@router.route("PATCH", "/dns-records/{record_id}", role="operator",
              summary="Change a static record", body=RecordPatch, response=RecordOut,
              errors=(401, 403, 404, 409, 422))
async def update_record(ctx: RequestContext, record_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.tx(records.update, ctx.actor, record_id,
                        ctx.fields(exclude_unset=True))


@router.route("DELETE", "/dns-records/{record_id}", role="operator",
              summary="Delete a static record", status=204, errors=(401, 403, 404))
async def delete_record(ctx: RequestContext, record_id: uuid.UUID) -> Reply:
    await ctx.tx(records.delete, ctx.actor, record_id)
    return Reply(None, 204)
