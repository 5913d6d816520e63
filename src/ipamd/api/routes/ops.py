"""Operations: /nodes, /dashboard, /alerts, /settings/alert-rules and /metrics (Prometheus)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, Field, field_validator
from quart import Response

from ipamd.api import paging
from ipamd.api.router import Body, Query, Reply, RequestContext, Router
from ipamd.api.routes import listing
from ipamd.api.schemas import Page
from ipamd.messages import DhcpCounters, RenderMetrics
from ipamd.ops import alerts, dashboard, metrics, nodes, pool_samples, service
from ipamd.state import AppState

router = Router("operations")


class NodeOut(BaseModel):
    id: uuid.UUID
    name: str = Field(description="node_name from the TOML file, or the host name")
    version: str
    pid: int
    status: Literal["up", "down"] = Field(
        description="down once silent for ops.node_down_seconds, or stopped")
    started_at: dt.datetime
    last_seen_at: dt.datetime
    stopped_at: dt.datetime | None
    addresses: dict[str, Any] = Field(description="where it listens: api, dhcp")
    services: dict[str, bool] = Field(description="enabled services and whether each runs")
    dhcp: dict[str, Any] | None = Field(description="its DHCP counters at the last heartbeat")
    created_at: dt.datetime
    updated_at: dt.datetime


def _down(ctx: RequestContext) -> float:
    return ctx.state.config.ops.node_down_seconds


@router.route("GET", "/nodes", role="viewer", summary="Appliance nodes on this database",
              query=paging.PageQuery, response=Page[NodeOut], errors=(400, 401, 403))
async def list_nodes(ctx: RequestContext) -> dict[str, Any]:
    return await listing.by_id(ctx, nodes.list_page, _down(ctx))


@router.route("GET", "/nodes/{node_id}", role="viewer", summary="One node",
              response=NodeOut, errors=(401, 403, 404))
async def get_node(ctx: RequestContext, node_id: uuid.UUID) -> dict[str, Any]:
    return await ctx.run(nodes.get, _down(ctx), node_id)


@router.route("DELETE", "/nodes/{node_id}", role="admin",
              summary="Retire a node that is down (a node that is up: 409)",
              status=204, errors=(401, 403, 404, 409))
async def delete_node(ctx: RequestContext, node_id: uuid.UUID) -> Reply:
    await ctx.tx(nodes.delete, ctx.actor, _down(ctx), node_id)
    return Reply(None, 204)


class AlertOut(BaseModel):
    id: uuid.UUID
    rule: str = Field(description="pool_utilisation, subnet_utilisation, no_address, "
                      "outbox_failed, outbox_backlog, dns_delivery_failed, node_down, license, "
                      "dhcp_drops")
    subject: str = Field(description="what it is about: a pool or subnet id, a node, a kind")
    status: Literal["open", "cleared"]
    severity: str
    summary: str
    value: float | None
    threshold: float | None
    opened_at: dt.datetime
    cleared_at: dt.datetime | None
    created_at: dt.datetime
    updated_at: dt.datetime


class AlertQuery(paging.PageQuery):
    status: Literal["open", "cleared"] | None = None


@router.route("GET", "/alerts", role="viewer", summary="Alerts, open and cleared, newest first",
              query=AlertQuery, response=Page[AlertOut], errors=(400, 401, 403))
async def list_alerts(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(AlertQuery)
    limit = paging.limit_of(q, ctx.state.config.limits)
    before = paging.after(q, [uuid.UUID])
    rows = await ctx.run(alerts.list_page, q.status, before[0] if before else None, limit)
    return paging.page(rows, limit, key=lambda r: [r["id"]])


class AlertRules(BaseModel):
    utilisation_percent: float
    utilisation_clear_percent: float
    license_percent: float
    license_clear_percent: float
    outbox_backlog_seconds: float
    outbox_failed_hours: float
    drops_per_minute: float
    drops_clear_per_minute: float
    no_address_quiet_seconds: float


class AlertRulesPatch(Body):
    """Only the thresholds given change; an alert clears below its clear threshold."""

    utilisation_percent: float | None = None
    utilisation_clear_percent: float | None = None
    license_percent: float | None = None
    license_clear_percent: float | None = None
    outbox_backlog_seconds: float | None = None
    outbox_failed_hours: float | None = None
    drops_per_minute: float | None = None
    drops_clear_per_minute: float | None = None
    no_address_quiet_seconds: float | None = None


@router.route("GET", "/settings/alert-rules", role="viewer", summary="Alert thresholds",
              response=AlertRules, errors=(401, 403))
async def get_alert_rules(ctx: RequestContext) -> dict[str, Any]:
    return await ctx.run(alerts.get_rules)


@router.route("PATCH", "/settings/alert-rules", role="admin", summary="Change alert thresholds",
              body=AlertRulesPatch, response=AlertRules, errors=(401, 403, 422))
async def patch_alert_rules(ctx: RequestContext) -> dict[str, Any]:
    body = ctx.body_as(AlertRulesPatch)
    changes = {k: v for k, v in body.model_dump(include=body.model_fields_set).items()
               if v is not None}
    return await ctx.tx(alerts.set_rules, ctx.actor, changes)


@router.route("GET", "/dashboard", role="viewer",
              summary="Everything the dashboard shows, in one request",
              response=dashboard.DashboardOut, errors=(401, 403))
async def get_dashboard(ctx: RequestContext) -> dict[str, Any]:
    config = ctx.state.config
    # This node's counters now, not as of its last heartbeat (up to ops.heartbeat_seconds old).
    live = ({} if ctx.state.dhcp is None
            else {service.node_name(ctx.state): await _dhcp_counters(ctx.state)})
    return await ctx.run(dashboard.build, config.license.tier, config.license.max_managed_ips,
                         config.ops.node_down_seconds, live)


class PoolUseQuery(Query):
    since: AwareDatetime | None = Field(
        default=None, description="ISO 8601 with a zone; the last hour when left out")

    @field_validator("since")
    @classmethod
    def _in_utc(cls, value: dt.datetime | None) -> dt.datetime | None:
        # 0001-01-01T00:00+14:00 is a valid string but no UTC moment Python can hold.
        try:
            return None if value is None else value.astimezone(dt.UTC)
        except OverflowError:
            raise ValueError("out of range once converted to UTC") from None


class PoolUseSample(BaseModel):
    at: dt.datetime
    pool_id: uuid.UUID
    name: str
    cidr: str = Field(description="the pool's subnet")
    used: int = Field(description="live leases in the pool")
    size: int | str = Field(description="the pool's addresses less its excludes; IPv6: a "
                                        "decimal string")
    percent_used: float = Field(description="pool use, not the subnet's utilisation")


class PoolUseOut(BaseModel):
    since: dt.datetime
    interval_seconds: float = Field(description="ops.pool_sample_seconds")
    items: list[PoolUseSample] = Field(
        description=f"oldest first, at most {pool_samples.READ_MAX}; pools deleted since are "
                    "left out")


@router.route("GET", "/dashboard/pool-use", role="viewer",
              summary="Each pool's use over time, as sampled every ops.pool_sample_seconds",
              query=PoolUseQuery, response=PoolUseOut, errors=(400, 401, 403))
async def get_pool_use(ctx: RequestContext) -> dict[str, Any]:
    q = ctx.query_as(PoolUseQuery)
    since = q.since or dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    items = await ctx.run(pool_samples.read, since)
    return {"since": since, "interval_seconds": ctx.state.config.ops.pool_sample_seconds,
            "items": items}


async def _dhcp_counters(state: AppState) -> dict[str, Any]:
    """This node's DHCP counters now: in an API worker, asked of the main process (its
    pushed copy is up to a second old)."""
    assert state.dhcp is not None
    if state.main_process is None:
        return state.dhcp.counters_snapshot()
    counters = await state.main_process.call(DhcpCounters())
    return counters if isinstance(counters, dict) else {}


@router.route("GET", "/metrics", role="viewer", summary="Prometheus metrics (text format)",
              errors=(401, 403), content_types=("text/plain",))
async def get_metrics(ctx: RequestContext) -> Response:
    latency = ctx.state.counters.api_latency
    main = ctx.state.main_process
    if main is not None:  # an API worker: the node's figures are the main process's
        text = await main.call(RenderMetrics(api_latency=metrics.latency_report(latency)))
        return Response(str(text), status=200, content_type=metrics.CONTENT_TYPE)
    data = await ctx.run(metrics.gather, ctx.state.config.ops.node_down_seconds)
    body = metrics.render(ctx.state, data, latency)
    return Response(body, status=200, content_type=metrics.CONTENT_TYPE)
