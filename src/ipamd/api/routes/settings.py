"""GET/PATCH /settings: appliance settings an admin edits (trusted DHCP relays)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, field_validator

from ipamd.api.router import Body, RequestContext, Router
from ipamd.dhcp import settings

router = Router("settings")

_RELAYS_MAX = 1000


class SettingsOut(BaseModel):
    trusted_relays: list[str] = Field(
        description="relays (addresses or IPv4 networks) whose DHCP requests are served "
        "(a relay not listed is not served; docs/relays.md); combined with trusted_relays_config"
    )
    trusted_relays_config: list[str] = Field(
        description="read-only: dhcp.trusted_relays from the TOML file"
    )
    updated_at: dt.datetime | None = Field(description="last change; null if never changed")


def _relay(value: str) -> str:
    return settings.normalise_relays([value])[0]


# Checked one by one, so an error names its position: trusted_relays[2].
RelayEntry = Annotated[str, AfterValidator(_relay)]


class SettingsPatch(Body):
    trusted_relays: list[RelayEntry] | None = Field(
        default=None, max_length=_RELAYS_MAX,
        description="replaces the list; each an IPv4 address or network (10.0.0.0/24)",
    )

    @field_validator("trusted_relays")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(value))


def _shown(ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
    return {**values, "trusted_relays_config": list(ctx.state.config.dhcp.trusted_relays)}


@router.route(
    "GET", "/settings", role="viewer", summary="Read the appliance settings",
    response=SettingsOut, errors=(401, 403),
)
async def get_settings(ctx: RequestContext) -> dict[str, Any]:
    return _shown(ctx, await ctx.run(settings.read))


@router.route(
    "PATCH", "/settings", role="admin", summary="Change settings (audited)",
    body=SettingsPatch, response=SettingsOut, errors=(400, 401, 403, 422),
)
async def patch_settings(ctx: RequestContext) -> dict[str, Any]:
    body = ctx.body_as(SettingsPatch)
    changes = body.model_dump(exclude_unset=True, exclude_none=True)
    if changes:
        values = await ctx.tx(settings.update, ctx.actor, changes)
        server = ctx.state.dhcp
        if server is not None:
            await server.reload_plan()  # this node now; the others on the NOTIFY
    else:
        values = await ctx.run(settings.read)
    return _shown(ctx, values)
