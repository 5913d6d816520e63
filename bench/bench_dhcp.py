#!/usr/bin/env python3
"""`make bench` for DHCP: full relayed DORA with perfdhcp against Kea and ipamd, side by side.

Topology (created here, removed on any exit): namespace ``srv`` holds the server under test
on 10.77.0.1; namespace ``rly`` holds perfdhcp on 10.77.0.2, which acts as a relay (``-l``:
every packet carries giaddr 10.77.0.2 and replies come back to it on port 67). One veth pair
joins them, so every packet crosses a real link. Leases come from 10.77.0.0/16.

Servers:
  kea-pg     kea-dhcp4 with its PostgreSQL lease backend (single-threaded, Kea's default)
  kea-mem    kea-dhcp4 with memfile (persisted CSV)
  ipamd      the appliance (`python -m ipamd run`), leases in PostgreSQL
  ipamd-ping the same with the subnet's ping check on (docs/api-ipam.md, "Ping check"):
             every Offer waits for an ICMP echo to its address that nobody answers (the
             pool's networks are routed to perfdhcp's namespace, which does not forward),
             --ping-timeout-ms each; the summary gives its zero-drop rate over ipamd's
  (kea-pg-mt: Kea PostgreSQL with 4 threads, on request with --servers)
The sweep goes rate by rate, every server at a rate before the next rate (sweep_order), so
the figures compared at one rate were taken minutes apart at most.
Each (server, rate) runs on a fresh lease store: a new database (Kea's schema through
`kea-admin db-init pgsql`; ipamd's by its own migrations, plan through its API) or a new
lease file. Both PostgreSQL servers use one private, durable cluster (fsync on) started here.

perfdhcp runs `-g single` (on 2 cores a second receive thread starves the server) at each
capped rate of the sweep for a fixed period; the table shows achieved DORA/s, drops and
latency per server and the ratios. Everything is written under bench/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import math
import shutil
import signal
import subprocess
import sys
import tomllib
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
    commit_means,
    dora_latencies,
    exchange_stamps,
    late_offer_spans,
    parse_perfdhcp,
    percentile,
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

SERVER_IP = "10.77.0.1"
RELAY_IP = "10.77.0.2"
SUBNET = "10.77.0.0/16"
POOL = ("10.77.1.0", "10.77.255.254")  # 65,279 addresses
LEASE_TIME = 3600
PING_MAC = "02:77:00:00:00:01"
# Up to 12,000: Kea with memfile drops nothing at 10,000 on the 2 cores; its zero-drop
# rate must be inside the sweep for the ratio to mean anything. Steps of 1,000 from 6,000
# up, where both zero-drop rates fall: with 2,000 between 8,000 and 12,000 the ratio could
# only read 0.8, 1.0 or 1.25 there.
DEFAULT_RATES = (200, 500, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
                 11000, 12000)
LATENCY_RATES = (200, 1000)  # the summary's latency comparison
# perfdhcp -x t keeps every packet it sent and got for its timestamps: ~8.5 kB a DORA, 1.6-2 GB
# and 400,000-500,000 page faults in a run at 9,000-11,000/s, against 21 MB and 3,400
# without. That bookkeeping stalls the client itself (on this VM a fresh page faults on the
# host too: free page reporting), so the DORA latencies are taken only up to this rate,
# which covers LATENCY_RATES; above it perfdhcp runs as ISC runs it for throughput.
STAMPS_MAX = 2000
ALL_SERVERS = ("kea-pg", "kea-mem", "ipamd", "ipamd-ping", "kea-pg-mt")
DEFAULT_SERVERS = ("kea-pg", "kea-mem", "ipamd", "ipamd-ping")
IPAMD_SERVERS = ("ipamd", "ipamd-ping")
PING_TIMEOUT_MS = 100  # the ping check's wait in ipamd-ping's runs (the subnet's minimum)
# The pool's addresses outside the link's first /24, routed to perfdhcp's namespace (which
# does not forward): a probe leaves as to a client behind a relay, with no neighbour
# resolution per address, and nothing answers.
POOL_ROUTES = ("10.77.1.0/24", "10.77.2.0/23", "10.77.4.0/22", "10.77.8.0/21", "10.77.16.0/20",
               "10.77.32.0/19", "10.77.64.0/18", "10.77.128.0/17")
TOOLS = ("ip", "perfdhcp", "kea-dhcp4", "kea-admin", "psql")


@dataclass
class Result:
    server: str
    rate: int
    dora_per_s: float | None = None
    sent: int = 0             # Discovers + Requests sent
    drops_do: int = 0
    drops_ra: int = 0
    avg_ms: float | None = None   # Discover→Offer avg + Request→Ack avg (one DORA)
    max_ms: float | None = None   # worst Discover→Offer + worst Request→Ack
    p50_ms: float | None = None   # Discover→Ack of each completed DORA (perfdhcp -x t)
    p99_ms: float | None = None
    cpu_us: float | None = None   # server CPU (process tree + its PostgreSQL backends) per Ack
    cpu_db_us: float | None = None  # of which its PostgreSQL backends
    overload: bool = False        # the run offered twice the server's measured ceiling
    load: float | None = None     # 1-minute load average when the run started
    steal_pct: float | None = None  # the host's steal share of this VM's CPU during the run
    # perfdhcp while it sent: seconds a second it ran, and waited for a core (ClientMeter)
    client_ran: float | None = None
    client_waited: float | None = None
    idle_pct: float | None = None  # the share of both cores that sat idle meanwhile
    # Datagrams the kernel dropped because a socket's receive buffer was full, during the
    # run: at the server (srv namespace) and at perfdhcp (rly namespace).
    overflow_srv: int = 0
    overflow_rly: int = 0
    # ipamd: seconds from the end of the run until its lease journal was derived (history
    # and events; held back while the DHCP server was at its ceiling). The CPU figures
    # include that work.
    derived_after_s: float | None = None
    # ipamd: packets it dropped on purpose, by reason (overload: a Discover shed while packets
    # waited past dhcp.overload_wait_ms; stale: one that waited past dhcp.stale_wait_ms), and
    # its slowest group commit's histogram bucket (s): tells a server that shed under a
    # stalled commit from a client that fell behind.
    server_drops: dict[str, int] = field(default_factory=dict)
    slowest_commit_s: float | None = None
    # ipamd: the means of its group commits' wait (the oldest Request's, from its packet to
    # the batch's statement) and database time, ms (dhcp_figures.commit_means): where a
    # Request's time to its Ack goes, the rest being the network and the client.
    commit_wait_ms: float | None = None
    commit_ms: float | None = None
    # Stretches of the run in which Offers came back more than 10 ms late (from, to, worst
    # ms; dhcp_figures.late_offer_spans): where in time a run's lost answers fell.
    late_spans: list[tuple[float, float, float]] = field(default_factory=list)
    note: str = ""

    @property
    def drops(self) -> int:
        return self.drops_do + self.drops_ra

    @property
    def drop_pct(self) -> float:
        return 100.0 * self.drops / self.sent if self.sent else 0.0

    @property
    def kept_rate(self) -> bool:
        """Achieved the offered rate (within 1 %): its latency is that of the offered load,
        not of a queue in front of a saturated server."""
        return self.dora_per_s is not None and self.dora_per_s >= 0.99 * self.rate


# --- perfdhcp --------------------------------------------------------------------------

def to_result(server: str, rate: int, period: int, parsed: dict[str, Any],
              text: str = "") -> Result:
    """perfdhcp's "Rate" divides by the period plus the drain time (-W): count Acks instead.

    Drops are every packet that got no answer (perfdhcp's timed-out drops and any still
    in flight after the drain), so nothing lost hides between its counters.
    """
    do = parsed.get("DISCOVER-OFFER", {})
    ra = parsed.get("REQUEST-ACK", {})
    avg = [v for v in (do.get("avg_ms"), ra.get("avg_ms")) if v is not None]
    top = [v for v in (do.get("max_ms"), ra.get("max_ms")) if v is not None]
    return Result(
        server=server, rate=rate, dora_per_s=round(ra.get("received", 0) / period, 1),
        sent=do.get("sent", 0) + ra.get("sent", 0),
        drops_do=max(do.get("sent", 0) - do.get("received", 0), 0),
        drops_ra=max(ra.get("sent", 0) - ra.get("received", 0), 0),
        avg_ms=round(sum(avg), 3) if len(avg) == 2 else None,
        max_ms=round(sum(top), 3) if len(top) == 2 else None,
        **latency_percentiles(text),
        late_spans=late_offer_spans(exchange_stamps(text).get("DISCOVER-OFFER", [])),
    )


def latency_percentiles(text: str) -> dict[str, float | None]:
    latencies = dora_latencies(text)
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    return {"p50_ms": None if p50 is None else round(p50, 3),
            "p99_ms": None if p99 is None else round(p99, 3)}


# --- the rig ---------------------------------------------------------------------------

@dataclass
class Rig(dhcp_rig.Rig):
    ipamd_dhcp: tuple[tuple[str, Any], ...] = ()  # extra [dhcp] keys, values read as TOML

    def ipamd_figures(self, keep: Path) -> tuple[dict[str, int], float | None]:
        """ipamd's own drop counters and slowest commit (``server_figures``), from its
        /metrics on the loopback face; nothing when it does not answer. The whole text is
        kept in ``keep`` (its commit batch sizes and times, for a closer look)."""
        text = self.ipamd_metrics(keep)
        return ({}, None) if text is None else server_figures(text)

    def perfdhcp(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        argv = ["perfdhcp", "-4", "-g", "single", "-l", RELAY_IP, *args, SERVER_IP]
        try:
            return self.lab.run(self.rly, argv, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, -1, "", "perfdhcp timed out")

    def answers(self) -> bool:
        """Full DORAs from a client of its own (not one of the measured ones) complete.

        perfdhcp ``-n 1`` exits as soon as it has sent, so a short rated run with a
        drain time (-W) is the reliable ping.
        """
        done = self.perfdhcp("-r", "4", "-p", "1", "-W", "1000000", "-b", f"mac={PING_MAC}",
                             timeout=15)
        acks = parse_perfdhcp(done.stdout).get("REQUEST-ACK", {}).get("received", 0)
        return acks > 0


# --- servers ---------------------------------------------------------------------------

def kea_config(rig: Rig, template: str, threads: int, **values: Any) -> Path:
    return fill_kea_template(
        rig, template, interface=rig.lab.ifname("ba"), server_ip=SERVER_IP, subnet=SUBNET,
        pool_start=POOL[0], pool_end=POOL[1], gateway=RELAY_IP, lease_time=LEASE_TIME,
        renew_time=LEASE_TIME // 2, rebind_time=LEASE_TIME * 7 // 8,
        multi_threading="true" if threads > 1 else "false", threads=max(threads, 1),
        severity=rig.kea_severity, **values,
    )


@contextlib.contextmanager
def kea(rig: Rig, backend: str, threads: int, label: str) -> Any:
    """kea-dhcp4 on a fresh lease store, answering, inside ``srv``."""
    database = None
    if backend == "pgsql":
        database = kea_database(rig)
        config = kea_config(rig, "kea-dhcp4-pgsql.json", threads, db_name=database,
                            db_host=rig.pg.socket_dir, db_port=rig.pg.port, db_user=PG_USER)
    else:
        lease_file = rig.work / f"{label}.leases.csv"
        config = kea_config(rig, "kea-dhcp4-memfile.json", threads, lease_file=lease_file)
    with kea_running(rig, "kea-dhcp4", config, label, database) as proc:
        yield proc, database


def ipamd_config(rig: Rig, database: str) -> Path:
    rig.counter += 1
    return write_config(rig.work / f"ipamd-{rig.counter}.toml", {
        "database": {"dsn": rig.pg.dsn(database)},
        "api": {"public_enabled": False, "loopback_listen": f"127.0.0.1:{API_PORT}"},
        "dhcp": {"listen": [f"{SERVER_IP}:67"], "trusted_relays": [f"{RELAY_IP}/32"],
                 **dict(rig.ipamd_dhcp)},
        "logging": {"level": "WARNING", "access_log": False},
    }, {"state_dir": str(rig.work / "ipamd-state")})


def create_plan(base: str, ping_timeout_ms: int | None = None) -> None:
    """The plan the bench serves, through ipamd's own API (loopback, before any token);
    with ``ping_timeout_ms``, the subnet's ping check on."""
    ping = ({} if ping_timeout_ms is None else
            {"ping_check": True, "ping_timeout_ms": ping_timeout_ms})
    with httpx.Client(base_url=base, timeout=30) as api:
        prefix = post(api, "/prefixes", {"cidr": SUBNET, "description": "bench"})
        subnet = post(api, "/subnets", {"prefix_id": prefix["id"], "cidr": SUBNET,
                                        "gateway": RELAY_IP, "lease_time_seconds": LEASE_TIME,
                                        **ping})
        post(api, f"/subnets/{subnet['id']}/pools",
             {"name": "bench", "start_ip": POOL[0], "end_ip": POOL[1]})


