"""GET /audit: who changed what, with the object before and after."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

import asyncpg
from pydantic import BaseModel, Field

from ipamd.api import paging
from ipamd.api.instant import Instant
from ipamd.api.router import Query, RequestContext, Router
from ipamd.api.schemas import AuditEntry, Page
from ipamd.core.audit import entry_out

router = Router("audit")


class AuditFilters(Query):
    """The list's filters: also what a count selects."""

    object_type: str | None = None
    object_id: str | None = None
    actor: str | None = None
    action: str | None = None
    from_: Instant | None = Field(default=None, alias="from")
    to: Instant | None = None

    def args(self) -> tuple[Any, ...]:
        return (self.object_type, self.object_id, self.actor, self.action, self.from_, self.to)


class AuditQuery(paging.PageQuery, AuditFilters):
    sort: Literal["at", "-at", "actor", "-actor", "action", "-action", "object_type",
                  "-object_type"] | None = Field(
        default=None, description="order by this field, then id; a leading - reverses it. "
        "Default: newest first")


class AuditCount(BaseModel):
    count: int = Field(description="entries the filters select")


# The filters as SQL over $2..$7 (the order of AuditFilters.args).
_FILTERED = """($2::text IS NULL OR object_type = $2)
             AND ($3::text IS NULL OR object_id = $3)
             AND ($4::text IS NULL OR actor = $4)
             AND ($5::text IS NULL OR action = $5)
             AND ($6::timestamptz IS NULL OR at >= $6)
             AND ($7::timestamptz IS NULL OR at < $7)"""
# Sort keys: the column and the SQL type of its cursor value; names only from here reach SQL.
_SORTS = {"at": "timestamptz", "actor": "text", "action": "text", "object_type": "text"}


async def _list(
    conn: asyncpg.Connection, q: AuditQuery, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    # Newest first: the cursor walks ids downwards.
    return await conn.fetch(
        f"""SELECT * FROM audit_log WHERE ($1::uuid IS NULL OR id < $1) AND {_FILTERED}
           ORDER BY id DESC LIMIT $8""",
        after, *q.args(), limit + 1,
    )


async def _sorted(
    conn: asyncpg.Connection, q: AuditQuery, sort: str, descending: bool,
    after: list[Any] | None, limit: int,
) -> list[asyncpg.Record]:
    op, way = ("<", "DESC") if descending else (">", "ASC")
    return await conn.fetch(
        f"""SELECT * FROM audit_log
           WHERE ($1::boolean OR ({sort}, id) {op} ($8::{_SORTS[sort]}, $9::uuid))
             AND {_FILTERED}
           ORDER BY {sort} {way}, id {way} LIMIT $10""",
        after is None, *q.args(), *(after or (None, None)), limit + 1,
    )


async def _count(conn: asyncpg.Connection, q: AuditFilters) -> int:
    selected: int = await conn.fetchval(
        f"SELECT count(*) FROM audit_log WHERE $1::boolean AND {_FILTERED}", True, *q.args())
    return selected


@router.route(
    "GET", "/audit", role="viewer", summary="Audit entries, newest first",
    query=AuditQuery, response=Page[AuditEntry], errors=(400, 401, 403),
)
async def list_audit(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(AuditQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    if q.sort is not None:
        sort = q.sort.lstrip("-")
        first = dt.datetime if sort == "at" else str
        rows = await ctx.run(_sorted, q, sort, q.sort.startswith("-"),
                             paging.after(q, [first, uuid.UUID]), limit)
        return paging.page(rows, limit, key=lambda r: [r[sort], r["id"]], render=entry_out)
    after = paging.after(q, [uuid.UUID])
    rows = await ctx.run(_list, q, after[0] if after else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["id"]], render=entry_out)


@router.route(
    "GET", "/audit/count", role="viewer", summary="How many audit entries the filters select",
    query=AuditFilters, response=AuditCount, errors=(400, 401, 403),
)
async def count_audit(ctx: RequestContext) -> dict[str, Any]:
    return {"count": await ctx.run(_count, ctx.query_as(AuditFilters))}
