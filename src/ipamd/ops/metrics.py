"""Prometheus text for /api/v1/metrics, built with prometheus-client at scrape time.

In-memory parts (DHCP counters and histograms, outbox counters and delivery latency, API
request latency) are read from AppState; database parts (leases, pools, outbox rows, nodes)
come from one unit of work per scrape. Cardinality is bounded: message types and drop reasons
are fixed sets, routes are templates, pools are the worst POOL_SERIES_MAX only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import asyncpg
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ipamd.core.histogram import SECONDS_BUCKETS, ApiLatency, Histogram
from ipamd.dhcp.pingcheck import OUTCOMES as PING_OUTCOMES
from ipamd.messages import HistogramData, LatencyData
from ipamd.ops import figures, nodes
from ipamd.state import AppState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
POOL_SERIES_MAX = 50
# Fixed label sets: anything else a counter holds is summed under "other".
MESSAGE_TYPES = ("discover", "offer", "request", "decline", "ack", "nak", "release", "inform")


def latency_report(latency: ApiLatency) -> list[LatencyData]:
    """Request latency as an API worker process reports it to the main process."""
    return [LatencyData(key=key, counts=h.counts, total=h.total, count=h.count)
            for key, h in latency.by_key.items()]


def add_latency_report(latency: ApiLatency, report: Iterable[LatencyData]) -> None:
    """Add another process's ``latency_report`` (a histogram of other buckets is skipped)."""
    for item in report:
        theirs = _histogram_of(item)
        if theirs is not None:
            mine = latency.by_key.get(item.key)
            latency.by_key[item.key] = theirs if mine is None else merged(mine, theirs)


async def gather(conn: asyncpg.Connection, down_seconds: float) -> dict[str, Any]:
    """The database part of a scrape: one crossing."""
    pools = await figures.pool_use(conn)
    return {
        "leases": await figures.leases_by_state(conn),
        "pools": pools[:POOL_SERIES_MAX],
        "outbox": await figures.outbox(conn),
        "journal": await figures.lease_journal(conn),
        "nodes": await nodes.list_all(conn, down_seconds),
    }


