#!/usr/bin/env python3
"""`make bench` for the API: GET a page of 50 prefixes with 1 and with 8 keep-alive clients,
then the same while the DHCP server runs at half its ceiling.

The appliance runs as its own process (`python -m ipamd run`, bench/appliance.py) on a
fresh database of a private PostgreSQL, its API on a loopback port: plain HTTP/1.1 (the
loopback face serves no TLS). 60 prefixes are made through the API and an admin token is
minted, so every request is authenticated as a real client's is. `wrk` (one thread, C)
drives `GET /api/v1/prefixes?limit=50` with --clients keep-alive connections for
--duration seconds, --runs times per figure; printed: requests/s, p50/p99 latency (wrk's
own, from its histogram), CPU per request (user + system from /proc) of the appliance (all
its processes), of its API workers alone and of PostgreSQL (the postmaster's tree), and the
median over the runs. A run with any non-2xx answer or socket error is invalid: it is
printed with its counts, marked INVALID, left out of the medians, and the bench exits 1.

DHCP over a loopback relay (bench/appliance.py's dora_load: relayed DORAs on 127.77.0.1,
each client a new one): first its ceiling (a storm, 256 exchanges in flight), then half of
that offered for --duration seconds alone, then again while wrk's 8 clients run. Printed:
DORA/s achieved alone and with the API load, the API's figures with DHCP running, and the
ratios (8 clients / 1 client; with DHCP / alone). There is no peer program: the ratios are
between figures of this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.support import postgres
from tests.support.bind import free_port

from bench.appliance import (
    DHCP_NET,
    RELAY_IP,
    Appliance,
    BenchError,
    Pg,
    dora_load,
    relay_socket,
    running,
    tree_cpu_seconds,
    wait_dhcp,
)
from bench.machine import MachineMeter

ROOT = Path(__file__).resolve().parents[1]

RESULTS = Path(__file__).resolve().parent / "results"
WRK = shutil.which("wrk") or "/usr/bin/wrk"
PATH = "/prefixes?limit=50"
PREFIXES = 60
POOL = ("127.77.1.0", "127.77.254.254")
POOL_SIZE = 254 * 256 - 1

# wrk: the token on every request; the figures as one JSON line at the end.
LUA = """wrk.headers["Authorization"] = "Bearer %s"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%%d,"duration_us":%%d,"p50_us":%%d,"p99_us":%%d,"max_us":%%d,' ..
    '"non_2xx":%%d,"socket_errors":%%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.status, e.connect + e.read + e.write + e.timeout))
end
"""


# Added to LUA: requests paced to an offered rate (%(rate)s/s in all, over every
# connection of the thread): each request takes the next slot of a schedule kept with the
# monotonic clock (LuaJIT's FFI), so the offered rate does not follow the server's latency.
# A schedule that fell more than 100 ms behind starts again from now (no burst to catch up).
PACED_LUA = """local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
           int clock_gettime(int clock, bench_timespec *now); ]]
local now = ffi.new("bench_timespec")
local interval, slot = 1000 / %(rate)s, nil
delay = function()
  ffi.C.clock_gettime(1, now)
  local t = tonumber(now.tv_sec) * 1000 + tonumber(now.tv_nsec) / 1e6
  if slot == nil or slot < t - 100 then slot = t end
  local wait = slot - t
  slot = slot + interval
  return wait > 0 and wait or 0