@contextlib.contextmanager
def ipamd(rig: Rig, template: str, label: str, ping_timeout_ms: int | None = None) -> Any:
    """The appliance on a fresh database (cloned from a migrated template), plan via the API
    (``ping_timeout_ms``: with the ping check on)."""
    database = rig.fresh_database("ipamd", template)
    plan = functools.partial(create_plan, ping_timeout_ms=ping_timeout_ms)
    with ipamd_running(rig, ipamd_config(rig, database), database, label, plan) as proc:
        yield proc, database


# --- the sweep -------------------------------------------------------------------------

def measure(rig: Rig, server: str, rate: int, args: argparse.Namespace,
            template: str | None, overload: bool = False) -> Result:
    label = f"{server}-r{rate}" + ("-overload" if overload else "")
    starter: Any
    if server in IPAMD_SERVERS:
        assert template is not None
        starter = ipamd(rig, template, label,
                        args.ping_timeout_ms if server == "ipamd-ping" else None)
    else:
        backend = "memfile" if server == "kea-mem" else "pgsql"
        starter = kea(rig, backend, 4 if server == "kea-pg-mt" else 1, label)
    with starter as (proc, database):
        load = load_average()
        before = rig.udp_overflows(rig.srv), rig.udp_overflows(rig.rly)
        meter = CpuMeter(proc.pid, database, PG_USER)
        meter.start()
        machine = MachineMeter().start()
        client = ClientMeter("perfdhcp", args.period).start()
        # -x t up to --stamps-max: every completed exchange's timestamps (the percentiles)
        done = rig.perfdhcp("-r", str(rate), "-p", str(args.period), "-R", str(args.clients),
                            "-W", "1000000", *stamp_args(rate, args.stamps_max),
                            timeout=args.period + 60)
        # The run's history rows and events are part of its cost: ipamd holds them back
        # while at its ceiling and derives them after, within the CPU measured here.
        derived_after: float | None = None
        figures: tuple[dict[str, int], float | None] = ({}, None)
        if server in IPAMD_SERVERS:
            figures = rig.ipamd_figures(rig.out / f"{label}.metrics.txt")
            try:
                derived_after = rig.journal_derived(database)
            except BenchError:
                derived_after = math.inf  # not within the timeout: the CPU misses the rest
        cpu = meter.seconds()
        steal_pct = machine.steal_percent()
        client_times = client.result()
        idle_pct = client.cores.idle_percent() if client_times is not None else None
        after = rig.udp_overflows(rig.srv), rig.udp_overflows(rig.rly)
    (rig.out / f"{label}.perfdhcp.txt").write_text(done.stdout + done.stderr)
    if done.returncode not in (0, 3):  # 3: some exchanges did not complete (drops)
        return Result(server, rate, load=load, note=f"perfdhcp failed ({done.returncode}): "
                      f"{(done.stderr or done.stdout).strip()[-200:]}")
    result = to_result(server, rate, args.period, parse_perfdhcp(done.stdout), done.stdout)
    result.load = load
    result.steal_pct = steal_pct
    if client_times is not None:
        result.client_ran, result.client_waited = (round(v, 2) for v in client_times)
        result.idle_pct = idle_pct
    result.overload = overload
    result.derived_after_s = None if derived_after == math.inf else derived_after
    if derived_after == math.inf:
        result.note = "history+events NOT derived within 120 s (CPU incomplete)"
    elif derived_after is not None and derived_after >= 0.5:
        result.note = f"history+events derived {derived_after:.1f} s after (in CPU)"
    result.server_drops, result.slowest_commit_s = figures
    kept = rig.out / f"{label}.metrics.txt"
    if kept.exists():
        result.commit_wait_ms, result.commit_ms = commit_means(kept.read_text())
    late = (f"Offers late {spans_text(result.late_spans)}"
            if result.drops and result.late_spans else "")
    result.note = "; ".join(filter(None, (result.note, commit_note(result), server_note(result),
                                          late)))
    acks = round((result.dora_per_s or 0) * args.period)
    if acks:
        result.cpu_us = round(sum(cpu) / acks * 1e6, 1)
        result.cpu_db_us = round(cpu[1] / acks * 1e6, 1) if database else None
    result.overflow_srv, result.overflow_rly = after[0] - before[0], after[1] - before[1]
    return result


