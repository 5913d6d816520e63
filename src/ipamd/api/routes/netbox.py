"""NetBox-style export (JSON or CSV) and import (creates missing prefixes only) of prefixes."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field
from quart import Response

from ipamd.api.errors import invalid
from ipamd.api.router import Body, Query, RequestContext, Router
from ipamd.api.routes.ipam_fields import Id
from ipamd.api.routes.ipam_models import ImportReport, NetboxPrefix
from ipamd.core import jsonutil
from ipamd.ipam import netbox

router = Router("netbox")


class ExportQuery(Query):
    format: Literal["json", "csv"] = Field(default="json", description="json or csv")
    tenant_id: uuid.UUID | None = Field(default=None, description="only this tenant's prefixes")


class NetboxImport(Body):
    csv: str | None = Field(
        default=None, description="NetBox bulk-import CSV; the header names the columns "
                                  "(prefix, tenant, description, ...)")
    prefixes: list[dict[str, Any]] | None = Field(
        default=None, max_length=netbox.MAX_ROWS,
        description="NetBox JSON: objects with prefix, tenant (name or {name}), description")
    tenant_id: Id | None = Field(
        default=None, description="tenant of rows without a tenant; the default tenant if left out")


@router.route(
    "GET", "/netbox/prefixes", role="viewer",
    summary="Export prefixes with NetBox's field names (JSON or CSV)",
    query=ExportQuery, response=list[NetboxPrefix], errors=(400, 401, 403),
    content_types=("application/json", "text/csv"),
)
async def export_prefixes(ctx: RequestContext) -> Response:
    q = ctx.query_as(ExportQuery)
    rows = await ctx.run(netbox.export, q.tenant_id)
    if q.format == "csv":
        return Response(
            netbox.to_csv(rows), status=200, content_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="prefixes.csv"'},
        )
    return Response(jsonutil.dumps(rows), status=200, content_type="application/json")


@router.route(
    "POST", "/netbox/prefixes/import", role="operator",
    summary="Import prefixes (NetBox CSV or JSON): creates the missing ones, skips the rest",
    body=NetboxImport, response=ImportReport, errors=(400, 401, 403, 409, 422),
)
async def import_prefixes(ctx: RequestContext) -> dict[str, Any]:
    body = ctx.body_as(NetboxImport)
    if (body.csv is None) == (body.prefixes is None):
        raise invalid("csv", "give exactly one of csv (text) or prefixes (a JSON list)")
    rows = netbox.parse_csv(body.csv) if body.csv is not None else netbox.parse_json(
        body.prefixes or [])
    return await ctx.tx(netbox.import_rows, ctx.actor, rows, body.tenant_id)
