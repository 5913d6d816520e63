"""List routes over id-keyed rows: page window from the query, one unit run, the page."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from ipamd.api import paging
from ipamd.api.errors import not_found
from ipamd.api.router import RawJson, Reply, RequestContext

# A list unit: unit(conn, *filters, after_id, limit) -> rows (limit + 1 of them at most).
ListUnit = Callable[..., Awaitable[Any]]


async def _rows(ctx: RequestContext, unit: ListUnit, *filters: Any) -> tuple[Any, int]:
    q = ctx.query_as(paging.PageQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    after = paging.after(q, [uuid.UUID])
    rows = await ctx.run(unit, *filters, after[0] if after else None, limit)
    return rows, limit


async def by_id(ctx: RequestContext, unit: ListUnit, *filters: Any) -> dict[str, Any]:
    """The page ``unit`` returns for the request's limit and cursor."""
    rows, limit = await _rows(ctx, unit, *filters)
    return paging.page(rows, limit, key=lambda r: [r["id"]])


async def by_id_rendered(ctx: RequestContext, unit: ListUnit, *filters: Any) -> Reply:
    """``by_id`` for a unit that returns (id, the item as JSON text) rows."""
    rows, limit = await _rows(ctx, unit, *filters)
    return Reply(RawJson(paging.page_text(rows, limit)), 200)


async def of_subnet(
    ctx: RequestContext, unit: ListUnit, subnet_id: uuid.UUID, *filters: Any
) -> dict[str, Any]:
    """``by_id`` for a subnet's children; ``unit`` returns None when the subnet is unknown."""
    rows, limit = await _rows(ctx, unit, subnet_id, *filters)
    if rows is None:
        raise not_found("subnet", str(subnet_id))
    return paging.page(rows, limit, key=lambda r: [r["id"]])
