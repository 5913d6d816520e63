#!/usr/bin/env python3
"""`make bench` for DNS: the embedded authoritative server against BIND 9 with dnsperf, DDNS
update throughput per adapter against a real BIND and a real PowerDNS, and what DDNS costs
the DHCP server.

  serve   One zone set, served by both: a forward zone with --records A records and the
          reverse zone with their PTRs, made through ipamd (server, zones, subnet and a static
          record through its API; the leases behind the A/PTR records in bulk SQL). The
          appliance (`python -m ipamd run`, [dns] on) answers them; the zones are then taken
          from it by AXFR and written as zone files for `named`, so both serve the SAME data
          (a sample of queries is checked to get the same answers from both). dnsperf sends
          the same query file (existing A, existing PTR, NXDOMAIN names) to each, on
          loopback, for --duration seconds at each offered rate of --rates and unthrottled:
          QPS, lost queries, average (and p99 at the offered rates) latency, ipamd / BIND.
  ddns    For each adapter (bind_tsig → BIND 9 with a TSIG key, powerdns_http → PowerDNS with
          its HTTP API): --updates lease grants committed in one transaction through the
          lease store's SQL; the fan-out trigger makes one `kind=dns` outbox row each, and
          the appliance's outbox delivers them. Updates/s from the commit to the last row
          recorded delivered; failures and retries counted (each must be 0).
  dhcp    DORA/s over a loopback relay (a relay socket on 127.77.0.1 and --dora-clients
          clients, --window exchanges in flight: enough to keep the server at its ceiling,
          each client with its own host name) with DDNS off, and on for each adapter (the
          DNS delivery process running meanwhile): the ratio on / off, and how long after
          the last Ack the last DNS update was delivered.

Everything is started here and stopped on exit: a private PostgreSQL (tests/support/
postgres), the appliance as its own process per run, named and pdns_server (tests/support/
bind.py, tests/support/pdns.py). Only loopback is used. The table is printed and written,
with the raw figures, to bench/results/dns-<time>/.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.zone
from tests.support import postgres
from tests.support.bind import DIG, KEY_NAME, NAMED, Bind, free_port
from tests.support.pdns import PDNS, SCHEMA, PowerDns

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
from ipamd.config import parse as parse_config
from ipamd.core.lease_events import JOURNAL_CHANNEL, event_ctes

ROOT = Path(__file__).resolve().parents[1]

RESULTS = Path(__file__).resolve().parent / "results"
DNSPERF = shutil.which("dnsperf") or "/usr/bin/dnsperf"

# serve: the zones the embedded server and BIND both answer for
ZONE, REVERSE = "bench.example", "77.10.in-addr.arpa"
LEASE_NET = "10.77.0.0/16"
NS_NAME = f"ns1.{ZONE}"
# ddns / dhcp: the relay's subnet (all of 127/8 is loopback)
DDNS_ZONE, DDNS_REVERSE = "ddns.example", "77.127.in-addr.arpa"
POOL = ("127.77.100.1", "127.77.199.254")
TSIG_ENV, PDNS_ENV = "IPAMD_BENCH_TSIG", "IPAMD_BENCH_PDNS_KEY"
TOOLS = {"dnsperf": DNSPERF, "named": NAMED, "dig": DIG, "pdns_server": PDNS}


# --- serve: the zone data -----------------------------------------------------------------

def _lease_ip(n: int) -> str:
    """The n-th address of the served leases: 10.77.1.0 + n."""
    value = (10 << 24 | 77 << 16 | 1 << 8) + n
    return ".".join(str(value >> s & 255) for s in (24, 16, 8, 0))


def _ptr_name(ip: str) -> str:
    return ".".join(reversed(ip.split("."))) + ".in-addr.arpa"


async def _load_leases(conn: Any, subnet_id: str, count: int) -> int:
    """`count` active leases with fqdn host-<n>.<zone> (A and PTR at the embedded server)."""
    async with conn.transaction():
        made = await conn.fetchval(
            """WITH made AS (
                 INSERT INTO leases (subnet_id, ip, state, client_key, mac, hostname, fqdn,
                                     expires_at)
                 SELECT $1::uuid, '10.77.1.0'::inet + n, 'active', int4send(n), NULL,
                        'host-' || n, 'host-' || n || '.' || $3, now() + interval '1 day'
                 FROM generate_series(0, $2 - 1) n RETURNING 1)
               SELECT count(*) FROM made""", subnet_id, count, ZONE)
        await conn.execute("SELECT pg_notify('ipamd_dns', 'bench')")
    return made


def make_serve_data(app: Appliance, pg_dsn: str, records: int) -> None:
    server = app.post("/dns-servers", {"name": "self", "adapter": "embedded"})
    zone = app.post("/dns-zones", {"name": ZONE, "server_id": server["id"], "default_ttl": 300})
    app.post("/dns-zones", {"name": REVERSE, "server_id": server["id"], "default_ttl": 300})
    # The NS name lives in the zone: BIND loads a zone only with its address (glue).
    app.post(f"/dns-zones/{zone['id']}/records", {"name": "ns1", "type": "A",
                                                  "value": "127.0.0.1"})
    prefix = app.post("/prefixes", {"cidr": LEASE_NET, "description": "bench dns"})
    subnet = app.post("/subnets", {
        "prefix_id": prefix["id"], "cidr": LEASE_NET, "gateway": "10.77.0.1",
        "ddns_adapter": "embedded", "ddns_server_id": server["id"], "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE, "ddns_ttl": 300})
    Pg.run(pg_dsn, _load_leases, subnet["id"], records)


def wait_answer(port: int, name: str, rdtype: str, seconds: float = 60) -> None:
    query = dns.message.make_query(name, rdtype)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(dns.exception.DNSException, OSError):
            reply = dns.query.udp(query, "127.0.0.1", port=port, timeout=1)
            if reply.rcode() == dns.rcode.NOERROR and reply.answer:
                return
        time.sleep(0.2)
    raise BenchError(f"no answer for {name} {rdtype} on port {port} within {seconds:.0f} s")


def axfr_to_file(port: int, zone: str, path: Path) -> int:
    """The zone as the embedded server transfers it, as a master file; its node count."""
    data = dns.zone.from_xfr(dns.query.xfr("127.0.0.1", zone, port=port, timeout=30, relativize=False,
                                           lifetime=120), relativize=False)
    data.to_file(str(path), relativize=False)
    return len(data.nodes)


def query_file(path: Path, records: int, count: int, seed: int = 13) -> dict[str, int]:
    """60% existing A, 25% existing PTR, 15% NXDOMAIN, shuffled with a fixed seed."""
    rng = random.Random(seed)
    lines, mix = [], {"A": 0, "PTR": 0, "NXDOMAIN": 0}
    for _ in range(count):
        pick, n = rng.random(), rng.randrange(records)
        if pick < 0.60:
            lines.append(f"host-{n}.{ZONE} A")
            mix["A"] += 1
        elif pick < 0.85:
            lines.append(f"{_ptr_name(_lease_ip(n))} PTR")
            mix["PTR"] += 1
        else:
            lines.append(f"nx-{n}.{ZONE} A")
            mix["NXDOMAIN"] += 1
    path.write_text("\n".join(lines) + "\n")
    return mix


def same_answers(port_a: int, port_b: int, qfile: Path, sample: int = 300) -> int:
    """Asks both servers `sample` queries of the file; raises on the first difference in
    rcode or answer section. Returns how many were compared."""
    lines = qfile.read_text().splitlines()[:sample]
    for line in lines:
        name, rdtype = line.split()
        answers = []
        for port in (port_a, port_b):
            reply = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1",
                                  port=port, timeout=2)
            answers.append((dns.rcode.to_text(reply.rcode()),
                            sorted(r.to_text() for r in reply.answer)))
        if answers[0] != answers[1]:
            raise BenchError(f"{line}: ipamd {answers[0]} but BIND {answers[1]}")
    return len(lines)


# --- dnsperf ------------------------------------------------------------------------------

def _num(pattern: str, text: str) -> float | None:
    found = re.search(pattern, text, re.MULTILINE)
    return float(found[1]) if found else None


def dnsperf(port: int, qfile: Path, duration: int, rate: int | None, out: Path) -> dict[str, Any]:
    """One dnsperf run; at an offered rate it runs verbose (one line per answer) for p99."""
    argv = [DNSPERF, "-s", "127.0.0.1", "-p", str(port), "-d", str(qfile), "-l", str(duration),
            "-T", "1", "-c", "1", "-q", "100", "-t", "2"]
    if rate:
        argv += ["-Q", str(rate), "-v"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60,
                          check=False)
    out.write_text(" ".join(argv) + "\n" + (done.stdout if not rate else
                                            _strip_verbose(done.stdout)) + done.stderr)
    if done.returncode != 0:
        raise BenchError(f"dnsperf exited {done.returncode}: {done.stderr.strip()[-300:]}")
    text = done.stdout
    result: dict[str, Any] = {
        "offered": rate, "sent": int(_num(r"Queries sent:\s+(\d+)", text) or 0),
        "completed": int(_num(r"Queries completed:\s+(\d+)", text) or 0),
        "lost": int(_num(r"Queries lost:\s+(\d+)", text) or 0),
        "qps": _num(r"Queries per second:\s+([\d.]+)", text),
        "avg_ms": _ms(_num(r"Average Latency \(s\):\s+([\d.]+)", text)),
        "max_ms": _ms(_num(r"Average Latency \(s\):.*max ([\d.]+)\)", text)),
        "codes": dict(re.findall(r"(NOERROR|NXDOMAIN|REFUSED|SERVFAIL|FORMERR) (\d+)", text)),
        "p99_ms": None,
    }
    if rate:
        latencies = sorted(float(line.split()[-1]) for line in text.splitlines()
                           if line.startswith(">") and _is_float(line.split()[-1]))
        if latencies:
            result["p99_ms"] = _ms(latencies[min(len(latencies) - 1,
                                                 int(0.99 * len(latencies)))])
    return result


def _strip_verbose(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(">"))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def bench_serve(args: argparse.Namespace, pg: Pg, work: Path, out: Path) -> dict[str, Any]:
    dsn = pg.fresh("serve")
    dns_port, xfr_port = free_port(), free_port()
    app = Appliance(work, dsn, "serve", {"dns": {
        "enabled": True, "listen": [f"127.0.0.1:{dns_port}"], "ns_name": NS_NAME,
        "hostmaster": f"hostmaster.{ZONE}", "refresh_seconds": 3600.0,
        # 127.0.0.1 listed as a secondary: AXFR is allowed from there (the zone files for BIND)
        "secondaries": [f"127.0.0.1:{xfr_port}"]}}, {})
    bind = Bind(work / "bind-serve", [ZONE, REVERSE])
    qfile = work / "queries.txt"
    mix = query_file(qfile, args.records, args.queries)
    runs: list[dict[str, Any]] = []
    with running(app):
        make_serve_data(app, dsn, args.records)
        wait_answer(dns_port, f"host-{args.records - 1}.{ZONE}", "A")
        bind.root.mkdir(parents=True)
        nodes = {z: axfr_to_file(dns_port, z, bind.root / f"{z}.zone") for z in (ZONE, REVERSE)}
        try:
            bind.start()
            compared = same_answers(dns_port, bind.port, qfile)
            print(f"  zones: {nodes[ZONE]:,} names in {ZONE}, {nodes[REVERSE]:,} in {REVERSE}; "
                  f"{compared} sample queries answered alike by both", flush=True)
            # BIND first, so the peer's figures exist before ours, rate by rate.
            for rate in [*args.rate_list, None]:
                for server, port in (("BIND", bind.port), ("ipamd", dns_port)):
                    label = f"{server}-{rate or 'max'}"
                    cpu = app.cpu_seconds() if server == "ipamd" else None
                    load = os.getloadavg()[0]
                    result = dnsperf(port, qfile, args.duration, rate,
                                     out / f"dnsperf-{label}.txt")
                    result |= {"server": server, "load": round(load, 2)}
                    if cpu is not None and result["completed"]:
                        result["cpu_us_per_query"] = round(
                            (app.cpu_seconds() - cpu) / result["completed"] * 1e6, 1)
                    runs.append(result)
                    print(f"  {server:<6} {('-Q ' + str(rate)) if rate else 'unthrottled':>12}: "
                          f"{result['qps'] or 0:>9,.0f} qps  lost {result['lost']:>6}  "
                          f"avg {result['avg_ms']} ms  p99 {result['p99_ms']} ms  "
                          f"load {load:.1f}", flush=True)
        finally:
            bind.stop()
    return {"records": args.records, "queries": args.queries, "mix": mix,
            "duration_s": args.duration, "names": nodes, "runs": runs}


# --- ddns: updates per second per adapter ---------------------------------------------------

async def _grant_burst(conn: Any, subnet_id: str, count: int) -> int:
    """`count` grants as the lease store writes them (lease rows and their journal rows, from
    which the appliance's deriver writes lease_events and events rows — the fan-out trigger
    then stages the DNS changes), one transaction; the NOTIFY wakes the deriver, as the
    API's force-release does."""
    sql = f"""
WITH src AS (
    INSERT INTO leases (subnet_id, ip, state, client_key, mac, hostname, fqdn, giaddr,
                        expires_at)
    SELECT $1::uuid, '127.77.1.0'::inet + n, 'active', int4send(n),
           ('02:01:00:' || lpad(to_hex(n / 65536), 2, '0') || ':'
            || lpad(to_hex(n / 256 % 256), 2, '0') || ':' || lpad(to_hex(n % 256), 2, '0'))::macaddr,
           'ddns-' || n, 'ddns-' || n || '.' || $3, '{RELAY_IP}', now() + interval '1 hour'
    FROM generate_series(1, $2) n
    RETURNING *, 'granted'::text AS event
){event_ctes('src', 'event')}
SELECT count(*) FROM src"""
    async with conn.transaction():
        made: int = await conn.fetchval(sql, subnet_id, count, DDNS_ZONE)
        await conn.execute("SELECT pg_notify($1, '')", JOURNAL_CHANNEL)
        return made


