"""The DHCPv6 bench's own figures (bench/bench_dhcp6.py): perfdhcp -6's report read (rejected
leases are failures), SARR latencies paired from its timestamps, ipamd's DHCPv6 drop counters,
which rates a run skips, the median of several runs and issue 49's two conditions read off
them, the Kea templates filled with ipamd's plan, and the command line's refusals."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from bench import bench_dhcp6 as b6
from bench.dhcp_figures import (
    dora_latencies,
    four_way_latencies,
    parse_perfdhcp,
    server_figures,
)

# Shaped like `perfdhcp -6 -A1 -l <if> -x t` (Kea 2.2): two SARRs, one Request unanswered,
# one Advertise rejected (no address in it).
REPORT = """***Rate statistics***
Rate: 2.5 4-way exchanges/second, expected rate: 4

***Statistics for: SOLICIT-ADVERTISE***
sent packets: 4
received packets: 4
drops: 0
drops ratio: 0 %
orphans: 0
rejected leases: 1
non unique addresses: 0

min delay: 0.100 ms
avg delay: 0.400 ms
max delay: 1.000 ms
std deviation: 0.100 ms
collected packets: 0

***Statistics for: REQUEST-REPLY***
sent packets: 3
received packets: 2
drops: 1
drops ratio: 33.3 %
orphans: 0
rejected leases: 0
non unique addresses: 0

min delay: 1.000 ms
avg delay: 2.000 ms
max delay: 3.000 ms
std deviation: 1.000 ms
collected packets: 0

