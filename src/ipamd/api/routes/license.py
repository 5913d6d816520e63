"""GET /license: the managed-IP entitlement and how much of it is used."""

from __future__ import annotations

from typing import Any

from ipamd.api.router import RequestContext, Router
from ipamd.api.routes.ipam_models import LicenseOut
from ipamd.ipam import license
from ipamd.state import AppState

router = Router("license")


def entitlement(state: AppState) -> license.Entitlement:
    return license.Entitlement(tier=state.config.license.tier,
                               cap=state.config.license.max_managed_ips)


@router.route(
    "GET", "/license", role="viewer",
    summary="License tier, cap and managed IPs in use (reservations + assignments)",
    response=LicenseOut, errors=(401, 403),
)
async def get_license(ctx: RequestContext) -> dict[str, Any]:
    return await ctx.run(license.status, entitlement(ctx.state))
