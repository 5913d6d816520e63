"""/metrics from the typed counters (state.Counters) and a child's typed Report: the families,
their labels and the sums as operators' dashboards read them (docs/operations-monitoring.md).
The database part is a fixed dict here (ops.metrics.gather's shape); the integration tests
scrape the real thing."""

from __future__ import annotations

import re
import uuid

from ipamd.config import parse
from ipamd.core.histogram import ApiLatency, Histogram
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp6.counters import Dhcp6Counters
from ipamd.messages import HistogramData, LatencyData, Report
from ipamd.ops import metrics
from ipamd.state import AppState

FAMILIES = [
    ("ipamd_dhcp_commit_batch_size", "histogram"),
    ("ipamd_dhcp_commit_duration_seconds", "histogram"),
    ("ipamd_dhcp_commit_wait_seconds", "histogram"),
    ("ipamd_dhcp_ping_checks_total", "counter"),  # the ping check (docs/api-ipam.md)
    ("ipamd_dhcp_packets_received_total", "counter"),
    ("ipamd_dhcp_packets_sent_total", "counter"),
    ("ipamd_dhcp_drops_total", "counter"),
    ("ipamd_dhcp_lease_transitions_total", "counter"),
    ("ipamd_dhcp6_messages_received_total", "counter"),
    ("ipamd_dhcp6_messages_sent_total", "counter"),
    ("ipamd_dhcp6_drops_total", "counter"),
    ("ipamd_dhcp6_lease_transitions_total", "counter"),
    ("ipamd_outbox_outcomes_total", "counter"),
    ("ipamd_outbox_delivery_duration_seconds", "histogram"),
    ("ipamd_leases", "gauge"),
    ("ipamd_pool_utilisation_ratio", "gauge"),
    ("ipamd_outbox_rows", "gauge"),
    ("ipamd_outbox_oldest_seconds", "gauge"),
    ("ipamd_lease_journal_rows", "gauge"),
    ("ipamd_lease_journal_oldest_seconds", "gauge"),
    ("ipamd_node_up", "gauge"),
    ("ipamd_api_request_duration_seconds", "histogram"),
]
DB = {"leases": {"active": 3},
      "pools": [{"pool_id": uuid.UUID(int=1), "cidr": "10.77.0.0/24", "percent_used": 50.0}],
      "outbox": [{"kind": "dns", "state": "pending", "rows": 2, "oldest_seconds": 1.5}],
      "journal": {"rows": 0, "oldest_seconds": 0.0}, "nodes": [{"name": "vm", "status": "up"}]}


def _state() -> AppState:
    state = AppState(config=parse({}), db=None)  # type: ignore[arg-type]  # (no scrape query)
    dhcp = DhcpCounters()
    dhcp.drops["stale"] += 2
    dhcp.batch_sizes.observe(3)
    dhcp.commit_wait.observe(0.00008)
    dhcp.pings["answered"] += 1
    dhcp6 = Dhcp6Counters()
    dhcp6.drop("stale")
    state.counters.dhcp, state.counters.dhcp6 = dhcp, dhcp6
    state.counters.outbox.outcomes["delivered"] += 2
    state.counters.outbox.latency["webhook"] = Histogram()
    state.counters.outbox.latency["webhook"].observe(0.03)
    state.counters.api_latency.observe("GET", "/api/v1/prefixes", 200, 0.004)
    # The DNS delivery child's report: its outcomes add to this process's, its latency too.
    counts = [0] * (len(metrics.SECONDS_BUCKETS) + 1)
    counts[2] = 1
    state.children["dns-delivery"] = Report(
        pid=1, outbox={"delivered": 3, "failed": 1},
        outbox_latency={"dns": HistogramData(counts=counts, total=0.002, count=1)})
    return state


def _render(state: AppState) -> str:
    return metrics.render(state, DB, state.counters.api_latency).decode()


def test_the_families_and_their_labels() -> None:
    text = _render(_state())
    assert re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M) == FAMILIES
    assert 'ipamd_dhcp_drops_total{reason="stale"} 2.0' in text
    assert 'ipamd_dhcp_ping_checks_total{outcome="answered"} 1.0' in text
    # A Request's wait for its commit, in buckets fine enough for a light load's 80 µs.
    assert 'ipamd_dhcp_commit_wait_seconds_bucket{le="5e-05"} 0.0' in text
    assert 'ipamd_dhcp_commit_wait_seconds_bucket{le="0.0001"} 1.0' in text
    assert 'ipamd_dhcp_ping_checks_total{outcome="unavailable"} 0.0' in text  # every outcome
    assert 'ipamd_dhcp6_drops_total{reason="stale"} 1.0' in text
    assert ('ipamd_api_request_duration_seconds_count{method="GET",'
            'route="/api/v1/prefixes",status="2xx"} 1.0') in text


def test_a_childs_report_adds_to_this_process_counters() -> None:
    text = _render(_state())
    assert 'ipamd_outbox_outcomes_total{outcome="delivered"} 5.0' in text
    assert 'ipamd_outbox_outcomes_total{outcome="failed"} 1.0' in text
    assert 'ipamd_outbox_delivery_duration_seconds_count{kind="dns"} 1.0' in text
    assert 'ipamd_outbox_delivery_duration_seconds_count{kind="webhook"} 1.0' in text


def test_no_dhcp_server_means_no_dhcp_samples_and_no_commit_histograms() -> None:
    state = _state()
    state.counters.dhcp = state.counters.dhcp6 = None
    text = _render(state)
    assert "ipamd_dhcp_commit_batch_size" not in text
    assert "ipamd_dhcp_commit_wait_seconds" not in text
    assert not re.search(r"^ipamd_dhcp6?_\w+\{", text, re.M)  # families, no samples
    assert "# TYPE ipamd_dhcp_drops_total counter" in text


def test_latency_reports_merge_across_processes() -> None:
    mine = _state().counters.api_latency
    report = metrics.latency_report(mine)
    assert report == [LatencyData(key=("GET", "/api/v1/prefixes", "2xx"),
                                  counts=report[0].counts, total=0.004, count=1)]
    merged = ApiLatency()
    metrics.add_latency_report(merged, report)
    metrics.add_latency_report(merged, report)
    metrics.add_latency_report(merged, [LatencyData(key=("GET", "/x", "2xx"), counts=[1],
                                                    total=1.0, count=1)])  # other buckets
    assert list(merged.by_key) == [("GET", "/api/v1/prefixes", "2xx")]
    assert merged.by_key[("GET", "/api/v1/prefixes", "2xx")].count == 2
