#!/usr/bin/env python3
"""`make bench` for DHCPv6: full relayed SARR with perfdhcp -6 against kea-dhcp6 and ipamd.

Topology (created here, removed on any exit; bench_dhcp.py's, in IPv6): namespace ``srv``
holds the server under test on 2001:db8:77::1, namespace ``rly`` holds perfdhcp on
2001:db8:77::2, one veth pair between them, no duplicate address detection. perfdhcp
``-6 -A1 -l <interface>`` is a relay: every Solicit and Request goes out wrapped in a
Relay-forward from the interface's global address, port 547, which is both its link-address
(it selects the subnet 2001:db8:77::/64) and the address ipamd trusts
(``dhcp6.trusted_relays``). Addresses come from 2001:db8:77::1:0-2001:db8:77::1:ffff.

Servers:
  kea-pg     kea-dhcp6 with its PostgreSQL lease backend (single-threaded, Kea's default)
  kea-mem    kea-dhcp6 with memfile (persisted CSV)
  ipamd      the appliance (`python -m ipamd run`, [dhcp6] on), bindings durable in PostgreSQL
  (kea-pg-mt: Kea PostgreSQL with 4 threads, on request with --servers)
Every (server, rate) runs on a fresh lease store (a new database, Kea's schema by
``kea-admin db-init pgsql``, ipamd's cloned from its migrated template with the plan made
through its API; a new lease file), rate by rate as bench_dhcp.py sweeps (``sweep_order``).
One private, durable PostgreSQL cluster (fsync on) serves both PostgreSQL servers.

Full Solicit→Advertise→Request→Reply, no Rapid Commit. A lease perfdhcp rejects (an Advertise
or Reply without an address) counts as a failure like a drop. ``--runs N`` repeats the whole
sweep N times; the summary gives each figure's median over the runs. Everything is written
under bench/results/dhcp6-<time>/.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import shutil
import signal
import statistics
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.support import netns

from bench import dhcp_rig
from bench.appliance import write_config
from bench.dhcp_figures import (
    ClientMeter,
    CpuMeter,
    exchange_stamps,
    four_way_latencies,
    late_offer_spans,
    parse_perfdhcp,
    percentile,
    process_cpu,
    server_figures,
    spans_text,
)
from bench.dhcp_rig import (
    API_PORT,
    PG_USER,
    RESULTS,
    BenchError,
    fill_kea_template,
    fmt,
    ipamd_running,
    ipamd_template,
    kea_database,
    kea_running,
    load_average,
    make_work,
    post,
    ratio,
    stamp_args,
    start_postgres,
    stop_postgres,
    sweep_order,
    sweep_stale_work,
    terminate,
)
from bench.machine import MachineMeter, wake_cost

SERVER_IP = "2001:db8:77::1"
RELAY_IP = "2001:db8:77::2"  # perfdhcp's: link-address, peer-address and source
PREFIX = "2001:db8:77::/48"
SUBNET = "2001:db8:77::/64"
POOL = ("2001:db8:77::1:0", "2001:db8:77::1:ffff")  # 65,536 addresses
POOL_SIZE = 65_536
LEASE_TIME = 3600
# ipamd's lifetimes from a subnet (docs/dhcpv6.md): preferred 5/8 of the valid lifetime,
# T1/T2 half and 4/5 of the preferred (RFC 8415 §21.4). Kea is given the same.
PREFERRED_TIME = LEASE_TIME * 5 // 8
RENEW_TIME = PREFERRED_TIME // 2
REBIND_TIME = PREFERRED_TIME * 4 // 5
PING_MAC = "02:77:00:00:00:01"  # the readiness client's (its DUID-LLT is made from it)
SOLICIT, REQUEST = "SOLICIT-ADVERTISE", "REQUEST-REPLY"
# kea-dhcp6 with memfile: zero-drop 2,000-3,000 SARR/s while other work loaded the 2 cores,
# 6,000 (the top of the then sweep) when they were quiet (2026-12-07): its zero-drop rate must
# fall inside the sweep for the ratio to mean anything. Steps of 500 up to 5,000.
DEFAULT_RATES = (500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 6000, 7000, 8000,
                 9000, 10000)
LATENCY_RATE = 1000  # the summary's latency comparison (issue 49)
STAMPS_MAX = 2000  # perfdhcp -x t only up to here (its cost: bench/README.md, DHCP)
ALL_SERVERS = ("kea-pg", "kea-mem", "ipamd", "kea-pg-mt")
DEFAULT_SERVERS = ("kea-pg", "kea-mem", "ipamd")
TOOLS = ("ip", "perfdhcp", "kea-dhcp6", "kea-admin", "psql")


@dataclass
class Result:
    server: str
    rate: int
    run: int = 1
    sarr_per_s: float | None = None  # Replies that granted an address ÷ period
    sent: int = 0              # Solicits + Requests sent
    drops_sa: int = 0          # Solicits without Advertise
    drops_rr: int = 0          # Requests without Reply
    rejected: int = 0          # Advertises and Replies perfdhcp rejected (no address)
    avg_ms: float | None = None   # Solicit→Advertise avg + Request→Reply avg
    max_ms: float | None = None
    p50_ms: float | None = None   # Solicit→Reply of each completed SARR (perfdhcp -x t)
    p99_ms: float | None = None
    sa_p50_ms: float | None = None  # Solicit→Advertise: answered from memory (the loop's share)
    rr_avg_ms: float | None = None  # Request→Reply alone: the commit's share
    rr_p50_ms: float | None = None
    rr_p99_ms: float | None = None
    cpu_us: float | None = None     # server CPU (process tree + its backends) per SARR
    cpu_db_us: float | None = None  # of which its PostgreSQL backends
    cpu_main_us: float | None = None  # of which its main process (ipamd: the DHCP servers)
    load: float | None = None
    steal_pct: float | None = None
    client_ran: float | None = None
    client_waited: float | None = None
    idle_pct: float | None = None
    overflow_srv: int = 0
    overflow_rly: int = 0
    derived_after_s: float | None = None
    server_drops: dict[str, int] = field(default_factory=dict)
    late_spans: list[tuple[float, float, float]] = field(default_factory=list)
    skipped: bool = False  # not run: the server failed at the two rates below (this run)
    note: str = ""

    @property
    def failures(self) -> int:
        return self.drops_sa + self.drops_rr + self.rejected

    @property
    def failure_pct(self) -> float:
        return 100.0 * self.failures / self.sent if self.sent else 0.0

    @property
    def clean(self) -> bool:
        return bool(self.sarr_per_s) and self.failures == 0 and not self.skipped

    @property
    def kept_rate(self) -> bool:
        """Achieved the offered rate (within 1 %): its latency is the offered load's."""
        return self.sarr_per_s is not None and self.sarr_per_s >= 0.99 * self.rate


