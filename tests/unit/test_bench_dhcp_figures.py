"""The DHCP bench's own figures (bench/dhcp_figures.py): DORA latencies paired from
perfdhcp's per-exchange timestamps, nearest-rank percentiles, and per-process CPU; and which
latencies its summary compares, the order of its sweep and what ipamd says it dropped
(bench/bench_dhcp.py); and how the load generator fared on the cores (ClientMeter)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import pytest
from bench.dhcp_figures import (
    ClientMeter,
    CpuMeter,
    commit_means,
    core_times,
    dora_latencies,
    exchange_stamps,
    late_offer_spans,
    percentile,
    process_cpu,
    spans_text,
)

# Shaped like perfdhcp -x t: two DORAs in order, then a burst of two Offers read together
# whose Requests were sent in the order read; the third Offer's Request got no Ack.
TEXT = """***Statistics for: REQUEST-ACK***
sent packets: 4
***Timestamps for packets: DISCOVER-OFFER***
sent / received: 000000.000100 / 000000.000500
sent / received: 000000.100000 / 000000.102000
sent / received: 000000.200000 / 000000.210000
sent / received: 000000.201000 / 000000.210100
sent / received: 000000.300000 / 000000.300400
***Timestamps for packets: REQUEST-ACK***
sent / received: 000000.000540 / 000000.001000
sent / received: 000000.102050 / 000000.104000
sent / received: 000000.210050 / 000000.211000
sent / received: 000000.210150 / 000000.213000
"""


def test_stamps_are_read_per_kind() -> None:
    stamps = exchange_stamps(TEXT)
    assert len(stamps["DISCOVER-OFFER"]) == 5
    assert stamps["REQUEST-ACK"][0] == (0.00054, 0.001)


def test_each_request_pairs_with_the_offer_read_just_before_it() -> None:
    latencies = dora_latencies(TEXT)
    assert latencies == pytest.approx([0.9, 4.0, 11.0, 12.0])


def test_an_offer_whose_request_got_no_ack_is_left_out() -> None:
    # The Offer read at 0.3004 has no Request in the list: four DORAs, not five.
    assert len(dora_latencies(TEXT)) == 4


def test_no_timestamps_no_latencies() -> None:
    assert dora_latencies("***Statistics for: DISCOVER-OFFER***\nsent packets: 0\n") == []
    assert percentile([], 0.5) is None


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([7.0], 0.99) == 7.0


def test_cpu_of_this_process_grows_with_work() -> None:
    meter = CpuMeter(os.getpid(), None, "nobody")
    meter.start()
    before = process_cpu(os.getpid())
    total = 0
    while process_cpu(os.getpid()) == before:  # spin until the clock ticks once
        total += sum(range(1000))
    server, database = meter.seconds()
    assert server > 0
    assert database == 0


# A child that names itself (its comm, as perfdhcp's is "perfdhcp") and spins for a while.
_SPINNER = ("import ctypes, time\n"
            "ctypes.CDLL(None).prctl(15, b'benchspinner', 0, 0, 0)\n"
            "end = time.monotonic() + 1.5\n"
            "while time.monotonic() < end:\n"
            "    pass\n")


def test_client_meter_reports_a_spinning_childs_run_and_wait_per_second() -> None:
    meter = ClientMeter("benchspinner", 0.8).start()
    child = subprocess.Popen([sys.executable, "-c", _SPINNER])
    try:
        figures = meter.result(timeout=10)
    finally:
        child.kill()
        child.wait()
    assert figures is not None
    ran, waited = figures
    # It spins on a core whenever it gets one: ran and waited share at most the wall time.
    assert 0.2 < ran <= 1.05
    assert waited >= 0.0
    assert ran + waited <= 1.1


def test_client_meter_has_no_figures_for_a_client_never_seen() -> None:
    assert ClientMeter("no-such-client", 0.2, find_within=0.2).start().result(timeout=5) is None


def test_core_times_of_a_process_grow_and_of_a_gone_one_are_none() -> None:
    # A child of one thread: this process has threads that may end between two samples,
    # and an ended thread's time is no longer counted (perfdhcp's threads live as long as it).
    child = subprocess.Popen([sys.executable, "-c", _SPINNER])
    try:
        time.sleep(0.3)
        first = core_times(child.pid)
        time.sleep(0.3)
        later = core_times(child.pid)
    finally:
        child.kill()
        child.wait()
    assert first is not None and later is not None
    assert later[0] > first[0] and later[1] >= first[1]
    assert core_times(child.pid) is None


def test_latency_ratio_only_between_servers_that_kept_the_rate() -> None:
    from bench.bench_dhcp import Result, latency_summary

    ipamd = Result("ipamd", 1000, dora_per_s=999.9, avg_ms=2.0, p50_ms=1.2, p99_ms=6.0,
                   cpu_us=800)
    kept = Result("kea-mem", 1000, dora_per_s=999.9, avg_ms=0.5, p50_ms=0.4, p99_ms=0.7,
                  cpu_us=200)
    behind = Result("kea-pg", 1000, dora_per_s=716.6, avg_ms=170.0, p50_ms=164.2, p99_ms=300,
                    cpu_us=950)
    rows = latency_summary([ipamd, kept, behind], ["kea-pg", "kea-mem", "ipamd"])
    assert "    ipamd / kea-pg: not comparable, kea-pg achieved 716.6 of 1000/s" in rows
    assert "    ipamd / kea-mem: avg 4.00x, p50 3.00x, p99 8.57x, CPU per DORA 4.00x" in rows
    # Every server's average beside its p50 and p99.
    assert rows[0] == ("  at 1000/s: kea-pg avg 170.00 p50 164.20 p99 300.0 ms, 950 us CPU; "
                       "kea-mem avg 0.50 p50 0.40 p99 0.7 ms, 200 us CPU; "
                       "ipamd avg 2.00 p50 1.20 p99 6.0 ms, 800 us CPU")


def test_client_socket_losses_are_counted_apart_up_to_the_zero_drop_rate() -> None:
    from bench.bench_dhcp import Result, client_drop_summary

    results = [
        Result("ipamd", 1000, dora_per_s=1000.0, sent=20000, overflow_rly=3, drops_ra=3),
        Result("ipamd", 2000, dora_per_s=2000.0, sent=40000),  # its zero-drop rate
        Result("ipamd", 500, note="server exited (1)"),  # measured nothing: no step
        Result("ipamd", 3000, dora_per_s=2990.0, sent=60000, drops_ra=100, overflow_rly=90),
        Result("ipamd", 6000, dora_per_s=2990.0, sent=60000, overload=True, overflow_rly=9),
        Result("kea-mem", 1000, dora_per_s=1000.0, sent=20000, overflow_srv=0),
        Result("kea-mem", 2000, dora_per_s=1990.0, sent=40000, drops_do=7, overflow_srv=7),
        Result("kea-pg", 1000, dora_per_s=700.0, sent=20000, drops_do=10),  # never clean
    ]
    rows = client_drop_summary(results, ["kea-pg", "kea-mem", "ipamd"])
    # Above the zero-drop rate and at twice the ceiling: not counted; kea-pg: no such rate.
    assert rows == [
        "  kea-mem    up to 1000/s (1 step): client socket 0, server socket 0",
        "  ipamd      up to 2000/s (2 steps): client socket 3, server socket 0; "
        "client losses at 1000/s",
    ]


def test_the_sweep_goes_rate_by_rate_each_rate_starting_one_server_later() -> None:
    from bench.bench_dhcp import sweep_order

    order = sweep_order(["kea-pg", "kea-mem", "ipamd"], [200, 1000, 5000, 7000])
    assert order == [
        ("kea-pg", 200), ("kea-mem", 200), ("ipamd", 200),
        ("kea-mem", 1000), ("ipamd", 1000), ("kea-pg", 1000),
        ("ipamd", 5000), ("kea-pg", 5000), ("kea-mem", 5000),
        ("kea-pg", 7000), ("kea-mem", 7000), ("ipamd", 7000),
    ]
    assert sweep_order(["ipamd"], [200, 500]) == [("ipamd", 200), ("ipamd", 500)]
    assert sweep_order([], [200]) == []


def test_what_ipamd_says_it_dropped_and_its_slowest_commit() -> None:
    from bench.bench_dhcp import Result, server_note
    from bench.dhcp_figures import server_figures

    metrics = "\n".join([
        "# TYPE ipamd_dhcp_drops counter",
        'ipamd_dhcp_drops_total{reason="overload"} 3681.0',
        'ipamd_dhcp_drops_total{reason="stale"} 0.0',
        'ipamd_dhcp_commit_duration_seconds_bucket{le="0.1"} 5266.0',
        'ipamd_dhcp_commit_duration_seconds_bucket{le="1.0"} 5268.0',
        'ipamd_dhcp_commit_duration_seconds_bucket{le="0.25"} 5267.0',
        'ipamd_dhcp_commit_duration_seconds_bucket{le="+Inf"} 5268.0',
        "ipamd_dhcp_commit_duration_seconds_count 5268.0",
    ])
    drops, slowest = server_figures(metrics)
    assert drops == {"overload": 3681}  # the zero reason left out
    assert slowest == 1.0  # the smallest bucket holding every commit, whatever the order
    result = Result("ipamd", 6000, server_drops=drops, slowest_commit_s=slowest)
    assert server_note(result) == "ipamd dropped: overload 3681; slowest commit <= 1 s"
    assert server_note(Result("ipamd", 6000)) == ""
    beyond = 'ipamd_dhcp_commit_duration_seconds_bucket{le="10.0"} 1.0\n' \
             'ipamd_dhcp_commit_duration_seconds_bucket{le="+Inf"} 2.0'
    assert server_figures(beyond) == ({}, math.inf)
    assert server_figures("") == ({}, None)


def test_late_offers_are_grouped_into_the_stretches_of_the_run_they_fall_in() -> None:
    on_time = [(t / 1000, t / 1000 + 0.0005) for t in range(0, 3000, 7)]
    late = [(1.21, 1.235), (1.33, 1.342), (1.45, 1.47), (2.52, 2.531)]
    spans = late_offer_spans(sorted(on_time + late))
    # 1.2-1.5 s: three touching slices with a late Offer; 2.5-2.6 s on its own.
    assert spans == [(1.2, 1.5, 25.0), (2.5, 2.6, 11.0)]
    assert late_offer_spans(on_time) == []


def test_the_longest_late_stretches_are_named_in_time_order() -> None:
    spans = [(0.1, 0.2, 12.0), (1.0, 1.6, 30.0), (3.0, 3.3, 15.0), (5.0, 5.1, 40.0)]
    assert spans_text(spans, most=2) == "1.0-1.6 s (30 ms), 3.0-3.3 s (15 ms) and 2 shorter"
    assert spans_text(spans[:1]) == "0.1-0.2 s (12 ms)"
    assert spans_text([]) == ""


def test_timestamps_are_taken_up_to_the_stamps_rate_and_cover_the_latency_rates() -> None:
    from bench.bench_dhcp import LATENCY_RATES, parse_args, stamp_args

    default = parse_args([]).stamps_max
    assert all(stamp_args(rate, default) == ("-x", "t") for rate in LATENCY_RATES)
    assert stamp_args(default, default) == ("-x", "t")
    assert stamp_args(default + 1, default) == ()
    assert stamp_args(12000, parse_args(["--stamps-max", "12000"]).stamps_max) == ("-x", "t")


def test_a_row_without_timestamps_gives_perfdhcps_average_instead_of_the_median() -> None:
    from bench.bench_dhcp import Result, latency_text

    assert latency_text(Result("ipamd", 1000, p50_ms=0.84, avg_ms=1.2)) == "p50 0.8 ms"
    assert latency_text(Result("ipamd", 20000, avg_ms=61.04)) == "avg 61.0 ms"


def test_where_ipamds_requests_spend_their_time_from_its_metrics() -> None:
    from bench.bench_dhcp import Result, commit_note

    metrics = "\n".join([
        'ipamd_dhcp_commit_wait_seconds_bucket{le="0.0001"} 3.0',
        "ipamd_dhcp_commit_wait_seconds_count 4.0",
        "ipamd_dhcp_commit_wait_seconds_sum 0.00042",
        "ipamd_dhcp_commit_duration_seconds_count 4.0",
        "ipamd_dhcp_commit_duration_seconds_sum 0.0029",
        "ipamd_dhcp_commit_duration_seconds_created 1.7e9",
    ])
    assert commit_means(metrics) == (0.105, 0.725)
    # Before any batch (or a server without the histograms): nothing to say.
    assert commit_means("ipamd_dhcp_commit_wait_seconds_count 0.0\n"
                        "ipamd_dhcp_commit_wait_seconds_sum 0.0") == (None, None)
    assert commit_means("") == (None, None)
    note = commit_note(Result("ipamd", 200, commit_wait_ms=0.105, commit_ms=0.725))
    assert note == "Requests waited 0.10 ms, committed in 0.72 ms"
    assert commit_note(Result("kea-pg", 200)) == ""