async def _dns_rows(conn: Any) -> dict[str, Any]:
    row = await conn.fetchrow(
        """SELECT count(*) AS total,
                  count(*) FILTER (WHERE state = 'delivered') AS delivered,
                  count(*) FILTER (WHERE state = 'failed') AS failed,
                  count(*) FILTER (WHERE attempts > 1) AS retried,
                  extract(epoch FROM max(delivered_at))::float8 AS last_delivered,
                  (array_agg(last_error) FILTER (WHERE last_error IS NOT NULL))[1] AS an_error,
                  (SELECT coalesce(sum(cardinality(event_ids)), 0) FROM dns_staged) AS staged
           FROM outbox WHERE kind = 'dns'""")
    return dict(row)


def wait_drained(dsn: str, total: int, seconds: float) -> dict[str, Any]:
    """Polls (4 times a second, from this process) until `total` dns rows are settled."""
    began = time.monotonic()
    while True:
        rows = Pg.run(dsn, _dns_rows)
        if rows["delivered"] + rows["failed"] >= total or time.monotonic() > began + seconds:
            return rows
        # Lease changes wait staged (one entry per DHCP commit batch) until the delivery
        # process makes their rows; a change neither staged nor a row is lost.
        if rows["total"] + rows["staged"] < total and time.monotonic() > began + 15:
            raise BenchError(f"only {rows['total']} kind=dns rows (and {rows['staged']} "
                             f"staged changes) of {total} were made")
        time.sleep(0.25)