# --- perfdhcp's figures --------------------------------------------------------------------

def to_result(server: str, rate: int, run: int, period: int, parsed: dict[str, Any],
              text: str = "") -> Result:
    """Replies counted over the period (perfdhcp's own "Rate" divides by period + drain).
    Drops are every message that got no answer (timed out or still in flight after the
    drain); rejected leases are answers without an address."""
    sa, rr = parsed.get(SOLICIT, {}), parsed.get(REQUEST, {})
    avg = [v for v in (sa.get("avg_ms"), rr.get("avg_ms")) if v is not None]
    top = [v for v in (sa.get("max_ms"), rr.get("max_ms")) if v is not None]
    granted = rr.get("received", 0) - rr.get("rejected", 0)
    stamps = exchange_stamps(text)
    sarr = four_way_latencies(text, SOLICIT, REQUEST)
    request = [(got - sent) * 1000 for sent, got in stamps.get(REQUEST, [])]
    solicit = [(got - sent) * 1000 for sent, got in stamps.get(SOLICIT, [])]
    return Result(
        server=server, rate=rate, run=run, sarr_per_s=round(max(granted, 0) / period, 1),
        sent=sa.get("sent", 0) + rr.get("sent", 0),
        drops_sa=max(sa.get("sent", 0) - sa.get("received", 0), 0),
        drops_rr=max(rr.get("sent", 0) - rr.get("received", 0), 0),
        rejected=sa.get("rejected", 0) + rr.get("rejected", 0),
        avg_ms=round(sum(avg), 3) if len(avg) == 2 else None,
        max_ms=round(sum(top), 3) if len(top) == 2 else None,
        p50_ms=_rounded(percentile(sarr, 0.5)), p99_ms=_rounded(percentile(sarr, 0.99)),
        sa_p50_ms=_rounded(percentile(solicit, 0.5)), rr_avg_ms=rr.get("avg_ms"),
        rr_p50_ms=_rounded(percentile(request, 0.5)),
        rr_p99_ms=_rounded(percentile(request, 0.99)),
        late_spans=late_offer_spans(stamps.get(SOLICIT, [])),
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# --- the rig -------------------------------------------------------------------------------

@dataclass
class Rig(dhcp_rig.Rig):
    relay_if: str = ""  # perfdhcp's interface (its global address is RELAY_IP)
    ipamd_dhcp6: tuple[tuple[str, Any], ...] = ()  # extra [dhcp6] keys, values read as TOML
    profile: bool = False  # ipamd's main process under cProfile (--profile)

    def perfdhcp(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        argv = ["perfdhcp", "-6", "-A1", "-l", self.relay_if, "-g", "single", *args, SERVER_IP]
        try:
            return self.lab.run(self.rly, argv, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, -1, "", "perfdhcp timed out")

    def answers(self) -> bool:
        """Full SARRs of a client of its own (``-b mac=``: its own DUID) complete: a short
        rated run with a drain time, as bench_dhcp.py pings."""
        done = self.perfdhcp("-r", "4", "-p", "1", "-W", "1000000", "-b", f"mac={PING_MAC}",
                             timeout=15)
        replies = parse_perfdhcp(done.stdout).get(REQUEST, {})
        return replies.get("received", 0) - replies.get("rejected", 0) > 0

    def ipamd_figures(self, keep: Path) -> dict[str, int]:
        """ipamd's DHCPv6 drops by reason, from its /metrics (the text kept in ``keep``)."""
        text = self.ipamd_metrics(keep)
        return {} if text is None else server_figures(text, "ipamd_dhcp6_drops_total")[0]


def no_dad(lab: netns.Lab, ns: str) -> None:
    """No duplicate address detection in ``ns``: Kea binds the link-local address, which
    stays tentative (unbindable) for a second or two otherwise."""
    for scope in ("all", "default"):
        lab.sysctl(ns, f"net.ipv6.conf.{scope}.accept_dad", "0")


# --- servers -------------------------------------------------------------------------------

def kea_values(interface: str, data_dir: Path, threads: int, severity: str) -> dict[str, Any]:
    """What both kea-dhcp6 templates take besides their lease store: the plan ipamd serves
    (subnet, pool, the same lifetimes), Kea's server DUID file in the work directory."""
    return dict(
        interface=interface, server_ip=SERVER_IP, data_dir=data_dir, subnet=SUBNET,
        pool_start=POOL[0], pool_end=POOL[1], lease_time=LEASE_TIME,
        preferred_time=PREFERRED_TIME, renew_time=RENEW_TIME, rebind_time=REBIND_TIME,
        multi_threading="true" if threads > 1 else "false", threads=max(threads, 1),
        severity=severity)


@contextlib.contextmanager
def kea(rig: Rig, backend: str, threads: int, label: str) -> Iterator[tuple[Any, str | None]]:
    """kea-dhcp6 on a fresh lease store, answering, inside ``srv``."""
    database = kea_database(rig) if backend == "pgsql" else None
    values = kea_values(rig.lab.ifname("ba"), rig.work, threads, rig.kea_severity)
    if database is not None:
        config = fill_kea_template(rig, "kea-dhcp6-pgsql.json", db_name=database,
                                   db_host=rig.pg.socket_dir, db_port=rig.pg.port,
                                   db_user=PG_USER, **values)
    else:
        config = fill_kea_template(rig, "kea-dhcp6-memfile.json",
                                   lease_file=rig.work / f"{label}.leases6.csv", **values)
    with kea_running(rig, "kea-dhcp6", config, label, database) as proc:
        yield proc, database


def ipamd_config(rig: Rig, database: str) -> Path:
    rig.counter += 1
    return write_config(rig.work / f"ipamd-{rig.counter}.toml", {
        "database": {"dsn": rig.pg.dsn(database)},
        "api": {"public_enabled": False, "loopback_listen": f"127.0.0.1:{API_PORT}"},
        "dhcp": {"enabled": False},
        "dhcp6": {"enabled": True, "listen": [f"[{SERVER_IP}]:547"],
                  "trusted_relays": [f"{RELAY_IP}/128"], **dict(rig.ipamd_dhcp6)},
        "logging": {"level": "WARNING", "access_log": False},
    }, {"state_dir": str(rig.work / "ipamd-state")})


def create_plan(base: str) -> None:
    """The IPv6 plan the bench serves, through ipamd's own API (loopback, before any token):
    the link's /64 (no gateway: routers come from Router Advertisements) and one pool."""
    with httpx.Client(base_url=base, timeout=30) as api:
        prefix = post(api, "/prefixes", {"cidr": PREFIX, "description": "bench6"})
        subnet = post(api, "/subnets", {"prefix_id": prefix["id"], "cidr": SUBNET,
                                        "lease_time_seconds": LEASE_TIME})
        post(api, f"/subnets/{subnet['id']}/pools",
             {"name": "bench6", "start_ip": POOL[0], "end_ip": POOL[1]})


@contextlib.contextmanager
def ipamd(rig: Rig, template: str, label: str) -> Iterator[tuple[Any, str | None]]:
    """The appliance on a fresh database (cloned from a migrated template), plan via the API."""
    database = rig.fresh_database("ipamd", template)
    profile = rig.out / f"{label}.prof" if rig.profile else None
    with ipamd_running(rig, ipamd_config(rig, database), database, label, create_plan,
                       profile) as proc:
        yield proc, database


# --- one run ---------------------------------------------------------------------------------

def measure(rig: Rig, server: str, rate: int, run: int, args: argparse.Namespace,
            template: str | None) -> Result:
    label = f"run{run}-{server}-r{rate}"
    starter: Any
    if server == "ipamd":
        assert template is not None
        starter = ipamd(rig, template, label)
    else:
        starter = kea(rig, "memfile" if server == "kea-mem" else "pgsql",
                      4 if server == "kea-pg-mt" else 1, label)
    with starter as (proc, database):
        load = load_average()
        before = rig.udp_overflows(rig.srv), rig.udp_overflows(rig.rly)
        meter = CpuMeter(proc.pid, database, PG_USER)
        meter.start()
        main_before = process_cpu(proc.pid)
        machine = MachineMeter().start()
        client = ClientMeter("perfdhcp", args.period).start()
        done = rig.perfdhcp("-r", str(rate), "-p", str(args.period), "-R", str(args.clients),
                            "-W", "1000000", *stamp_args(rate, args.stamps_max),
                            timeout=args.period + 60)
        drops: dict[str, int] = {}
        derived: float | None = None
        if server == "ipamd":
            drops = rig.ipamd_figures(rig.out / f"{label}.metrics.txt")
            try:  # the run's history rows and events are part of its cost
                derived = rig.journal_derived(database) if database else None
            except BenchError:
                derived = math.inf
        cpu = meter.seconds()
        main_after = process_cpu(proc.pid)
        steal_pct = machine.steal_percent()
        client_times = client.result()
        idle_pct = client.cores.idle_percent() if client_times is not None else None
        after = rig.udp_overflows(rig.srv), rig.udp_overflows(rig.rly)
    (rig.out / f"{label}.perfdhcp.txt").write_text(done.stdout + done.stderr)
    if done.returncode not in (0, 3):  # 3: some exchanges did not complete (drops)
        return Result(server, rate, run, load=load, note=f"perfdhcp failed ({done.returncode}): "
                      f"{(done.stderr or done.stdout).strip()[-200:]}")
    result = to_result(server, rate, run, args.period, parse_perfdhcp(done.stdout), done.stdout)
    result.load, result.steal_pct, result.server_drops = load, steal_pct, drops
    if client_times is not None:
        result.client_ran, result.client_waited = (round(v, 2) for v in client_times)
        result.idle_pct = idle_pct
    result.derived_after_s = None if derived == math.inf else derived
    notes = []
    if derived == math.inf:
        notes.append("history+events NOT derived within 120 s (CPU incomplete)")
    elif derived is not None and derived >= 0.5:
        notes.append(f"history+events derived {derived:.1f} s after (in CPU)")
    if drops:
        notes.append("ipamd dropped: " + ", ".join(f"{k} {n}" for k, n in sorted(drops.items())))
    if result.failures and result.late_spans:
        notes.append(f"Advertises late {spans_text(result.late_spans)}")
    result.note = "; ".join(notes)
    granted = round((result.sarr_per_s or 0) * args.period)
    if granted:
        result.cpu_us = round(sum(cpu) / granted * 1e6, 1)
        result.cpu_db_us = round(cpu[1] / granted * 1e6, 1) if database else None
        if main_before is not None and main_after is not None:
            result.cpu_main_us = round((main_after - main_before) / granted * 1e6, 1)
    result.overflow_srv, result.overflow_rly = after[0] - before[0], after[1] - before[1]
    return result


def skip_rest(results: list[Result], server: str, run: int) -> bool:
    """The server failed (drops or rejected leases) at its two highest rates so far in this
    run: its higher rates cannot raise its zero-drop figure, so they are not run
    (``--full-sweep`` runs them)."""
    mine = sorted((r for r in results if r.server == server and r.run == run
                   and not r.skipped), key=lambda r: r.rate)
    return len(mine) >= 2 and all(not r.clean for r in mine[-2:])


# --- the table and the summary -------------------------------------------------------------

def best_clean(results: list[Result], server: str, run: int) -> Result | None:
    """The highest achieved rate with no failure, in one run."""
    clean = [r for r in results if r.server == server and r.run == run and r.clean]
    return max(clean, key=lambda r: r.sarr_per_s or 0, default=None)


def at_rate(results: list[Result], server: str, run: int, rate: int) -> Result | None:
    return next((r for r in results if r.server == server and r.run == run and r.rate == rate
                 and not r.skipped), None)


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def row(r: Result, at: dict[str, Result]) -> str:
    pg, mem = at.get("kea-pg"), at.get("kea-mem")
    vs_pg = "" if r.server == "kea-pg" else ratio(r.sarr_per_s, pg.sarr_per_s if pg else None)
    vs_mem = "" if r.server == "kea-mem" else ratio(r.sarr_per_s, mem.sarr_per_s if mem else None)
    if r.skipped:
        return f"{r.rate:>6}  {r.server:<10} {'skipped':>9}  {r.note}"
    return (f"{r.rate:>6}  {r.server:<10} {fmt(r.sarr_per_s, 1):>9} "
            f"{f'{r.drops_sa}/{r.drops_rr}':>11} {r.rejected:>6} {r.failure_pct:>5.1f}% "
            f"{fmt(r.avg_ms, 2):>7} {fmt(r.p50_ms, 2):>7} {fmt(r.p99_ms, 1):>7} "
            f"{fmt(r.rr_p50_ms, 2):>7} {fmt(r.cpu_us, 0):>7} {fmt(r.cpu_db_us, 0):>6} "
            f"{fmt(r.cpu_main_us, 0):>6}  "
            f"{vs_pg:>9} {vs_mem:>10} {fmt(r.load, 1):>5} {fmt(r.steal_pct, 1):>6} "
            f"{f'{fmt(r.client_ran, 2)}/{fmt(r.client_waited, 2)}':>11} {fmt(r.idle_pct, 0):>5} "
            f"{f'{r.overflow_srv}/{r.overflow_rly}':>12}  {r.note}")


def table(results: list[Result], servers: list[str], runs: int) -> str:
    head = (f"{'rate':>6}  {'server':<10} {'SARR/s':>9} {'drops S/R':>11} {'rej':>6} "
            f"{'fail%':>6} {'avg ms':>7} {'p50 ms':>7} {'p99 ms':>7} {'RR p50':>7} "
            f"{'CPU us':>7} {'of db':>6} {'main':>6}  {'vs kea-pg':>9} {'vs kea-mem':>10} "
            f"{'load':>5} {'steal%':>6} {'client r/w':>11} {'idle%':>5} {'ovfl srv/rly':>12}  note")
    rows: list[str] = []
    for run in range(1, runs + 1):
        mine = [r for r in results if r.run == run]
        if not mine:
            continue
        rows += [f"run {run} of {runs}", head]
        for rate in sorted({r.rate for r in mine}):
            at = {r.server: r for r in mine if r.rate == rate}
            rows += [row(at[s], at) for s in servers if s in at]
        rows.append("")
    rows.append("SARR/s: Replies that granted an address ÷ period; drops S/R: Solicits without "
                "Advertise / Requests without Reply; rej: answers perfdhcp rejected (no "
                "address); fail%: both ÷ messages sent; avg ms: Solicit->Advertise avg + "
                "Request->Reply avg; p50/p99 ms: Solicit->Reply of completed SARRs; RR p50: "
                "Request->Reply (the commit's share); CPU us: per SARR, the server's processes "
                "and its PostgreSQL backends (of db), and of its main process (main: ipamd's DHCP "
                "servers, Kea's whole server); the other columns as in bench_dhcp.py "
                "(bench/README.md)")
    return "\n".join(rows + summary(results, servers, runs))


def summary(results: list[Result], servers: list[str], runs: int) -> list[str]:
    """Per server: zero-drop SARR/s and the latencies at LATENCY_RATE, each run's and their
    median; ipamd's ratio to each Kea; issue 49's two conditions."""
    rows = [f"summary (median of {runs} run{'s' if runs > 1 else ''}; each run's figure "
            "in brackets, + where a server was clean at the sweep's top rate):"]
    zero: dict[str, float | None] = {}
    p50: dict[str, float | None] = {}
    behind: list[str] = []  # servers that fell short of LATENCY_RATE: their p50 is a queue
    top_rate = max((r.rate for r in results), default=0)
    for server in servers:
        tops = [best_clean(results, server, run) for run in range(1, runs + 1)]
        zero[server] = median([t.sarr_per_s if t else 0.0 for t in tops])
        each = [at_rate(results, server, run, LATENCY_RATE) for run in range(1, runs + 1)]
        figures = {name: median([getattr(r, name) if r else None for r in each])
                   for name in ("p50_ms", "avg_ms", "p99_ms", "sa_p50_ms", "rr_p50_ms",
                                "rr_avg_ms", "rr_p99_ms", "cpu_us", "cpu_main_us", "cpu_db_us")}
        p50[server] = figures["p50_ms"]
        behind += [f"{server} achieved {fmt(r.sarr_per_s, 0)} of {LATENCY_RATE}/s"
                   f"{f' (run {r.run})' if runs > 1 else ''}"
                   for r in each if r is not None and not r.kept_rate]
        rows.append(
            f"  {server:<10} zero-drop {fmt(zero[server], 1):>8} SARR/s "
            f"[{', '.join(_top(t, top_rate) for t in tops)}]; "
            f"at {LATENCY_RATE}/s Solicit->Reply p50 {fmt(figures['p50_ms'], 2)} "
            f"avg {fmt(figures['avg_ms'], 2)} p99 {fmt(figures['p99_ms'], 1)} ms, "
            f"Request->Reply p50 {fmt(figures['rr_p50_ms'], 2)} "
            f"avg {fmt(figures['rr_avg_ms'], 2)} p99 {fmt(figures['rr_p99_ms'], 1)} ms "
            f"(Solicit->Advertise p50 {fmt(figures['sa_p50_ms'], 2)}), "
            f"CPU {fmt(figures['cpu_us'], 0)} us/SARR (main {fmt(figures['cpu_main_us'], 0)}, "
            f"db {fmt(figures['cpu_db_us'], 0)}) "
            f"[p50 {', '.join(fmt(r.p50_ms, 2) if r else '-' for r in each)}]")
    if "ipamd" not in servers:
        return rows
    run_ratio: dict[str, float | None] = {}
    for peer in (s for s in servers if s != "ipamd"):
        per_run = [run_zero_ratio(results, peer, run) for run in range(1, runs + 1)]
        run_ratio[peer] = median(per_run)
        rows.append(f"  ipamd / {peer}: zero-drop per run [{', '.join(fmt(v, 2) for v in per_run)}]"
                    f", their median {fmt(run_ratio[peer], 2)} (of the medians "
                    f"{ratio(zero['ipamd'], zero[peer])}), "
                    f"p50 at {LATENCY_RATE}/s {ratio(p50['ipamd'], p50[peer])}")
    rows += done_when(run_ratio, p50, runs, behind)
    return rows


def _top(best: Result | None, top_rate: int) -> str:
    """A run's zero-drop figure; ``+`` when it was clean at the sweep's highest rate (its
    real zero-drop rate is higher: the sweep did not reach it)."""
    if best is None:
        return "-"
    return fmt(best.sarr_per_s, 0) + ("+" if best.rate == top_rate else "")


def run_zero_ratio(results: list[Result], peer: str, run: int) -> float | None:
    """ipamd's zero-drop SARR/s over ``peer``'s in one run: 0 when ipamd had no clean rate,
    None when the peer had none (no ratio)."""
    mine, theirs = best_clean(results, "ipamd", run), best_clean(results, peer, run)
    if theirs is None or not theirs.sarr_per_s:
        return None
    return (mine.sarr_per_s or 0.0) / theirs.sarr_per_s if mine else 0.0


def done_when(run_ratio: dict[str, float | None], p50: dict[str, float | None], runs: int,
              behind: list[str]) -> list[str]:
    """Issue 49's bench conditions: the median of the runs' zero-drop ratios (as
    bench_dhcp's three sweeps are read), the p50s' medians; a server that did not keep up
    with LATENCY_RATE is named (its p50 is the time spent in its queue)."""
    rows = []
    if "kea-mem" in run_ratio:
        value = run_ratio["kea-mem"]
        met = value is not None and value >= 1.0
        rows.append(f"  issue 49: ipamd zero-drop >= kea-mem's (median of {runs} runs' "
                    f"ratios): {'met' if met else 'NOT met'} ({fmt(value, 2)})")
    if "kea-pg" in p50:
        mine, theirs = p50.get("ipamd"), p50["kea-pg"]
        if mine is None or theirs is None:
            return [*rows, f"  issue 49: p50 at {LATENCY_RATE}/s: not measured (no SARRs "
                           f"completed at {LATENCY_RATE}/s, or the rate not in --rates)"]
        met = mine <= theirs
        rows.append(f"  issue 49: ipamd p50 at {LATENCY_RATE}/s <= kea-pg's: "
                    f"{'met' if met else 'NOT met'} ({fmt(mine, 2)} vs {fmt(theirs, 2)} ms"
                    + (f"; {', '.join(behind)}: its p50 is its queue)" if behind else ")"))
    return rows


def report(result: Result) -> None:
    where = f"run {result.run} {result.server} r={result.rate}"
    if result.skipped:
        print(f"  {where:<26} skipped: {result.note}", flush=True)
        return
    print(f"  {where:<26} SARR/s {fmt(result.sarr_per_s, 1):>9}  failures {result.failures:>6}"
          f"  p50 {fmt(result.p50_ms, 2)} ms  RR p50 {fmt(result.rr_p50_ms, 2)} ms"
          f"  CPU {fmt(result.cpu_us, 0)} us/SARR  load {fmt(result.load, 1)}"
          f"  steal {fmt(result.steal_pct, 1)}%  {result.note}", flush=True)


# --- main ------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)),
                        help="comma-separated offered SARR/s (perfdhcp -r)")
    parser.add_argument("--period", type=int, default=10, help="seconds per rate (perfdhcp -p)")
    parser.add_argument("--runs", type=int, default=1,
                        help="whole sweeps; the summary gives the median of each figure")
    parser.add_argument("--clients", type=int, default=50_000,
                        help="simulated clients (perfdhcp -R); at most the pool size")
    parser.add_argument("--servers", default=",".join(DEFAULT_SERVERS),
                        help=f"comma-separated, from {', '.join(ALL_SERVERS)}")
    parser.add_argument("--full-sweep", action="store_true",
                        help="run every rate, also above two failed rates in a row")
    parser.add_argument("--pg-nondurable", action="store_true",
                        help="run the shared PostgreSQL with fsync and synchronous_commit off "
                             "(both servers alike; default: durable)")
    parser.add_argument("--kea-log", default="WARN", choices=["WARN", "INFO", "DEBUG"],
                        help="Kea's log severity (its logs land in the results folder)")
    parser.add_argument("--ipamd-dhcp6", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra [dhcp6] key for ipamd, VALUE in TOML "
                             "(e.g. commit_window_us=200); repeatable")
    parser.add_argument("--profile", action="store_true",
                        help="run ipamd's main process under cProfile: <step>.prof in the "
                             "results folder (python -m pstats); it costs ipamd CPU, so its "
                             "figures are not comparable then")
    parser.add_argument("--stamps-max", type=int, default=STAMPS_MAX, metavar="RATE",
                        help="perfdhcp -x t (every exchange's timestamps: the percentiles) "
                             "only at rates up to RATE (default %(default)s)")
    args = parser.parse_args(argv)
    pairs = []
    for item in args.ipamd_dhcp6:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier() or not value.strip():
            parser.error(f"--ipamd-dhcp6 takes KEY=VALUE, not {item!r}")
        try:  # the value in the config's own syntax (TOML)
            pairs.append((key.strip(), tomllib.loads(f"v = {value.strip()}")["v"]))
        except tomllib.TOMLDecodeError as error:
            parser.error(f"--ipamd-dhcp6 {item!r}: the value is not TOML ({error})")
    args.ipamd_dhcp6_pairs = tuple(pairs)
    try:
        args.rate_list = [int(r) for r in args.rates.split(",") if r]
    except ValueError:
        parser.error(f"--rates takes comma-separated integers, not {args.rates!r}")
    args.server_list = [s for s in args.servers.split(",") if s]
    unknown = set(args.server_list) - set(ALL_SERVERS)
    if unknown or not args.server_list:
        parser.error(f"unknown servers: {', '.join(sorted(unknown)) or '(none given)'}")
    if not 1 <= args.period <= 120 or not all(1 <= r <= 50_000 for r in args.rate_list):
        parser.error("period must be 1..120 s and rates 1..50000")
    if not args.rate_list:
        parser.error("--rates: at least one rate")
    if not 1 <= args.runs <= 9:
        parser.error("runs must be 1..9")
    if not 1 <= args.clients <= POOL_SIZE:
        parser.error(f"clients must be 1..{POOL_SIZE} (the pool size)")
    return args


def sweep(rig: Rig, args: argparse.Namespace, template: str | None) -> list[Result]:
    results: list[Result] = []
    silent: set[str] = set()
    order = sweep_order(args.server_list, args.rate_list)
    for run in range(1, args.runs + 1):
        for server, rate in order:
            if server in silent:
                continue
            if not args.full_sweep and skip_rest(results, server, run):
                result = Result(server, rate, run, skipped=True,
                                note="failures at the two rates below")
            else:
                try:
                    result = measure(rig, server, rate, run, args, template)
                except BenchError as error:
                    result = Result(server, rate, run, note=str(error)[:300])
            results.append(result)
            report(result)
            if result.sarr_per_s is None and "no DHCP answer" in result.note:
                print(f"  {server}: not answering; skipping its other rates", flush=True)
                silent.add(server)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dhcp_rig.preflight(TOOLS, "kea-dhcp6-server")
    out = RESULTS / f"dhcp6-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True)
    signal.signal(signal.SIGTERM, terminate)
    sweep_stale_work()
    work = make_work()
    print(f"DHCPv6 bench: rates {args.rate_list}, {args.period} s each, {args.runs} run(s), "
          f"{args.clients} clients, servers {args.server_list}, PostgreSQL "
          f"{'NOT durable' if args.pg_nondurable else 'durable'}"
          + (f", ipamd [dhcp6] {', '.join(args.ipamd_dhcp6)}" if args.ipamd_dhcp6 else "")
          + f"; logs in {out}", flush=True)
    wake = wake_cost()
    print(f"machine: {wake.line()}", flush=True)
    pg_proc = None
    results: list[Result] = []
    try:
        with netns.lab() as lab:
            srv, rly = lab.namespace("srv"), lab.namespace("rly")
            for ns in (srv, rly):
                no_dad(lab, ns)
            pair = lab.veth("b", srv, rly, f"{SERVER_IP}/64", f"{RELAY_IP}/64")
            cluster, pg_proc = start_postgres(work, durable=not args.pg_nondurable)
            rig = Rig(lab=lab, srv=srv, rly=rly, work=work, out=out, pg=cluster,
                      pg_proc=pg_proc, kea_severity=args.kea_log, relay_if=pair.b,
                      ipamd_dhcp6=args.ipamd_dhcp6_pairs, profile=args.profile)
            template = (ipamd_template(rig, lambda name: ipamd_config(rig, name))
                        if "ipamd" in args.server_list else None)
            results = sweep(rig, args, template)
    finally:
        stop_postgres(pg_proc)
        shutil.rmtree(work, ignore_errors=True)
        if results:
            text = table(results, args.server_list, args.runs)
            (out / "table.txt").write_text(text + "\n")
            (out / "results.json").write_text(json.dumps(
                {"args": vars(args), "machine": asdict(wake),
                 "results": [asdict(r) | {"failures": r.failures} for r in results]}, indent=2))
            print("\n" + text)
    failed = [r for r in results if r.sarr_per_s is None and not r.skipped]
    if failed:
        print(f"bench: {len(failed)} run(s) measured nothing (see the notes)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("bench: interrupted; everything it started is stopped and removed", file=sys.stderr)
        sys.exit(130)