def best_clean(results: list[Result], server: str, max_drop_pct: float = 0.0) -> Result | None:
    """The highest achieved rate whose drops stay within ``max_drop_pct`` (default: none)."""
    clean = [r for r in results if r.server == server and r.dora_per_s and not r.overload
             and (r.drops == 0 if max_drop_pct == 0 else r.drop_pct <= max_drop_pct)]
    return max(clean, key=lambda r: r.dora_per_s or 0, default=None)


def peak(results: list[Result], server: str) -> Result | None:
    mine = [r for r in results if r.server == server and r.dora_per_s and not r.overload]
    return max(mine, key=lambda r: r.dora_per_s or 0, default=None)


def latency_text(r: Result) -> str:
    """p50 where perfdhcp's timestamps were taken (``--stamps-max``), else its average."""
    if r.p50_ms is not None:
        return f"p50 {fmt(r.p50_ms, 1)} ms"
    return f"avg {fmt(r.avg_ms, 1)} ms"


def commit_note(r: Result) -> str:
    """ipamd's Requests on their way to the Ack, means (``Result.commit_wait_ms``)."""
    if r.commit_wait_ms is None or r.commit_ms is None:
        return ""
    return f"Requests waited {r.commit_wait_ms:.2f} ms, committed in {r.commit_ms:.2f} ms"


