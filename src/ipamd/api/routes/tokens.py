"""POST/GET/DELETE /tokens — admin only; the secret is shown once, at creation."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from pydantic import Field

from ipamd.api import paging
from ipamd.api.errors import ApiError
from ipamd.api.instant import Instant
from ipamd.api.router import Body, Reply, RequestContext, Role, Router
from ipamd.api.routes.ipam_fields import Id, Name
from ipamd.api.schemas import Page, TokenCreated, TokenOut
from ipamd.ipam import tokens
from ipamd.state import AppState

router = Router("tokens")


class TokenCreate(Body):
    # The same rule as tenant and other names: printable, no control characters.
    name: Name = Field(description="what the token is for")
    role: Role = Field(description="admin, operator or viewer")
    expires_at: Instant | None = Field(
        default=None, description="RFC 3339 time after which the token stops working"
    )
    tenant_id: Id | None = Field(
        default=None, description="the default tenant when left out; a label: it does not "
        "narrow what the token may reach")


class TokenQuery(paging.TenantPageQuery):
    include_revoked: bool = False


def _token_rate(state: AppState) -> int:
    return state.config.limits.token_creations_per_minute


@router.route(
    "POST", "/tokens", role="admin", summary="Mint a token (the secret is returned once)",
    body=TokenCreate, response=TokenCreated, status=201, idempotent=True,
    rate_limit_per_minute=_token_rate, errors=(400, 401, 403, 409, 422, 429),
)
async def create_token(ctx: RequestContext) -> Reply:
    body = ctx.body_as(TokenCreate)
    if body.expires_at is not None and body.expires_at <= dt.datetime.now(dt.UTC):
        raise ApiError(422, "expires_at: must be in the future", "validation_error")
    bootstrap = ctx.caller.token_id is None
    reply = await ctx.create(
        tokens.create, ctx.actor, body.name, body.role, body.expires_at, bootstrap,
        body.tenant_id,
    )
    ctx.state.tokens_exist = True
    return reply


@router.route(
    "GET", "/tokens", role="admin", summary="List tokens (never their secrets)",
    query=TokenQuery, response=Page[TokenOut], errors=(400, 401, 403),
)
async def list_tokens(ctx: RequestContext) -> dict[str, Any]:
    query = ctx.query_as(TokenQuery)
    limit = paging.limit_of(query, ctx.state.config.limits)
    after = paging.after(query, [uuid.UUID])
    rows = await ctx.run(tokens.list_page, after[0] if after else None, limit,
                         query.include_revoked, query.tenant_id)
    return paging.page(rows, limit, key=lambda r: [r["id"]])


@router.route(
    "GET", "/tokens/{token_id}", role="admin", summary="Read one token (never its secret)",
    response=TokenOut, errors=(401, 403, 404),
)
async def get_token(ctx: RequestContext, token_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(tokens.get, token_id)


@router.route(
    "DELETE", "/tokens/{token_id}", role="admin", summary="Revoke a token",
    status=204, errors=(401, 403, 404),
)
async def delete_token(ctx: RequestContext, token_id: uuid.UUID) -> Reply:
    await ctx.tx(tokens.revoke, ctx.actor, token_id)
    ctx.token_cache.clear()  # this node at once; the others on the NOTIFY (migration 0009)
    return Reply(None, 204)
