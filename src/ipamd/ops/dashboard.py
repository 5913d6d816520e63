"""GET /dashboard in one unit of work: what an operator looks at first."""

from __future__ import annotations

import datetime as dt
from typing import Any

import asyncpg
from pydantic import BaseModel, Field

from ipamd.ipam import license as ipam_license
from ipamd.ops import alerts, figures, nodes

WORST_MAX = 20  # subnets and pools shown, worst-utilised first
OPEN_ALERTS_MAX = 50


class DashboardOut(BaseModel):
    generated_at: dt.datetime
    license: dict[str, Any] = Field(description="as GET /license, plus percent_used")
    leases: dict[str, int] = Field(description="lease rows by state")
    grants_per_minute: list[dict[str, Any]] = Field(description="the last 60 minutes")
    subnets: list[dict[str, Any]] = Field(
        description=f"the {WORST_MAX} most utilised: used of assignable addresses, as "
                    "GET /subnets/{id}/utilisation")
    pools: list[dict[str, Any]] = Field(
        description=f"the {WORST_MAX} fullest by pool use: live leases of the pool's addresses")
    dhcp: list[dict[str, Any]] = Field(description="per node: received, sent, drops by reason")
    outbox: list[dict[str, Any]] = Field(description="rows by kind and state, oldest age")
    nodes: dict[str, Any] = Field(description="up and down counts, and each node's status")
    alerts: dict[str, Any] = Field(description="open alerts (newest first) and their count")


async def build(conn: asyncpg.Connection, tier: str, cap: int, down_seconds: float,
                live: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """``live``: this node's DHCP counters by node name, fresher than its last heartbeat."""
    live = live or {}
    lic = await ipam_license.status(conn, ipam_license.Entitlement(tier, cap))
    lic["percent_used"] = round(100.0 * lic["managed_ips"] / cap, 2) if cap else 0.0
    pools = await figures.pool_use(conn)
    subnets = await figures.subnet_utilisation(conn)
    node_rows = await nodes.list_all(conn, down_seconds)
    open_alerts = await alerts.open_alerts(conn, OPEN_ALERTS_MAX)
    open_count = await conn.fetchval("SELECT count(*) FROM alerts WHERE cleared_at IS NULL")
    return {
        "generated_at": await conn.fetchval("SELECT now()"),
        "license": lic,
        "leases": await figures.leases_by_state(conn),
        "grants_per_minute": await figures.grants_per_minute(conn),
        "subnets": subnets[:WORST_MAX],
        "pools": pools[:WORST_MAX],
        "dhcp": [
            {"node": n["name"], "status": n["status"],
             "received": counters.get("received", {}),
             "sent": counters.get("sent", {}),
             "drops": counters.get("drops", {})}
            for n in node_rows if n["dhcp"] is not None
            for counters in [live.get(n["name"]) or n["dhcp"] or {}]
        ],
        "outbox": await figures.outbox(conn),
        "nodes": {
            "up": sum(1 for n in node_rows if n["status"] == "up"),
            "down": sum(1 for n in node_rows if n["status"] == "down"),
            "items": [{"id": n["id"], "name": n["name"], "status": n["status"],
                       "last_seen_at": n["last_seen_at"]} for n in node_rows],
        },
        "alerts": {"open": open_count, "items": open_alerts},
    }