def ddns_server(app: Appliance, adapter: str, bind: Bind, pdns: PowerDns) -> str:
    if adapter == "bind_tsig":
        body = {"name": "bind", "adapter": "bind_tsig", "address": "127.0.0.1",
                "port": bind.port, "tsig_key_name": KEY_NAME, "secret_ref": f"env:{TSIG_ENV}"}
    else:
        body = {"name": "pdns", "adapter": "powerdns_http", "api_url": pdns.api,
                "secret_ref": f"env:{PDNS_ENV}"}
    server = app.post("/dns-servers", body)
    for name in (DDNS_ZONE, DDNS_REVERSE):
        app.post("/dns-zones", {"name": name, "server_id": server["id"]})
    return server["id"]


def ddns_subnet(app: Appliance, server_id: str | None, adapter: str) -> str:
    prefix = app.post("/prefixes", {"cidr": DHCP_NET})
    fields: dict[str, Any] = {"prefix_id": prefix["id"], "cidr": DHCP_NET, "gateway": RELAY_IP,
                              "lease_time_seconds": 3600}
    if server_id is not None:
        fields |= {"ddns_adapter": adapter, "ddns_server_id": server_id, "ddns_zone": DDNS_ZONE,
                   "ddns_reverse_zone": DDNS_REVERSE, "ddns_ttl": 120}
    subnet = app.post("/subnets", fields)
    app.post(f"/subnets/{subnet['id']}/pools", {"name": "bench", "start_ip": POOL[0],
                                                "end_ip": POOL[1]})
    return subnet["id"]