def _histogram(name: str, doc: str, labels: list[str],
               series: list[tuple[list[str], Histogram]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, h in series:
        family.add_metric(values, h.cumulative(), sum_value=h.total)
    return family


def _typed(counter: dict[str, int]) -> dict[str, int]:
    out = dict.fromkeys(MESSAGE_TYPES, 0)
    for name, n in counter.items():
        key = name if name in out else "other"
        out[key] = out.get(key, 0) + n
    return out


def _by_name(counter: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counter.items()))


# The counter families both DHCP servers keep: (snapshot key, label).
_SERVER_COUNTERS = (("received", "type"), ("sent", "type"), ("drops", "reason"),
                    ("lease_transitions", "event"))


def _server_counters(snap: dict[str, Any] | None, families: Sequence[tuple[str, str]],
                     types: Callable[[dict[str, int]], dict[str, int]]
                     ) -> list[CounterMetricFamily]:
    """A DHCP server's families (``families``: name and help of each in _SERVER_COUNTERS's
    order) from its counters' ``snap`` (None: the server is off, so no samples); message
    types pass through ``types``, drop reasons and lease events (fixed sets) go sorted."""
    out = []
    for (key, label), (name, doc) in zip(_SERVER_COUNTERS, families, strict=True):
        family = CounterMetricFamily(name, doc, labels=[label])
        if snap is not None:
            for value, n in (types if label == "type" else _by_name)(snap[key]).items():
                family.add_metric([value], n)
        out.append(family)
    return out


class _Scrape(Collector):
    def __init__(self, state: AppState, db: dict[str, Any], api: ApiLatency) -> None:
        self.state, self.db, self.api = state, db, api

    def collect(self) -> Iterator[Metric]:
        yield from self._dhcp()
        yield from self._dhcp6()
        yield from self._outbox()
        yield from self._database()
        yield _histogram(
            "ipamd_api_request_duration_seconds", "API request latency", ["method", "route",
                                                                          "status"],
            [([m, r, s], h) for (m, r, s), h in sorted(self.api.by_key.items())])

    def _dhcp(self) -> Iterator[Metric]:
        counters = self.state.counters.dhcp
        snap = None if counters is None else counters.snapshot()
        families = _server_counters(snap, (
            ("ipamd_dhcp_packets_received", "DHCP packets received"),
            ("ipamd_dhcp_packets_sent", "DHCP packets sent"),
            ("ipamd_dhcp_drops", "DHCP packets dropped, by reason"),
            ("ipamd_dhcp_lease_transitions", "Lease changes committed by this node"),
        ), _typed)
        if counters is not None and snap is not None:
            yield _histogram("ipamd_dhcp_commit_batch_size", "Lease operations per group commit",
                             [], [([], counters.batch_sizes)])
            yield _histogram("ipamd_dhcp_commit_duration_seconds",
                             "Group commit latency (database time per batch)", [],
                             [([], counters.commit_latency)])
            yield _histogram("ipamd_dhcp_commit_wait_seconds",
                             "Wait of each batch's oldest lease operation from its packet's "
                             "handling until the batch went to the database", [],
                             [([], counters.commit_wait)])
            # The ping check before an Offer (docs/api-ipam.md): answered = conflicts.
            pings = CounterMetricFamily("ipamd_dhcp_ping_checks",
                                        "Ping check probes before an Offer, by outcome",
                                        labels=["outcome"])
            for outcome in PING_OUTCOMES:
                pings.add_metric([outcome], snap["ping_checks"].get(outcome, 0))
            yield pings
        yield from families

    def _dhcp6(self) -> Iterator[Metric]:
        # The DHCPv6 server's counters (dhcp6/counters.py): message types and drop reasons
        # are fixed sets, so the label sets stay bounded.
        counters = self.state.counters.dhcp6
        yield from _server_counters(None if counters is None else counters.snapshot(), (
            ("ipamd_dhcp6_messages_received",
             "DHCPv6 client messages received (after unwrapping their relays)"),
            ("ipamd_dhcp6_messages_sent", "DHCPv6 messages sent"),
            ("ipamd_dhcp6_drops", "DHCPv6 datagrams dropped, by reason"),
            ("ipamd_dhcp6_lease_transitions", "DHCPv6 binding changes committed by this node"),
        ), _by_name)

    def _outbox(self) -> Iterator[Metric]:
        # This process's deliveries and its children's (DNS updates: see ipamd/child).
        counters = dict(self.state.counters.outbox.outcomes)
        latency = dict(self.state.counters.outbox.latency)
        for report in self.state.children.values():
            for name, n in report.outbox.items():
                counters[name] = counters.get(name, 0) + n
            for kind, h in report.outbox_latency.items():
                child = _histogram_of(h)
                if child is not None:
                    latency[kind] = merged(latency[kind], child) if kind in latency else child
        done = CounterMetricFamily("ipamd_outbox_outcomes", "Delivery outcomes on this node",
                                   labels=["outcome"])
        for name in ("claimed", "delivered", "retrying", "failed", "stale"):
            done.add_metric([name], counters.get(name, 0))
        yield done
        if latency:
            yield _histogram("ipamd_outbox_delivery_duration_seconds",
                             "Delivery attempt latency", ["kind"],
                             [([k], h) for k, h in sorted(latency.items())])

    def _database(self) -> Iterator[Metric]:
        leases = GaugeMetricFamily("ipamd_leases", "Leases by state", labels=["state"])
        for state, n in self.db["leases"].items():
            leases.add_metric([state], n)
        yield leases
        pools = GaugeMetricFamily(
            "ipamd_pool_utilisation_ratio",
            f"Used share of the {POOL_SERIES_MAX} worst-utilised pools", labels=["pool", "subnet"])
        for p in self.db["pools"]:
            pools.add_metric([str(p["pool_id"]), p["cidr"]], p["percent_used"] / 100.0)
        yield pools
        rows = GaugeMetricFamily("ipamd_outbox_rows", "Outbox rows by kind and state",
                                 labels=["kind", "state"])
        age = GaugeMetricFamily("ipamd_outbox_oldest_seconds",
                                "Age of the oldest row by kind and state", labels=["kind", "state"])
        for r in self.db["outbox"]:
            rows.add_metric([r["kind"], r["state"]], r["rows"])
            age.add_metric([r["kind"], r["state"]], r["oldest_seconds"])
        yield rows
        yield age
        journal = self.db["journal"]
        yield GaugeMetricFamily("ipamd_lease_journal_rows",
                                "Lease changes not yet derived into history and events",
                                value=journal["rows"])
        yield GaugeMetricFamily("ipamd_lease_journal_oldest_seconds",
                                "Age of the oldest lease change not yet derived",
                                value=journal["oldest_seconds"])
        up = GaugeMetricFamily("ipamd_node_up", "1 while the node heartbeats", labels=["node"])
        for n in self.db["nodes"]:
            up.add_metric([n["name"]], 1.0 if n["status"] == "up" else 0.0)
        yield up


def render(state: AppState, db: dict[str, Any], api: ApiLatency) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape(state, db, api))
    return generate_latest(registry)


def _histogram_of(data: HistogramData) -> Histogram | None:
    """A child's reported histogram, or None when its buckets are not ours."""
    if len(data.counts) != len(SECONDS_BUCKETS) + 1:
        return None
    return Histogram(counts=list(data.counts), total=data.total, count=data.count)


def merged(a: Histogram, b: Histogram) -> Histogram:
    return Histogram(buckets=a.buckets, counts=[x + y for x, y in zip(a.counts, b.counts,
                                                                       strict=True)],
                     total=a.total + b.total, count=a.count + b.count)
