"""GET /audit: who changed what, with the object before and after."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from pydantic import Field

from ipamd.api import paging
from ipamd.api.instant import Instant
from ipamd.api.router import RequestContext, Router
from ipamd.api.schemas import AuditEntry, Page
from ipamd.core.audit import entry_out

router = Router("audit")


class AuditQuery(paging.PageQuery):
    object_type: str | None = None
    object_id: str | None = None
    actor: str | None = None
    action: str | None = None
    from_: Instant | None = Field(default=None, alias="from")
    to: Instant | None = None


async def _list(
    conn: asyncpg.Connection, q: AuditQuery, after: uuid.UUID | None, limit: int
) -> list[asyncpg.Record]:
    # Newest first: the cursor walks ids downwards.
    return await conn.fetch(
        """SELECT * FROM audit_log
           WHERE ($1::uuid IS NULL OR id < $1)
             AND ($2::text IS NULL OR object_type = $2)
             AND ($3::text IS NULL OR object_id = $3)
             AND ($4::text IS NULL OR actor = $4)
             AND ($5::text IS NULL OR action = $5)
             AND ($6::timestamptz IS NULL OR at >= $6)
             AND ($7::timestamptz IS NULL OR at < $7)
           ORDER BY id DESC LIMIT $8""",
        after, q.object_type, q.object_id, q.actor, q.action, q.from_, q.to, limit + 1,
    )


@router.route(
    "GET", "/audit", role="viewer", summary="Audit entries, newest first",
    query=AuditQuery, response=Page[AuditEntry], errors=(400, 401, 403),
)
async def list_audit(ctx: RequestContext) -> dict[str, Any]:
    q: AuditQuery = ctx.query
    limit = paging.limit_of(q, ctx.state.config.limits)
    after = paging.after(q, [uuid.UUID])
    rows = await ctx.run(_list, q, after[0] if after else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["id"]], render=entry_out)