def peer_pid(adapter: str, bind: Bind, pdns: PowerDns) -> int | None:
    proc = {"bind_tsig": bind.proc, "powerdns_http": pdns.proc}.get(adapter)
    return proc.pid if proc is not None else None


def storm_cpu(app: Appliance, pg: Pg, peer: int | None) -> dict[str, float]:
    """CPU seconds so far of each part a storm runs on: the appliance's DHCP process, its
    DNS delivery child and API workers, PostgreSQL, the DNS server, this load generator."""
    split = app.cpu_split()
    own = os.times()
    return {"dhcp": split["appliance"], "dns_child": split["dns_delivery"],
            "api_workers": split["api_workers"],
            "postgres": tree_cpu_seconds(pg.server.process.pid),
            "dns_server": tree_cpu_seconds(peer) if peer else 0.0,
            "load_generator": own.user + own.system}


def bench_ddns(args: argparse.Namespace, pg: Pg, work: Path) -> dict[str, Any]:
    bind = Bind(work / "bind-ddns", [DDNS_ZONE, DDNS_REVERSE])
    pdns = PowerDns(work / "pdns")
    sock = relay_socket()
    report: dict[str, Any] = {"updates": args.updates, "dora_clients": args.dora_clients,
                              "window": args.window, "adapters": {}, "rounds": []}
    try:
        bind.start()
        pdns.start()
        for zone in (DDNS_ZONE, DDNS_REVERSE):
            pdns.create_zone(zone)
        # PowerDNS on gsqlite3 answers concurrent PATCHes with HTTP 500 "database is locked":
        # its updates go through --pdns-workers outbox workers (one: serialised).
        report["workers"] = {"none": args.workers, "bind_tsig": args.workers,
                             "powerdns_http": args.pdns_workers}
        run = DdnsRun(args, pg, work, bind, pdns, sock, report)
        # Off and on storms alternate, round after round, so a drift of the machine (a
        # checkpoint, another process) falls on both alike; the medians are compared.
        for number in range(args.rounds):
            storms: dict[str, Any] = {}
            for adapter in ["none", *args.adapter_list]:
                storms[adapter] = run.storm(adapter, first_round=number == 0)
            report["rounds"].append(storms)
        report["dhcp"] = {
            adapter: {"dora_per_s": statistics.median(r[adapter]["dora_per_s"]
                                                      for r in report["rounds"])}
            for adapter in ["none", *args.adapter_list]}
    finally:
        sock.close()
        bind.stop()
        pdns.stop()
    return report