end
"""


def seed(app: Appliance) -> str:
    """The first token (loopback bootstrap), then the prefixes and the DHCP subnet with it."""
    minted = app.post("/tokens", {"name": "bench-api", "role": "admin"})
    headers = {"Authorization": f"Bearer {minted['token']}"}
    with httpx.Client(base_url=app.base, headers=headers, timeout=30) as api:
        for n in range(PREFIXES):
            made = api.post("/prefixes", json={"cidr": f"10.{100 + n // 256}.{n % 256}.0/24"})
            if made.status_code != 201:
                raise BenchError(f"POST /prefixes: {made.status_code} {made.text[:200]}")
        prefix = api.post("/prefixes", json={"cidr": DHCP_NET}).json()
        subnet = api.post("/subnets", json={"prefix_id": prefix["id"], "cidr": DHCP_NET,
                                            "gateway": RELAY_IP, "lease_time_seconds": 3600})
        if subnet.status_code != 201:
            raise BenchError(f"POST /subnets: {subnet.status_code} {subnet.text[:200]}")
        pool = api.post(f"/subnets/{subnet.json()['id']}/pools",
                        json={"name": "bench", "start_ip": POOL[0], "end_ip": POOL[1]})
        if pool.status_code != 201:
            raise BenchError(f"POST pools: {pool.status_code} {pool.text[:200]}")
        page = api.get(app.base + PATH)
        if page.status_code != 200 or len(page.json()["items"]) != 50:
            raise BenchError(f"GET {PATH}: {page.status_code} {page.text[:200]}")
    return str(minted["token"])


def start_wrk(url: str, script: Path, clients: int, seconds: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [WRK, "-t1", f"-c{clients}", f"-d{seconds}s", "--timeout", "10s", "-s", str(script),
         url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@dataclass
class CpuMeter:
    """CPU seconds so far of the appliance (all its processes), of its API workers alone and
    of PostgreSQL (the postmaster and its backends, living or ended)."""

    app: Appliance
    postmaster: int

    def read(self) -> dict[str, float]:
        split = self.app.cpu_split()
        return {"appliance": self.app.cpu_seconds(), "workers": split["api_workers"],
                "postgres": tree_cpu_seconds(self.postmaster)}


def wrk_result(proc: subprocess.Popen[str], meter: CpuMeter, before: dict[str, float],
               load: float, steal: MachineMeter) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=300)
    after = meter.read()
    steal_pct = steal.steal_percent()
    lines = [line for line in out.splitlines() if line.startswith("WRK ")]
    if proc.returncode != 0 or not lines:
        raise BenchError(f"wrk exited {proc.returncode}: {out[-400:]}")
    raw = json.loads(lines[-1][4:])
    seconds = raw["duration_us"] / 1e6
    count = max(raw["requests"], 1)

    def per_request(part: str) -> int:
        return round((after[part] - before[part]) / count * 1e6)

    return {"requests": raw["requests"], "req_per_s": round(raw["requests"] / seconds, 1),
            "p50_ms": raw["p50_us"] / 1000, "p99_ms": raw["p99_us"] / 1000,
            "max_ms": raw["max_us"] / 1000,
            "cpu_us_per_request": per_request("appliance"),
            "workers_cpu_us_per_request": per_request("workers"),
            "postgres_cpu_us_per_request": per_request("postgres"),
            "non_2xx": raw["non_2xx"], "socket_errors": raw["socket_errors"],
            # Every answer must be a 2xx: a run with a refusal measured something else.
            "valid": not raw["non_2xx"] and not raw["socket_errors"],
            "load": round(load, 2), "steal_pct": steal_pct}


def connections_by_process(port: int) -> list[int]:
    """How the API's established connections are spread over the processes serving them,
    largest first (the kernel picks an API worker's socket by a hash of the client's address
    and port: 8 connections over 2 workers are not always 4 and 4)."""
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=False).stdout
    counts: dict[str, int] = {}
    for pid in re.findall(r"pid=(\d+)", out):
        counts[pid] = counts.get(pid, 0) + 1
    return sorted(counts.values(), reverse=True)


def settled(port: int, seconds: float = 5.0) -> None:
    """Until the previous run's connections are gone from the API's processes: each worker
    counts its open connections to share new ones evenly (api/balance.py), so a run started
    while the last one's closes are still being handled splits its clients unevenly (6/2
    seen) — an artefact of back-to-back runs, not of clients."""
    deadline = time.monotonic() + seconds
    while connections_by_process(port) and time.monotonic() < deadline:
        time.sleep(0.05)


def api_run(app: Appliance, meter: CpuMeter, script: Path, clients: int,
            seconds: int) -> dict[str, Any]:
    settled(app.api_port)
    load = os.getloadavg()[0]
    before = meter.read()
    steal = MachineMeter().start()
    wrk = start_wrk(app.base + PATH, script, clients, seconds)
    time.sleep(min(1.0, seconds / 2))
    split = connections_by_process(app.api_port)
    return {**wrk_result(wrk, meter, before, load, steal), "split": split}


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None and r.get("valid", True)]
    return round(statistics.median(values), 2) if values else None


def invalid_runs(report: dict[str, Any]) -> list[str]:
    """The runs that had a non-2xx answer or a socket error, named."""
    return [f"{key} run {n}: {r['non_2xx']} non-2xx, {r['socket_errors']} socket errors"
            for key, runs in report.get("api", {}).items()
            for n, r in enumerate(runs, 1) if not r.get("valid", True)]


def _line(label: str, r: dict[str, Any]) -> str:
    split = "/".join(map(str, r.get("split", []))) or "-"
    verdict = "" if r["valid"] else (f"  INVALID: {r['non_2xx']} non-2xx, "
                                     f"{r['socket_errors']} socket errors")
    return (f"  {label:<26} {r['req_per_s']:>9.1f} req/s  p50 {r['p50_ms']:6.2f} ms  "
            f"p99 {r['p99_ms']:7.2f} ms  CPU {r['cpu_us_per_request']:>5} µs/req (workers "
            f"{r['workers_cpu_us_per_request']:>5}, PostgreSQL "
            f"{r['postgres_cpu_us_per_request']:>4})  connections {split:<7} "
            f"load {r['load']:.1f}  steal {_pct(r.get('steal_pct'))}{verdict}")


# The table's figures (medians of the valid runs) and their widths, in column order.
COLUMNS = (("req_per_s", 9), ("p50_ms", 7), ("p99_ms", 7), ("cpu_us_per_request", 10),
           ("workers_cpu_us_per_request", 8), ("postgres_cpu_us_per_request", 8))


def _cell(value: float | None) -> str:
    return "-" if value is None else str(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def bench(args: argparse.Namespace, pg: Pg, work: Path) -> dict[str, Any]:
    sock = relay_socket()
    sock.settimeout(0.005)  # the paced load starts exchanges between reads
    dhcp_port = free_port()
    app = Appliance(work, pg.fresh("api"), "api", {
        "dhcp": {"enabled": True, "listen": [f"127.0.0.1:{dhcp_port}"],
                 "reply_port": sock.getsockname()[1], "server_id": "127.0.0.1",
                 "trusted_relays": [DHCP_NET]}}, {})
    server = ("127.0.0.1", dhcp_port)
    report: dict[str, Any] = {"path": PATH, "duration_s": args.duration, "runs": args.runs,
                              "api": {}, "dhcp": {}}
    script = work / "token.lua"
    meter = CpuMeter(app, pg.server.process.pid)
    try:
        with running(app):
            token = seed(app)
            script.write_text(LUA % token)
            wait_dhcp(sock, server)
            api_run(app, meter, script, 8, 2)  # warm: connections, prepared statements
            print(f"GET /api/v1{PATH}, keep-alive clients, {args.duration} s per run "
                  f"(median of {args.runs}):", flush=True)
            for clients in (1, 8):
                runs = [api_run(app, meter, script, clients, args.duration) for _ in range(args.runs)]
                report["api"][f"c{clients}"] = runs
                for n, r in enumerate(runs, 1):
                    print(_line(f"{clients} client(s), run {n}", r), flush=True)
            paced = work / "paced.lua"
            paced.write_text(LUA % token + PACED_LUA % {"rate": args.paced_rate})
            runs = [api_run(app, meter, paced, 8, args.duration) for _ in range(args.runs)]
            report["api"]["c8_paced"] = runs
            report["paced_rate"] = args.paced_rate
            for n, r in enumerate(runs, 1):
                print(_line(f"8 clients, {args.paced_rate}/s, run {n}", r), flush=True)
            client = 1
            storm = dora_load(sock, server, args.ceiling_clients, client, 256, False)
            client += args.ceiling_clients
            ceiling = storm["dora_per_s"] or 0.0
            half = ceiling / 2
            report["dhcp"]["ceiling"] = storm
            print(f"DHCP over the loopback relay: ceiling {ceiling} DORA/s "
                  f"({storm['acks']} acks, abandoned {storm['abandoned']}); offering {half:.0f}",
                  flush=True)
            # Every DORA takes a new address: the runs must fit in the pool that is left.
            left = POOL_SIZE - args.ceiling_clients
            seconds = max(1, min(args.duration, int(left / (2 * args.runs * max(half, 1.0)))))
            count = int(half * seconds)
            report["dhcp"]["seconds"] = seconds
            print(f"  (DHCP at half its ceiling for {seconds} s per run: {count:,} new clients "
                  "each, within the pool)", flush=True)
            alone, with_api, api_with_dhcp = [], [], []
            for _ in range(args.runs):
                alone.append(dora_load(sock, server, count, client, 256, False,
                                       rate=half, seconds=seconds + 10))
                client += count
                load = os.getloadavg()[0]
                before = meter.read()
                steal = MachineMeter().start()
                wrk = start_wrk(app.base + PATH, script, 8, seconds)
                with_api.append(dora_load(sock, server, count, client, 256, False,
                                          rate=half, seconds=seconds + 10))
                client += count
                api_with_dhcp.append(wrk_result(wrk, meter, before, load, steal))
                print(f"  DHCP alone {alone[-1]['dora_per_s']} DORA/s, with the API "
                      f"{with_api[-1]['dora_per_s']} DORA/s (abandoned "
                      f"{alone[-1]['abandoned']}/{with_api[-1]['abandoned']})", flush=True)
                print(_line("8 clients, DHCP running", api_with_dhcp[-1]), flush=True)
            report["dhcp"].update(offered=round(half, 1), alone=alone, with_api=with_api)
            report["api"]["c8_with_dhcp"] = api_with_dhcp
    finally:
        sock.close()
    return report


def table(report: dict[str, Any]) -> str:
    api, dhcp = report["api"], report["dhcp"]
    rows = [f"API: GET /api/v1{report['path']} (plain HTTP/1.1 on loopback, bearer token), "
            f"median of {report['runs']} runs of {report['duration_s']} s",
            "  CPU µs/req: all of the appliance's processes, its API workers alone, PostgreSQL "
            "(with DHCP running, PostgreSQL's figure holds the DHCP commits too)",
            f"  {'clients':<22} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/req':>10} "
            f"{'workers':>8} {'postgres':>8} {'steal%':>6}"]
    paced = f"8, offered {report.get('paced_rate', '-')}/s"
    for key, label in (("c1", "1"), ("c8", "8"), ("c8_paced", paced),
                       ("c8_with_dhcp", "8, DHCP at half")):
        runs = api.get(key) or []
        if runs:
            cells = [f"{_cell(median_of(runs, key)):>{width}}" for key, width in COLUMNS]
            rows.append(f"  {label:<22} " + " ".join(cells) +
                        f" {_pct(median_of(runs, 'steal_pct')):>6}")
    c1, c8 = median_of(api.get("c1", []), "req_per_s"), median_of(api.get("c8", []), "req_per_s")
    both = median_of(api.get("c8_with_dhcp", []), "req_per_s")
    rows.append("  steal%: the host's share of this VM's CPU time during the runs "
                "(bench/machine.py); high steal marks a slow phase of the machine (slow "
                "phases without steal happen too: compare CPU µs/req)")
    rows.append(f"  ratio 8 clients / 1 client: {_ratio(c8, c1)}; "
                f"8 clients with DHCP / alone: {_ratio(both, c8)}")
    invalid = invalid_runs(report)
    if invalid:
        rows.append(f"  INVALID: {len(invalid)} run(s) had answers other than 2xx, left out "
                    "of the medians: " + "; ".join(invalid))
    if dhcp.get("alone"):
        alone = median_of(dhcp["alone"], "dora_per_s")
        with_api = median_of(dhcp["with_api"], "dora_per_s")
        rows.append(f"DHCP: ceiling {dhcp['ceiling']['dora_per_s']} DORA/s, offered "
                    f"{dhcp['offered']}: alone {alone}, with 8 API clients {with_api} DORA/s "
                    f"(ratio {_ratio(with_api, alone)})")
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--paced-rate", type=int, default=1_000,
                        help="requests/s offered by the 8 paced clients (wrk + a schedule)")
    parser.add_argument("--ceiling-clients", type=int, default=5_000,
                        help="DORAs of the storm that finds DHCP's ceiling")
    args = parser.parse_args(argv)
    if not 1 <= args.duration <= 60 or not 1 <= args.runs <= 9:
        parser.error("duration 1..60 s, runs 1..9")
    if not 10 <= args.paced_rate <= 20_000:
        parser.error("paced-rate 10..20000")
    if not 100 <= args.ceiling_clients <= 20_000:
        parser.error("ceiling-clients 100..20000")
    return args


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # the finally blocks stop the appliance and PostgreSQL


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not Path(WRK).exists():
        raise BenchError("wrk is missing (Debian package wrk)")
    signal.signal(signal.SIGTERM, _terminate)
    out = RESULTS / f"api-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="ipamd-bench-api-"))
    os.chmod(work, 0o755)
    print("starting a private PostgreSQL cluster and migrating ...", flush=True)
    server = postgres.start()
    report: dict[str, Any] = {}
    try:
        report = bench(args, Pg(server, tag="api"), work)
    finally:
        server.stop()
        for log in work.glob("*.ipamd.log"):
            shutil.copy(log, out / log.name)
        shutil.rmtree(work, ignore_errors=True)
    text = table(report)
    (out / "table.txt").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\n" + text)
    print(f"written to {out.relative_to(ROOT)}")
    return 1 if invalid_runs(report) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        sys.exit(1)