***Timestamps for packets: SOLICIT-ADVERTISE***
sent / received: 000000.000100 / 000000.000500
sent / received: 000000.100000 / 000000.101000
***Timestamps for packets: REQUEST-REPLY***
sent / received: 000000.000600 / 000000.002600
sent / received: 000000.101100 / 000000.104000
"""


def test_the_report_of_perfdhcp_6_is_read_with_its_rejected_leases() -> None:
    parsed = parse_perfdhcp(REPORT)
    assert parsed["rate"] == 2.5
    assert parsed["SOLICIT-ADVERTISE"] == {"sent": 4, "received": 4, "drops": 0, "rejected": 1,
                                           "avg_ms": 0.4, "max_ms": 1.0}
    assert parsed["REQUEST-REPLY"]["drops"] == 1


def test_a_sarr_is_paired_solicit_to_reply_as_a_dora_is() -> None:
    assert four_way_latencies(REPORT, "SOLICIT-ADVERTISE", "REQUEST-REPLY") == pytest.approx(
        [2.5, 4.0])
    # the DHCPv4 names find nothing in a DHCPv6 report
    assert dora_latencies(REPORT) == []


def test_rejected_leases_and_unanswered_requests_are_failures() -> None:
    result = b6.to_result("kea-mem", 4, 1, 1, parse_perfdhcp(REPORT), REPORT)
    assert result.sarr_per_s == 2.0  # Replies received, none of them rejected, over 1 s
    assert (result.drops_sa, result.drops_rr, result.rejected) == (0, 1, 1)
    assert result.failures == 2 and not result.clean
    assert result.failure_pct == pytest.approx(100 * 2 / 7)
    assert (result.p50_ms, result.p99_ms) == (2.5, 4.0)
    assert result.rr_p50_ms == pytest.approx(2.0)
    assert result.sa_p50_ms == pytest.approx(0.4)  # nearest rank of 0.4 and 1.0 ms
    assert result.avg_ms == pytest.approx(2.4)  # Solicit->Advertise + Request->Reply


def test_a_rejected_reply_is_not_a_granted_sarr() -> None:
    text = REPORT.replace("drops: 1\ndrops ratio: 33.3 %\norphans: 0\nrejected leases: 0",
                          "drops: 1\ndrops ratio: 33.3 %\norphans: 0\nrejected leases: 2")
    assert b6.to_result("ipamd", 4, 1, 1, parse_perfdhcp(text), text).sarr_per_s == 0.0


def test_ipamd_dhcp6_drops_are_read_apart_from_dhcpv4s() -> None:
    metrics = ('ipamd_dhcp_drops_total{reason="stale"} 5.0\n'
               'ipamd_dhcp6_drops_total{reason="stale"} 3.0\n'
               'ipamd_dhcp6_drops_total{reason="untrusted_relay"} 0.0\n')
    assert server_figures(metrics, "ipamd_dhcp6_drops_total")[0] == {"stale": 3}
    assert server_figures(metrics)[0] == {"stale": 5}


def clean(server: str, rate: int, run: int = 1, achieved: float | None = None) -> b6.Result:
    return b6.Result(server, rate, run, sarr_per_s=float(achieved or rate), sent=2 * rate)


def failed(server: str, rate: int, run: int = 1) -> b6.Result:
    return b6.Result(server, rate, run, sarr_per_s=rate * 0.9, sent=2 * rate, drops_rr=5)


def test_two_failed_rates_in_a_row_skip_the_rest_of_that_run_only() -> None:
    results = [clean("ipamd", 500), failed("ipamd", 1000)]
    assert not b6.skip_rest(results, "ipamd", 1)
    results.append(clean("ipamd", 1500))  # noise: one failure between clean rates
    results.append(failed("ipamd", 2000))
    assert not b6.skip_rest(results, "ipamd", 1)
    results.append(failed("ipamd", 2500))
    assert b6.skip_rest(results, "ipamd", 1)
    assert not b6.skip_rest(results, "ipamd", 2)
    assert not b6.skip_rest(results, "kea-mem", 1)


def test_the_summary_takes_the_median_of_the_runs_zero_drop_rates() -> None:
    results = []
    for run, (mine, theirs) in enumerate(((3000, 2500), (2000, 3000), (3500, 2500)), 1):
        results += [clean("ipamd", mine, run), failed("ipamd", mine + 500, run),
                    clean("kea-mem", theirs, run), failed("kea-mem", theirs + 500, run),
                    clean("ipamd", 1000, run), clean("kea-mem", 1000, run)]
    text = "\n".join(b6.summary(results, ["kea-mem", "ipamd"], 3))
    assert "ipamd      zero-drop  3,000.0 SARR/s [3,000, 2,000, 3,500]" in text
    assert "kea-mem    zero-drop  2,500.0 SARR/s" in text
    # per run 3000/2500, 2000/3000, 3500/2500: their median 1.20, as the medians' ratio
    assert "ipamd / kea-mem: zero-drop per run [1.20, 0.67, 1.40], their median 1.20" in text
    assert "zero-drop >= kea-mem's (median of 3 runs' ratios): met (1.20)" in text


def test_equal_medians_do_not_hide_runs_ipamd_lost() -> None:
    # the three runs of 2026-12-07 (bench/notes/2026-12-07-dhcp6.md): medians 3,000 each
    results = []
    for run, (mine, theirs) in enumerate(((1500, 2000), (3000, 3000), (5000, 6000)), 1):
        results += [clean("ipamd", mine, run), failed("ipamd", 7000, run),
                    clean("kea-mem", theirs, run), failed("kea-mem", 7000, run)]
    text = "\n".join(b6.summary(results, ["kea-mem", "ipamd"], 3))
    assert "per run [0.75, 1.00, 0.83], their median 0.83 (of the medians 1.00x)" in text
    assert "(median of 3 runs' ratios): NOT met (0.83)" in text


def test_a_zero_drop_figure_at_the_top_of_the_sweep_is_marked() -> None:
    results = [clean("kea-mem", 500), clean("kea-mem", 1000), clean("ipamd", 500),
               failed("ipamd", 1000)]
    text = "\n".join(b6.summary(results, ["kea-mem", "ipamd"], 1))
    assert "kea-mem    zero-drop  1,000.0 SARR/s [1,000+]" in text
    assert "ipamd      zero-drop    500.0 SARR/s [500]" in text


def test_a_run_without_a_clean_rate_counts_as_zero() -> None:
    results = [failed("ipamd", 1000, 1), clean("ipamd", 1000, 2), clean("kea-mem", 1000, 1),
               clean("kea-mem", 1000, 2)]
    assert b6.best_clean(results, "ipamd", 1) is None
    text = "\n".join(b6.summary(results, ["kea-mem", "ipamd"], 2))
    assert "ipamd      zero-drop    500.0 SARR/s [-, 1,000+]" in text
    assert "per run [0.00, 1.00], their median 0.50" in text
    assert "(median of 2 runs' ratios): NOT met (0.50)" in text


def test_the_latency_condition_compares_the_p50s_at_1000_per_second() -> None:
    mine = clean("ipamd", b6.LATENCY_RATE)
    mine.p50_ms = 4.0
    theirs = clean("kea-pg", b6.LATENCY_RATE)
    theirs.p50_ms = 3.0
    lines = b6.summary([mine, theirs], ["kea-pg", "ipamd"], 1)
    assert any("p50 at 1000/s <= kea-pg's: NOT met (4.00 vs 3.00 ms)" in line for line in lines)
    mine.p50_ms = 2.5
    lines = b6.summary([mine, theirs], ["kea-pg", "ipamd"], 1)
    assert any("p50 at 1000/s <= kea-pg's: met (2.50 vs 3.00 ms)" in line for line in lines)


def test_no_latency_condition_without_a_run_at_1000_per_second() -> None:
    lines = b6.summary([clean("ipamd", 500), clean("kea-pg", 500)], ["kea-pg", "ipamd"], 1)
    assert lines[-1] == ("  issue 49: p50 at 1000/s: not measured (no SARRs completed at "
                         "1000/s, or the rate not in --rates)")


def test_a_saturated_peers_latency_is_marked_as_its_queue() -> None:
    mine = clean("ipamd", b6.LATENCY_RATE)
    mine.p50_ms = 90.0
    theirs = clean("kea-pg", b6.LATENCY_RATE, achieved=300.0)
    theirs.p50_ms = 500.0
    line = next(x for x in b6.summary([mine, theirs], ["kea-pg", "ipamd"], 1) if "p50 at" in x
                and "issue 49" in x)
    assert "met (90.00 vs 500.00 ms;" in line
    assert "kea-pg achieved 300 of 1000/s" in line


@pytest.mark.parametrize("template,extra", [
    ("kea-dhcp6-memfile.json", {"lease_file": "/tmp/x.csv"}),
    ("kea-dhcp6-pgsql.json", {"db_name": "kea_1", "db_host": "/tmp", "db_port": 5432,
                              "db_user": "bench"}),
])
def test_the_kea_templates_serve_ipamds_plan_with_its_lifetimes(
        template: str, extra: dict[str, object]) -> None:
    text = (Path(b6.__file__).parent / "kea" / template).read_text()
    config = json.loads(string.Template(text).substitute(
        **b6.kea_values("ipt0ba", Path("/tmp/w"), 1, "WARN"), **extra))["Dhcp6"]
    assert config["interfaces-config"]["interfaces"] == [f"ipt0ba/{b6.SERVER_IP}"]
    assert config["subnet6"][0]["subnet"] == b6.SUBNET
    assert config["subnet6"][0]["pools"] == [{"pool": f"{b6.POOL[0]} - {b6.POOL[1]}"}]
    # ipamd's rule (docs/dhcpv6.md): preferred 5/8 of valid, T1/T2 1/2 and 4/5 of preferred
    assert (config["valid-lifetime"], config["preferred-lifetime"]) == (3600, 2250)
    assert (config["renew-timer"], config["rebind-timer"]) == (1125, 1800)
    assert config["multi-threading"]["enable-multi-threading"] is False
    assert config["server-id"]["persist"] is False  # nothing written outside the work dir


@pytest.mark.parametrize("argv,message", [
    (["--runs", "0"], "runs must be 1..9"),
    (["--clients", "70000"], "clients must be 1..65536"),
    (["--ipamd-dhcp6", "commit_window_us"], "--ipamd-dhcp6 takes KEY=VALUE"),
    (["--ipamd-dhcp6", "listen=[::]:547"], "the value is not TOML"),
    (["--servers", "kea-mem,dhcpd"], "unknown servers: dhcpd"),
    (["--rates", "500,fast"], "--rates takes comma-separated integers"),
])
def test_the_command_line_refuses_what_it_cannot_run(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        b6.parse_args(argv)
    assert message in capsys.readouterr().err


def test_an_extra_dhcp6_key_is_read_as_toml() -> None:
    args = b6.parse_args(["--ipamd-dhcp6", "commit_workers=2",
                          "--ipamd-dhcp6", 'listen = ["[::]:547"]'])
    assert args.ipamd_dhcp6_pairs == (("commit_workers", 2), ("listen", ["[::]:547"]))


def test_the_default_sweep_reaches_past_kea_memfiles_zero_drop_rate() -> None:
    args = b6.parse_args([])
    assert args.runs == 1 and args.rate_list == list(b6.DEFAULT_RATES)
    assert b6.LATENCY_RATE in args.rate_list and max(args.rate_list) >= 5000