class DdnsRun:
    """One storm on a fresh database and appliance, with DDNS off (`none`) or to an adapter."""

    def __init__(self, args: argparse.Namespace, pg: Pg, work: Path, bind: Bind,
                 pdns: PowerDns, sock: Any, report: dict[str, Any]) -> None:
        self.args, self.pg, self.work, self.bind, self.pdns = args, pg, work, bind, pdns
        self.sock, self.report = sock, report
        self.next_client = 1
        self.storms = 0
        self.env = {TSIG_ENV: bind.secret, PDNS_ENV: pdns.key}

    def storm(self, adapter: str, first_round: bool) -> dict[str, Any]:
        args, pg = self.args, self.pg
        dsn = pg.fresh(adapter)
        dhcp_port = free_port()
        self.storms += 1
        app = Appliance(self.work, dsn, f"ddns-{self.storms}-{adapter}", {
            "dhcp": {"enabled": True, "listen": [f"127.0.0.1:{dhcp_port}"],
                     "reply_port": self.sock.getsockname()[1], "server_id": "127.0.0.1",
                     "trusted_relays": [DHCP_NET]},
            "outbox": {"enabled": True, "workers": self.report["workers"][adapter],
                       "dns_delivery_nice": args.dns_nice,
                       "dns_storm_updates_per_second": args.dns_storm_rate}}, self.env)
        server = ("127.0.0.1", dhcp_port)
        peer = peer_pid(adapter, self.bind, self.pdns)
        if adapter == "powerdns_http" and not first_round:
            # PowerDNS (gsqlite3) spends CPU per API change in proportion to the zone's size
            # (the earlier rounds' 20,000+ names): every round starts from empty zones, so
            # the peer's own work does not grow round by round on the shared two cores.
            for zone in (DDNS_ZONE, DDNS_REVERSE):
                self.pdns.delete_zone(zone)
                self.pdns.create_zone(zone)
        with running(app):
            server_id = (None if adapter == "none"
                         else ddns_server(app, adapter, self.bind, self.pdns))
            subnet_id = ddns_subnet(app, server_id, adapter)
            wait_dhcp(self.sock, server)
            if adapter != "none":
                # Every storm with DDNS on starts alike: the delivery process running, after
                # a burst of updates (measured in the first round).
                self.update_burst(app, dsn, subnet_id, adapter, measure=first_round)
            # What the burst set going (BIND's journal, autovacuum of the outbox) settles
            # first; "off" waits as long.
            time.sleep(args.settle)
            prior = Pg.run(dsn, _dns_rows)
            load = os.getloadavg()[0]
            cpu_before = storm_cpu(app, pg, peer)
            dora = dora_load(self.sock, server, args.dora_clients, self.next_client,
                             args.window, hostnames=True)
            self.next_client += args.dora_clients
            dora["load"] = round(load, 2)
            dora["cpu_s"] = {name: round(spent - cpu_before[name], 2)
                             for name, spent in storm_cpu(app, pg, peer).items()}
            if adapter != "none":
                ended = time.time()
                # How much DNS work ran during the storm (the rest waited, as rows).
                during = Pg.run(dsn, _dns_rows)
                dora["ddns_delivered_in_storm"] = during["delivered"] - prior["delivered"]
                if first_round:
                    # The storm's names catch up after it (PowerDNS on gsqlite3 takes ~100
                    # updates/s): wait long enough, and say how many made it. Later rounds
                    # measure the storm only.
                    rows = wait_drained(dsn, prior["total"] + dora["acks"], 600)
                    dora["ddns_rows"] = rows["total"] - prior["total"]
                    dora["ddns_delivered"] = rows["delivered"] - prior["delivered"]
                    dora["ddns_failed"] = rows["failed"]
                    dora["ddns_done_after_last_ack_s"] = round(
                        max(0.0, (rows["last_delivered"] or ended) - ended), 2)
        print(f"  DORA, DDNS {adapter:<14} {dora['dora_per_s']} DORA/s "
              f"({dora['acks']:,} acks in {dora['seconds']} s, abandoned "
              f"{dora['abandoned']}, load {load:.1f}); CPU s in the storm: "
              + ", ".join(f"{k} {v}" for k, v in dora["cpu_s"].items()), flush=True)
        return dora

    def update_burst(self, app: Appliance, dsn: str, subnet_id: str, adapter: str,
                     measure: bool) -> None:
        updates = self.args.updates
        cpu = app.cpu_seconds()
        started = time.time()
        Pg.run(dsn, _grant_burst, subnet_id, updates)
        committed = time.time()
        rows = wait_drained(dsn, updates, 120)
        if not measure:
            return
        cpu = app.cpu_seconds() - cpu
        last = rows["last_delivered"] or committed
        result = {
            "rows": rows["total"], "delivered": rows["delivered"],
            "failed": rows["failed"], "retried": rows["retried"],
            "commit_s": round(committed - started, 3),
            "drain_s": round(last - committed, 3),
            "updates_per_s": round(rows["delivered"] / (last - committed), 1)
            if last > committed else None,
            "appliance_cpu_us_per_update": round(cpu / updates * 1e6),
            "an_error": rows["an_error"],
        }
        check = self.bind if adapter == "bind_tsig" else self.pdns
        result["spot_check"] = check.dig(f"ddns-{updates // 2}.{DDNS_ZONE}", "A")
        self.report["adapters"][adapter] = result
        print(f"  {adapter:<14} {updates:,} grants → {rows['delivered']:,} "
              f"delivered in {result['drain_s']} s = {result['updates_per_s']} "
              f"updates/s, failed {rows['failed']}, retried {rows['retried']}, "
              f"appliance CPU {result['appliance_cpu_us_per_update']} µs/update", flush=True)


