"""GET /whoami: the caller as the API sees it (the console shows its name and role)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ipamd.api.router import RequestContext, Router

router = Router("tokens")


class WhoAmI(BaseModel):
    token_id: str | None = Field(description="null before the first token exists (bootstrap)")
    name: str | None
    role: str = Field(description="admin, operator or viewer")
    loopback: bool = Field(description="the request came from the host itself")
    bootstrap: bool = Field(
        description="no token exists yet: loopback callers are admin until one is minted"
    )


@router.route(
    "GET", "/whoami", role="viewer", summary="The calling token's name and role",
    response=WhoAmI, errors=(401, 403),
)
async def whoami(ctx: RequestContext) -> dict[str, Any]:
    caller = ctx.caller
    return {
        "token_id": caller.token_id,
        "name": caller.token_name,
        "role": caller.role,
        "loopback": caller.loopback,
        "bootstrap": caller.token_id is None,
    }