def server_note(r: Result) -> str:
    """What ipamd says it dropped, with its slowest commit when it shed anything."""
    if not r.server_drops:
        return ""
    dropped = ", ".join(f"{reason} {n}" for reason, n in sorted(r.server_drops.items()))
    slowest = ("" if r.slowest_commit_s is None else
               "; slowest commit beyond the largest bucket" if r.slowest_commit_s == math.inf
               else f"; slowest commit <= {r.slowest_commit_s:g} s")
    return f"ipamd dropped: {dropped}{slowest}"


def ceiling(results: list[Result], server: str) -> Result | None:
    """The server's ceiling in the sweep: its highest achieved rate with at most 1% drops."""
    return best_clean(results, server, 1.0)


def row(r: Result, at: dict[str, Result]) -> str:
    pg, mem = at.get("kea-pg"), at.get("kea-mem")
    vs_pg = "" if r.server == "kea-pg" else ratio(r.dora_per_s, pg.dora_per_s if pg else None)
    vs_mem = "" if r.server == "kea-mem" else ratio(r.dora_per_s, mem.dora_per_s if mem else None)
    return (f"{r.rate:>6}  {r.server:<10} {fmt(r.dora_per_s, 1):>9} {r.drops:>7} "
            f"{r.drop_pct:>5.1f}% {fmt(r.avg_ms, 2):>8} {fmt(r.p50_ms, 2):>8} "
            f"{fmt(r.p99_ms, 1):>8} {fmt(r.max_ms, 1):>8} {fmt(r.cpu_us, 0):>8} "
            f"{fmt(r.cpu_db_us, 0):>7}  {vs_pg:>9} "
            f"{vs_mem:>10} {fmt(r.load, 1):>5} {fmt(r.steal_pct, 1):>6} "
            f"{f'{fmt(r.client_ran, 2)}/{fmt(r.client_waited, 2)}':>11} {fmt(r.idle_pct, 0):>5} "
            f"{f'{r.overflow_srv}/{r.overflow_rly}':>12}  "
            f"{r.note}")


