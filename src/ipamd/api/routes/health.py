"""GET /health: database reachability and schema version."""

from __future__ import annotations

import time

import trio

from ipamd import __version__
from ipamd.api.router import Reply, RequestContext, Router
from ipamd.api.schemas import Health
from ipamd.db.migrate import schema_version

router = Router("system")


@router.route(
    "GET", "/health", role="viewer", summary="Health: database reachability and schema version",
    response=Health, errors=(401, 403, 503),
)
async def health(ctx: RequestContext) -> Reply:
    version = None
    database = "ok"
    with trio.move_on_after(2) as scope:
        try:
            version = await ctx.run(schema_version)
        except Exception as error:  # any failure means "not reachable" to a health check
            database = f"unreachable: {error.__class__.__name__}"
    if scope.cancelled_caught:
        database = "unreachable: timeout"
    ok = database == "ok"
    body = {
        "status": "ok" if ok else "degraded",
        "database": database,
        "schema_version": version,
        "version": __version__,
        "uptime_seconds": round(time.time() - ctx.state.started_at, 3),
    }
    return Reply(body, 200 if ok else 503)