# --- profile: where a query's CPU goes, no sockets -----------------------------------------

def profile_query_path(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The embedded server's answer function on the serve part's data and query file, in this
    process: µs per query, and the top functions under cProfile (read the shares: cProfile
    slows call-heavy code)."""
    import cProfile
    import pstats

    from ipamd.dns import zonedata

    rows = {"zones": [{"name": ZONE, "default_ttl": 300}, {"name": REVERSE, "default_ttl": 300}],
            "records": [{"zone": ZONE, "name": NS_NAME, "type": "A", "value": "127.0.0.1",
                         "ttl": 300}],
            "leases": [{"fqdn": f"host-{n}.{ZONE}", "ip": _lease_ip(n), "zone": ZONE,
                        "reverse_zone": REVERSE, "ttl": 300} for n in range(args.records)]}
    began = time.perf_counter()
    zones = zonedata.build(rows, NS_NAME, f"hostmaster.{ZONE}")
    build_s = time.perf_counter() - began
    qfile = work / "profile-queries.txt"
    query_file(qfile, args.records, args.queries)
    wires = []
    for number, line in enumerate(qfile.read_text().splitlines()):
        name, rdtype = line.split()
        query = dns.message.make_query(name, rdtype)
        query.id = number % 65536
        wires.append(query.to_wire())
    report: dict[str, Any] = {"records": args.records, "queries": len(wires),
                              "build_s": round(build_s, 3)}
    answer = zonedata.answer_udp
    began = time.perf_counter()
    for wire in wires:
        answer(zones, wire)
    report["uncached_us_per_query"] = round((time.perf_counter() - began) / len(wires) * 1e6, 1)
    cache_type = getattr(zonedata, "AnswerCache", None)
    if cache_type is not None:
        cache = cache_type()
        began = time.perf_counter()
        for wire in wires:
            cache.answer(zones, wire)
        report["cache_us_per_query"] = round((time.perf_counter() - began) / len(wires) * 1e6, 1)
    profile = cProfile.Profile()
    profile.enable()
    for wire in wires:
        answer(zones, wire)
    profile.disable()
    stats = pstats.Stats(profile)
    total = sum(v[2] for v in stats.stats.values()) or 1.0  # type: ignore[attr-defined]
    top = sorted(stats.stats.items(), key=lambda i: -i[1][2])[:args.profile_top]  # type: ignore[attr-defined]
    report["top_tottime"] = [
        {"function": f"{Path(f).name}:{line}({name})", "calls": v[1],
         "share_percent": round(100 * v[2] / total, 1)} for (f, line, name), v in top]
    print(f"  zonedata.build: {report['build_s']} s; answer_udp {report['uncached_us_per_query']}"
          f" µs/query" + (f", through the cache {report['cache_us_per_query']} µs/query"
                           if "cache_us_per_query" in report else ""), flush=True)
    for row in report["top_tottime"]:
        print(f"    {row['share_percent']:>5} %  {row['calls']:>9,}  {row['function']}")
    return report


# --- the table ----------------------------------------------------------------------------

def _f(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def table(report: dict[str, Any]) -> str:
    rows: list[str] = []
    serve = report.get("serve")
    if serve:
        rows.append(f"serve: {serve['records']:,} A + {serve['records']:,} PTR, query mix "
                    f"{serve['mix']}, {serve['duration_s']} s per run, dnsperf -T 1 -c 1 -q 100")
        rows.append(f"  {'offered':>11}  {'server':<6} {'QPS':>9} {'lost':>7} {'avg ms':>8} "
                    f"{'p99 ms':>8} {'max ms':>8} {'CPU µs/q':>9} {'load':>5}  {'ipamd/BIND':>10}")
        by = {(r["server"], r["offered"]): r for r in serve["runs"]}
        for rate in [*sorted({r["offered"] or 0 for r in serve["runs"]} - {0}), None]:
            for server in ("BIND", "ipamd"):
                r = by.get((server, rate))
                if r is None:
                    continue
                versus = ""
                if server == "ipamd":
                    peer = by.get(("BIND", rate))
                    versus = _ratio(r["qps"], peer["qps"] if peer else None)
                rows.append(
                    f"  {('-Q ' + format(rate, ',')) if rate else 'unthrottled':>11}  "
                    f"{server:<6} {_f(r['qps']):>9} {r['lost']:>7} {_f(r['avg_ms'], 3):>8} "
                    f"{_f(r['p99_ms'], 3):>8} {_f(r['max_ms'], 1):>8} "
                    f"{_f(r.get('cpu_us_per_query'), 1):>9} {r['load']:>5.1f}  {versus:>10}")
    ddns = report.get("ddns")
    if ddns:
        rows.append(f"\nddns: {ddns['updates']:,} grants in one transaction → kind=dns rows → "
                    "delivered (A + DHCID, PTR each)")
        rows.append(f"  {'adapter wN':<14} {'updates/s':>10} {'drain s':>8} {'failed':>7} "
                    f"{'retried':>8} {'CPU µs/upd':>11}  spot check")
        for adapter, r in ddns["adapters"].items():
            rows.append(f"  {adapter + ' w' + str(ddns['workers'][adapter]):<14} "
                        f"{_f(r['updates_per_s'], 1):>10} {r['drain_s']:>8} "
                        f"{r['failed']:>7} {r['retried']:>8} "
                        f"{r['appliance_cpu_us_per_update']:>11}  {r['spot_check']}")
        rows.append(f"\ndhcp: {ddns['dora_clients']:,} DORAs over a loopback relay, "
                    f"{ddns['window']} in flight, each client with its own host name; off and "
                    f"on alternate, {len(ddns['rounds'])} round(s)")
        rows.append(f"  {'round':<5} {'DDNS':<14} {'DORA/s':>9} {'acks':>7} {'abandoned':>9} "
                    f"{'vs off':>7} {'in storm':>8} {'DDNS done +s':>12} {'delivered':>9} "
                    f"{'failed':>7} {'load':>5}")
        for number, storms in enumerate(ddns["rounds"], 1):
            off = storms["none"]["dora_per_s"]
            for adapter, r in storms.items():
                rows.append(
                    f"  {number:<5} {'off' if adapter == 'none' else adapter:<14} "
                    f"{_f(r['dora_per_s'], 1):>9} {r['acks']:>7} {r['abandoned']:>9} "
                    f"{'' if adapter == 'none' else _ratio(r['dora_per_s'], off):>7} "
                    f"{r.get('ddns_delivered_in_storm', ''):>8} "
                    f"{r.get('ddns_done_after_last_ack_s', ''):>12} "
                    f"{r.get('ddns_delivered', ''):>9} "
                    f"{r.get('ddns_failed', ''):>7} {r['load']:>5.1f}")
        off = ddns["dhcp"]["none"]["dora_per_s"]
        for adapter, r in ddns["dhcp"].items():
            rows.append(f"  {'median':<5} {'off' if adapter == 'none' else adapter:<14} "
                        f"{_f(r['dora_per_s'], 1):>9} {'':>7} {'':>9} "
                        f"{'' if adapter == 'none' else _ratio(r['dora_per_s'], off):>7}")
    return "\n".join(rows)


def _output(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    return done.stdout + done.stderr


def preflight(args: argparse.Namespace) -> None:
    missing = [name for name, path in TOOLS.items() if not Path(path).exists()]
    if "powerdns_http" in args.adapter_list and not SCHEMA.exists():
        missing.append("pdns-backend-sqlite3")
    if missing:
        raise BenchError(f"missing: {', '.join(missing)} (Debian packages dnsperf, bind9, "
                         "bind9-dnsutils, pdns-server, pdns-backend-sqlite3: make system-bench)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="serve,ddns",
                        help="serve, ddns (DDNS and DHCP), profile (the answer path, cProfile)")
    parser.add_argument("--profile-top", type=int, default=15, help="functions shown by profile")
    parser.add_argument("--records", type=int, default=10_000, help="A (and PTR) records")
    parser.add_argument("--queries", type=int, default=50_000, help="lines in the query file")
    parser.add_argument("--rates", default="2000,5000,10000",
                        help="offered QPS levels (dnsperf -Q); an unthrottled run follows")
    parser.add_argument("--duration", type=int, default=10, help="seconds per dnsperf run")
    parser.add_argument("--updates", type=int, default=1000, help="grants per adapter")
    parser.add_argument("--adapters", default="bind_tsig,powerdns_http")
    parser.add_argument("--workers", type=int, default=parse_config({}).outbox.workers,
                        help="outbox workers (default: the configuration's)")
    parser.add_argument("--pdns-workers", type=int, default=1,
                        help="outbox workers for powerdns_http (gsqlite3 takes one writer)")
    parser.add_argument("--dns-nice", type=int, default=parse_config({}).outbox.dns_delivery_nice,
                        help="the DNS delivery process's nice (default: the configuration's)")
    parser.add_argument("--dns-storm-rate", type=float,
                        default=parse_config({}).outbox.dns_storm_updates_per_second,
                        help="DNS updates/s while DHCP is at its ceiling (default: the "
                             "configuration's)")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds between the update burst and the DHCP storm")
    parser.add_argument("--dora-clients", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3,
                        help="storms with DDNS off and on, alternating (medians compared)")
    parser.add_argument("--pg-nondurable", action="store_true",
                        help="PostgreSQL with fsync and synchronous commit off")
    parser.add_argument("--window", type=int, default=256,
                        help="DORAs in flight (enough to find the server's ceiling)")
    args = parser.parse_args(argv)
    args.part_list = [p for p in args.parts.split(",") if p]
    args.rate_list = [int(r) for r in args.rates.split(",") if r]
    args.adapter_list = [a for a in args.adapters.split(",") if a]
    if set(args.adapter_list) - {"bind_tsig", "powerdns_http"}:
        parser.error("adapters: bind_tsig, powerdns_http")
    if not 1 <= args.records <= 60_000 or not 1 <= args.updates <= 20_000:
        parser.error("records 1..60000, updates 1..20000")
    if not 1 <= args.rounds <= 10:
        parser.error("rounds 1..10")
    if not 1 <= args.duration <= 120 or not 1 <= args.dora_clients <= 50_000:
        parser.error("duration 1..120 s, dora-clients 1..50000")
    return args


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: everything started is stopped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    preflight(args)
    out = RESULTS / f"dns-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True)
    print("starting a private PostgreSQL cluster and migrating ...", flush=True)
    work = Path(tempfile.mkdtemp(prefix="ipamd-bench-dns-"))
    os.chmod(work, 0o755)
    report: dict[str, Any] = {"load_before": os.getloadavg()[0], "versions": {
        "named": _output([NAMED, "-v"]).strip(),
        "dnsperf": "".join(re.findall(r"Version (\S+)", _output([DNSPERF, "-h"])))}}
    print(f"peers: {report['versions']['named']}, dnsperf {report['versions']['dnsperf']}",
          flush=True)
    # Durable, as the appliance runs: a lease's commit waits for its fsync, and the DHCP
    # figures with DDNS on and off are of that server (--pg-nondurable: without the disk).
    server = postgres.start(durable=not args.pg_nondurable)
    try:
        pg = Pg(server)
        if "serve" in args.part_list:
            print("serve: embedded server vs BIND 9, dnsperf on loopback", flush=True)
            report["serve"] = bench_serve(args, pg, work, out)
        if "profile" in args.part_list:
            print("profile: the embedded server's answer path in this process", flush=True)
            report["profile"] = profile_query_path(args, work)
        if "ddns" in args.part_list:
            print("ddns: updates per adapter, and DORA/s with DDNS off and on", flush=True)
            report["ddns"] = bench_ddns(args, pg, work)
    finally:
        server.stop()
        for log in work.glob("*.ipamd.log"):
            shutil.copy(log, out / log.name)
        shutil.rmtree(work, ignore_errors=True)
        text = table(report)
        (out / "table.txt").write_text(text + "\n")
        (out / "results.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        print("\n" + text)
        print(f"written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        sys.exit(1)