def latency_summary(results: list[Result], servers: list[str]) -> list[str]:
    """Average, p50 and p99 DORA latency and CPU per DORA at the latency rates, and ipamd's
    ratios. The average comes first: it is what a client waits for, and the issue's target
    (a tail of slow commits moves it and hides in the p50)."""
    rows = []
    for rate in LATENCY_RATES:
        at = {r.server: r for r in results if r.rate == rate and not r.overload}
        if not at:
            continue
        cells = [f"{s} avg {fmt(at[s].avg_ms, 2)} p50 {fmt(at[s].p50_ms, 2)} "
                 f"p99 {fmt(at[s].p99_ms, 1)} ms, {fmt(at[s].cpu_us, 0)} us CPU"
                 for s in servers if s in at]
        rows.append(f"  at {rate}/s: " + "; ".join(cells))
        mine = at.get("ipamd")
        for peer in ("kea-pg", "kea-mem", "kea-pg-mt"):
            theirs = at.get(peer)
            if mine is None or theirs is None:
                continue
            behind = [r for r in (mine, theirs) if not r.kept_rate]
            if behind:  # a saturated server's latency is its queue: no like-for-like ratio
                rows.append(f"    ipamd / {peer}: not comparable, " + "; ".join(
                    f"{r.server} achieved {fmt(r.dora_per_s, 1)} of {rate}/s" for r in behind))
                continue
            rows.append(f"    ipamd / {peer}: avg {ratio(mine.avg_ms, theirs.avg_ms)}, "
                        f"p50 {ratio(mine.p50_ms, theirs.p50_ms)}, "
                        f"p99 {ratio(mine.p99_ms, theirs.p99_ms)}, "
                        f"CPU per DORA {ratio(mine.cpu_us, theirs.cpu_us)}")
    return rows


def client_drop_summary(results: list[Result], servers: list[str]) -> list[str]:
    """Per server, the datagrams lost at perfdhcp's socket (answered, never read: ``ovfl``
    rly) and at the server's own, over the sweep's steps at or below its zero-drop rate,
    with the steps where the client's socket lost any: at those rates none may be lost
    there, whatever the server's own socket did."""
    rows = []
    for server in servers:
        best = best_clean(results, server)
        if best is None:
            continue
        steps = [r for r in results if r.server == server and not r.overload
                 and r.rate <= best.rate and r.dora_per_s is not None]  # (measured)
        lossy = [r.rate for r in steps if r.overflow_rly]
        plural = "" if len(steps) == 1 else "s"
        rows.append(f"  {server:<10} up to {best.rate}/s ({len(steps)} step{plural}): "
                    f"client socket {sum(r.overflow_rly for r in steps)}, server socket "
                    f"{sum(r.overflow_srv for r in steps)}"
                    + (f"; client losses at {', '.join(f'{rate}/s' for rate in lossy)}"
                       if lossy else ""))
    return rows


def overload_summary(results: list[Result], servers: list[str]) -> list[str]:
    rows = []
    for server in servers:
        top = ceiling(results, server)
        over = next((r for r in results if r.server == server and r.overload), None)
        if top is None or over is None:
            continue
        share = 100 * (over.dora_per_s or 0) / (top.dora_per_s or 1)
        rows.append(f"  {server:<10} ceiling {fmt(top.dora_per_s, 1)} DORA/s; offered "
                    f"{over.rate}/s: achieved {fmt(over.dora_per_s, 1)} ({share:.0f}% of the "
                    f"ceiling), {latency_text(over)}, drops {over.drop_pct:.1f}%")
    return rows


def table(results: list[Result], servers: list[str]) -> str:
    rows = [f"{'rate':>6}  {'server':<10} {'DORA/s':>9} {'drops':>7} {'drop%':>6} "
            f"{'avg ms':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU us':>8} {'of db':>7}  "
            f"{'vs kea-pg':>9} {'vs kea-mem':>10} {'load':>5} {'steal%':>6} {'client r/w':>11} {'idle%':>5} "
            f"{'ovfl srv/rly':>12}  note"]
    sweep = [r for r in results if not r.overload]
    for rate in sorted({r.rate for r in sweep}):
        at = {r.server: r for r in sweep if r.rate == rate}
        rows += [row(at[server], at) for server in servers if server in at]
        rows.append("")
    overloads = [r for r in results if r.overload]
    if overloads:
        rows.append("twice the ceiling (the highest rate with at most 1% drops above):")
        rows += [row(r, {}) for r in overloads]
        rows.append("")
    rows.append("load: 1-minute load average at the start of the run (2 cores); steal%: the "
                "host's share of this VM's CPU time during the run (bench/machine.py); client r/w: "
                "seconds a second perfdhcp ran / waited for a core while it sent (it needs "
                "about a core at 10,000/s: a wait means the server's processes took its "
                "time); idle%: the share of both cores idle meanwhile (a wait beside idle "
                "time is processes queued on one core while the other idled); ovfl srv/rly: "
                "datagrams dropped by a full socket buffer at the server / at perfdhcp; "
                "p50/p99: Discover->Ack of completed DORAs, up to --stamps-max (perfdhcp "
                "-x t, a burden on the client at high rates); CPU us: per Ack, the server's "
                "processes and its PostgreSQL backends (of db: the backends), for ipamd "
                "until its lease journal was derived (history and events, held back while "
                "at its ceiling: the note says how long after the run); Offers late: in a "
                "run with drops, its longest stretches (seconds into the run) in which "
                "Offers, answered from memory by every server, came back over 10 ms late, "
                "and the latest of each: the answering loop, the client or the machine "
                "stalled then)")
    rows.append("summary: highest achieved DORA/s with zero drops, with at most 1% drops, "
                "and the peak (offered rate in brackets)")
    for server in servers:
        cells = []
        for label, best in (("zero-drop", best_clean(results, server)),
                            ("<=1% drops", best_clean(results, server, 1.0)),
                            ("peak", peak(results, server))):
            figure = f"{fmt(best.dora_per_s, 1)} ({best.rate})" if best else "-"
            cells.append(f"{label} {figure:>17}")
        rows.append(f"  {server:<10} " + "   ".join(cells))
    if "ipamd" in servers:
        for peer in ("kea-pg", "kea-mem", "kea-pg-mt"):
            if peer not in servers:
                continue
            parts = []
            for label, pct in (("zero-drop", 0.0), ("<=1% drops", 1.0), ("peak", None)):
                if pct is None:
                    mine, theirs = peak(results, "ipamd"), peak(results, peer)
                else:
                    mine = best_clean(results, "ipamd", pct)
                    theirs = best_clean(results, peer, pct)
                both = ratio(mine.dora_per_s if mine else None,
                             theirs.dora_per_s if theirs else None)
                parts.append(f"{label} {both}")
            rows.append(f"  ipamd / {peer}: " + ", ".join(parts))
    clients = client_drop_summary(results, servers)
    if clients:
        rows.append("datagrams lost to a full socket buffer at or below the zero-drop rate "
                    "(client: perfdhcp's, answered but never read; server: its own):")
        rows += clients
    rows += ping_summary(results, servers)
    latency = latency_summary(results, servers)
    if latency:
        rows.append("DORA latency and CPU per DORA at light load:")
        rows += latency
    overload = overload_summary(results, servers)
    if overload:
        rows.append("at twice the ceiling (no collapse: achieved near the ceiling):")
        rows += overload
    return "\n".join(rows)


def ping_summary(results: list[Result], servers: list[str]) -> list[str]:
    """ipamd with the ping check on (nobody answering) against ipamd without, same run: the
    zero-drop rate (docs/api-ipam.md, "Ping check": at least 0.9 of it), and latency."""
    if not {"ipamd", "ipamd-ping"} <= set(servers):
        return []
    on, off = best_clean(results, "ipamd-ping"), best_clean(results, "ipamd")
    rows = [f"  ping check: ipamd-ping / ipamd zero-drop "
            f"{ratio(on.dora_per_s if on else None, off.dora_per_s if off else None)} "
            f"({fmt(on.dora_per_s if on else None, 1)} vs {fmt(off.dora_per_s if off else None, 1)}"
            " DORA/s; at least 0.90 wanted)"]
    for rate in LATENCY_RATES:
        at = {r.server: r for r in results if r.rate == rate and not r.overload}
        if "ipamd" in at and "ipamd-ping" in at:
            rows.append(f"    at {rate}/s: p50 {fmt(at['ipamd-ping'].p50_ms, 1)} vs "
                        f"{fmt(at['ipamd'].p50_ms, 1)} ms (each first Offer waits the timeout)")
    return rows


def report(result: Result, what: str = "") -> None:
    where = f"{result.server} r={result.rate}"
    print(f"  {where:<20} DORA/s {fmt(result.dora_per_s, 1):>9}"
          f"  drops {result.drops:>6}  avg {fmt(result.avg_ms, 2)} ms"
          f"  p50 {fmt(result.p50_ms, 2)} ms  CPU {fmt(result.cpu_us, 0)} us/DORA"
          f"  load {fmt(result.load, 1)}  steal {fmt(result.steal_pct, 1)}%"
          f"  client {fmt(result.client_ran, 2)}/{fmt(result.client_waited, 2)} s/s"
          f"  idle {fmt(result.idle_pct, 0)}%"
          f"  {what} {result.note}",
          flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)),
                        help="comma-separated offered DORA/s (perfdhcp -r)")
    parser.add_argument("--period", type=int, default=10, help="seconds per rate (perfdhcp -p)")
    parser.add_argument("--clients", type=int, default=50_000,
                        help="simulated clients (perfdhcp -R); at most the pool size")
    parser.add_argument("--pg-nondurable", action="store_true",
                        help="run the shared PostgreSQL with fsync and synchronous_commit off "
                             "(both servers alike; default: durable)")
    parser.add_argument("--kea-log", default="WARN", choices=["WARN", "INFO", "DEBUG"],
                        help="Kea's log severity (its logs land in the results folder)")
    parser.add_argument("--overload", action=argparse.BooleanOptionalAction, default=True,
                        help="after each server's sweep, one more run at twice its ceiling "
                             "(its highest achieved rate with at most 1%% drops)")
    parser.add_argument("--servers", default=",".join(DEFAULT_SERVERS),
                        help=f"comma-separated, from {', '.join(ALL_SERVERS)}")
    parser.add_argument("--ipamd-dhcp", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra [dhcp] key for ipamd, VALUE in TOML "
                             "(e.g. commit_window_us=500); repeatable")
    parser.add_argument("--ping-timeout-ms", type=int, default=PING_TIMEOUT_MS,
                        help="ipamd-ping's subnet ping_timeout_ms (100..5000)")
    parser.add_argument("--stamps-max", type=int, default=STAMPS_MAX, metavar="RATE",
                        help="perfdhcp -x t (every exchange's timestamps: p50/p99 and the "
                             "late Offers) only at rates up to RATE (default %(default)s; "
                             "it costs the client ~8.5 kB of fresh memory a DORA)")
    args = parser.parse_args(argv)
    pairs = []
    for item in args.ipamd_dhcp:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier() or not value.strip():
            parser.error(f"--ipamd-dhcp takes KEY=VALUE, not {item!r}")
        try:  # the value in the config's own syntax (TOML)
            pairs.append((key.strip(), tomllib.loads(f"v = {value.strip()}")["v"]))
        except tomllib.TOMLDecodeError as error:
            parser.error(f"--ipamd-dhcp {item!r}: the value is not TOML ({error})")
    args.ipamd_dhcp_pairs = tuple(pairs)
    args.rate_list = [int(r) for r in args.rates.split(",") if r]
    args.server_list = [s for s in args.servers.split(",") if s]
    unknown = set(args.server_list) - set(ALL_SERVERS)
    if unknown:
        parser.error(f"unknown servers: {', '.join(sorted(unknown))}")
    if not 1 <= args.period <= 120 or not all(1 <= r <= 50_000 for r in args.rate_list):
        parser.error("period must be 1..120 s and rates 1..50000")
    if not 100 <= args.ping_timeout_ms <= 5000:
        parser.error("--ping-timeout-ms must be 100..5000 (the subnet field's range)")
    if not 1 <= args.clients <= 65_279:
        parser.error("clients must be 1..65279 (the pool size)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dhcp_rig.preflight(TOOLS, "kea-dhcp4-server")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = RESULTS / f"dhcp-{stamp}"
    out.mkdir(parents=True)
    signal.signal(signal.SIGTERM, terminate)
    sweep_stale_work()
    work = make_work()
    results: list[Result] = []
    print(f"DHCP bench: rates {args.rate_list}, {args.period} s each, {args.clients} clients, "
          f"servers {args.server_list}, PostgreSQL "
          f"{'NOT durable' if args.pg_nondurable else 'durable'}"
          + (f", ipamd [dhcp] {', '.join(args.ipamd_dhcp)}" if args.ipamd_dhcp else "")
          + f"; logs in {out}", flush=True)
    wake = wake_cost()
    print(f"machine: {wake.line()}", flush=True)
    pg_proc = None
    try:
        with netns.lab() as lab:
            srv, rly = lab.namespace("srv"), lab.namespace("rly")
            lab.veth("b", srv, rly, f"{SERVER_IP}/16", f"{RELAY_IP}/16")
            for network in POOL_ROUTES:
                lab.route(srv, network, RELAY_IP)
            cluster, pg_proc = start_postgres(work, durable=not args.pg_nondurable)
            rig = Rig(lab=lab, srv=srv, rly=rly, work=work, out=out, pg=cluster,
                      pg_proc=pg_proc, kea_severity=args.kea_log,
                      ipamd_dhcp=args.ipamd_dhcp_pairs)
            template = (ipamd_template(rig, lambda name: ipamd_config(rig, name))
                        if set(IPAMD_SERVERS) & set(args.server_list) else None)
            silent: set[str] = set()
            for server, rate in sweep_order(args.server_list, args.rate_list):
                if server in silent:
                    continue
                try:
                    result = measure(rig, server, rate, args, template)
                except BenchError as error:
                    result = Result(server, rate, note=str(error)[:300])
                results.append(result)
                report(result)
                if result.dora_per_s is None and "no DHCP answer" in result.note:
                    print(f"  {server}: not answering; skipping its other rates", flush=True)
                    silent.add(server)
            for server in args.server_list:
                top = ceiling(results, server) if args.overload else None
                if top is not None and top.dora_per_s:
                    rate = min(round(2 * top.dora_per_s), 50_000)
                    try:
                        result = measure(rig, server, rate, args, template, overload=True)
                    except BenchError as error:
                        result = Result(server, rate, overload=True, note=str(error)[:300])
                    results.append(result)
                    report(result, "2x ceiling")
    finally:
        stop_postgres(pg_proc)
        shutil.rmtree(work, ignore_errors=True)
        if results:
            text = table(results, args.server_list)
            (out / "table.txt").write_text(text + "\n")
            (out / "results.json").write_text(json.dumps(
                {"args": {k: v for k, v in vars(args).items()}, "machine": asdict(wake),
                 "results": [asdict(r) | {"drops": r.drops} for r in results]}, indent=2))
            print("\n" + text)
    failed = [r for r in results if r.dora_per_s is None]
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
