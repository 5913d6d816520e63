#!/usr/bin/env python3
"""`make bench` for the outbox: commit → delivered latency and deliveries per second.

A private PostgreSQL cluster (tests/support/postgres) gets a fresh, migrated database; the real
appliance runs in this process with the outbox on; a real HTTPS receiver (tests/support/
receiver.py: trio + h11, a trustme certificate the appliance trusts through outbox.ca_file)
runs as a separate process and checks every signature. One webhook takes every topic.

  latency     single lease events, each committed in its own transaction, paced so the queue
              is idle: time from commit (the insert transaction returned) to the receiver
              having read the whole request, and to the row being recorded `delivered`
  throughput  bursts of lease events, each committed in one transaction: deliveries per
              second until the last row is `delivered` (every one signed, every one
              verified); the median of --bursts (3) bursts, each shown
  client      the delivery HTTP client alone (httpx over the vetting backend, no database):
              signed POSTs from `workers` concurrent tasks, CPU per request; --profile
              prints where that CPU goes, by package

Targets: p50 under 50 ms, at least 1,000 deliveries/s. Figures are printed and
written to bench/results/outbox-<time>.json.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio
import trustme
from tests.support import postgres

from ipamd import runtime
from ipamd.config import parse
from ipamd.db.bridge import Database, asyncio_loop, run_once, run_sync
from ipamd.outbox import client as http_client
from ipamd.outbox import signing, webhooks
from ipamd.outbox.urlguard import Resolver, check_url

ROOT = Path(__file__).resolve().parents[1]

RESULTS = Path(__file__).resolve().parent / "results"
DATABASE = "bench_outbox"
SECRET_ENV = "IPAMD_BENCH_HOOK_SECRET"
SECRET = "bench-hook-secret"
P50_TARGET_MS = 50.0
RATE_TARGET = 1000.0


async def _create(conn: Any) -> None:
    await conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
    await conn.execute(f"CREATE DATABASE {DATABASE} TEMPLATE {postgres.TEMPLATE}")


def _lease(n: int) -> dict[str, Any]:
    return {"lease_id": f"0192f000-0000-7000-8000-{n:012d}", "ip": f"10.77.{n // 250 % 256}."
            f"{n % 250 + 1}", "subnet_id": "0192f000-0000-7000-8000-0000000000aa",
            "hostname": f"host-{n}", "fqdn": None, "state": "active",
            "mac": f"02:00:00:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}"}


async def _insert_one(conn: Any, payload: dict[str, Any]) -> Any:
    return await conn.fetchval(
        "INSERT INTO events (topic, payload) VALUES ('lease.granted', $1) RETURNING id", payload)


async def _insert_many(conn: Any, payloads: list[dict[str, Any]]) -> list[Any]:
    rows = await conn.fetch(
        """INSERT INTO events (topic, payload)
           SELECT 'lease.granted', p FROM unnest($1::jsonb[]) p RETURNING id""", payloads)
    return [r["id"] for r in rows]


async def _durations(conn: Any) -> list[float]:
    rows = await conn.fetch("SELECT duration_ms FROM outbox_attempts")
    return [r["duration_ms"] for r in rows]


async def _delivered(conn: Any) -> int:
    return await conn.fetchval("SELECT count(*) FROM outbox WHERE state = 'delivered'")


async def _rows(conn: Any) -> list[Any]:
    return await conn.fetch(
        """SELECT o.id, o.event_id, o.state, o.attempts,
                  extract(epoch FROM o.delivered_at)::float8 AS delivered_at
           FROM outbox o WHERE o.topic = 'lease.granted'""")


def _summary(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 2),
            "p99_ms": round(pick(0.99), 2), "max_ms": round(ordered[-1], 2)}


class ReceiverProcess:
    """tests/support/receiver.py in its own process (its own core, like a real receiver)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.receiver", "--cert", str(cert), "--key",
             str(key), "--secret", SECRET],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"receiver did not start: {line!r}")
        self.port = int(line.split()[1])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def _stats(port: int, context: ssl.SSLContext) -> dict[str, Any]:
    async with httpx.AsyncClient(verify=context, timeout=30, trust_env=False) as client:
        reply = await client.get(f"https://127.0.0.1:{port}/stats")
        return reply.json()


async def _wait_all(db: Any, total: int, timeout: float) -> float:
    """Polls (rarely: the poll runs in the measured process) until `total` rows are
    delivered; returns when the last one was recorded delivered."""
    with trio.fail_after(timeout):
        while await db.run(_delivered) < total:
            await trio.sleep(0.25)
    return await db.run(_last_delivered)


async def _burst(db: Database, tls: dict[str, Any], args: argparse.Namespace, round_no: int,
                 before: int) -> dict[str, Any]:
    """One burst of `args.burst` lease events in one transaction, drained to the last row."""
    first = 100_000 + round_no * args.burst
    burst = [_lease(first + n) for n in range(args.burst)]
    started = time.time()
    await db.transaction(_insert_many, burst)
    committed = time.time()
    cpu = time.process_time()
    receiver_cpu = (await _stats(tls["port"], tls["client"]))["cpu_seconds"]
    finished = await _wait_all(db, before + args.burst, 300)
    cpu = time.process_time() - cpu
    receiver_cpu = (await _stats(tls["port"], tls["client"]))["cpu_seconds"] - receiver_cpu
    return {"commit_s": round(committed - started, 3),
            "drain_s": round(finished - committed, 3),
            "deliveries_per_s": round(args.burst / (finished - committed)),
            "appliance_cpu_us_per_delivery": round(cpu / args.burst * 1e6),
            "receiver_cpu_us_per_request": round(receiver_cpu / args.burst * 1e6)}


async def _last_delivered(conn: Any) -> float:
    return await conn.fetchval("SELECT extract(epoch FROM max(delivered_at))::float8 FROM outbox")


# Where the client's CPU goes, by package (cProfile on process time; its own overhead
# inflates call-heavy code, so read the shares, not the absolute figures).
PROFILE_GROUPS = ("trio/", "httpx/", "ipamd/outbox/http11", "ipamd/outbox/sockstream",
                  "ipamd/outbox/lanes", "ipamd/outbox/transport", "ipamd/", "contextlib")


def _profile_shares(profile: cProfile.Profile) -> dict[str, float]:
    groups: dict[str, float] = {}
    for (filename, _line, name), stat in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        tottime = stat[2]
        if filename == "~":
            group = ("C: httptools (llhttp)" if "httptools" in name
                     else "C: ssl and sockets" if any(k in name for k in ("_ssl", "socket", "poll"))
                     else "C: builtins")
        else:
            group = next((g.rstrip("/") for g in PROFILE_GROUPS if g in filename), "other")
        groups[group] = groups.get(group, 0.0) + tottime
    total = sum(groups.values()) or 1.0
    return {g: round(100 * t / total, 1) for g, t in sorted(groups.items(), key=lambda i: -i[1])}


async def _client_alone(args: argparse.Namespace, tls: dict[str, Any]) -> dict[str, Any]:
    """The delivery client alone: `workers` tasks posting signed deliveries, no database."""
    client = http_client.Client(
        Resolver(tls["hosts_file"]), http_client.ssl_context(tls["ca_file"]),
        connections=args.workers, timeout=10.0)
    target = check_url(f"https://hook.test:{tls['port']}/hook")
    body = json.dumps(_lease(0)).encode()
    headers = signing.headers([SECRET.encode()], delivery_id="bench-client-alone",
                              topic="lease.granted", timestamp=int(time.time()), body=body)
    send, receive = trio.open_memory_channel[None](args.client_requests)
    for _ in range(args.client_requests):
        send.send_nowait(None)
    send.close()

    async def worker() -> None:
        async for _ in receive:
            reply = await client.post(target, headers, body, 65_536)
            assert reply.status == 200, reply.status

    async with client:
        await client.post(target, headers, body, 65_536)  # the first TLS handshake
        profile = cProfile.Profile(time.process_time) if args.profile else None
        cpu, wall = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        async with trio.open_nursery() as nursery:
            for _ in range(args.workers):
                nursery.start_soon(worker)
        if profile is not None:
            profile.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        opened = client.connections_opened
    report: dict[str, Any] = {
        "requests": args.client_requests, "requests_per_s": round(args.client_requests / wall),
        "cpu_us_per_request": round(cpu / args.client_requests * 1e6),
        "connections_opened": opened, "profiled": profile is not None}
    if profile is not None:
        report["cpu_share_percent"] = _profile_shares(profile)
    return report


async def _measure(dsn: str, args: argparse.Namespace, tls: dict[str, Any]) -> dict[str, Any]:
    config = parse({
        "state_dir": "/tmp/ipamd-bench-outbox",
        "database": {"dsn": dsn, "pool_min": 2, "pool_max": 8},
        "api": {"public_enabled": False, "loopback_listen": "127.0.0.1:0"},
        "dhcp": {"enabled": False},
        "outbox": {"enabled": True, "workers": args.workers, "ca_file": tls["ca_file"],
                   "hosts_file": tls["hosts_file"], "poll_interval_seconds": 1.0},
        "logging": {"access_log": False, "level": "WARNING"},
    })
    os.environ[SECRET_ENV] = SECRET
    async with asyncio_loop(), trio.open_nursery() as nursery:
        running = await nursery.start(
            lambda task_status: runtime.run(config, handle_signals=False,
                                            freeze_startup_objects=True,
                                            task_status=task_status))
        # The appliance's pool lives on its own asyncio loop; the bench writes through its own.
        db = await Database.connect(dsn, min_size=2, max_size=4)
        try:
            await db.transaction(webhooks.create, "bench", {
                "name": "bench", "url": f"https://hook.test:{tls['port']}/hook",
                "secret_ref": f"env:{SECRET_ENV}", "topics": ["*"]})
            await _wait_all(db, 1, 30)  # the webhook's own ipam.audit event: warms the pool

            # Latency: one event per transaction, paced so each finds an idle queue.
            commits: dict[str, float] = {}
            for n in range(args.latency_events):
                event_id = await db.transaction(_insert_one, _lease(n))
                commits[str(event_id)] = time.time()
                await trio.sleep(args.pace_ms / 1000)
            await _wait_all(db, 1 + args.latency_events, 60)
            arrivals = (await _stats(tls["port"], tls["client"]))["at"]
            rows = {str(r["event_id"]): r for r in await db.run(_rows)}
            to_receiver = [(arrivals[str(rows[e]["id"])] - t) * 1000 for e, t in commits.items()]
            to_recorded = [(rows[e]["delivered_at"] - t) * 1000 for e, t in commits.items()]

            # Throughput: bursts, each committed at once and drained before the next. The
            # machine's load average says how much of its two cores other work took.
            load_before = round(os.getloadavg()[0], 2)
            bursts: list[dict[str, Any]] = []
            expected = 1 + args.latency_events
            for round_no in range(args.bursts):
                bursts.append(await _burst(db, tls, args, round_no, expected))
                expected += args.burst
            stats = await _stats(tls["port"], tls["client"])
            signed_ok = stats["signature_failures"] == 0
            counters = dict(running.state.counters.outbox.outcomes)
            durations = _summary(await db.run(_durations))
            alone = await _client_alone(args, tls) if args.client_requests else None
            return {
                "client_alone": alone,
                "latency": {"commit_to_receiver": _summary(to_receiver),
                            "commit_to_delivered_row": _summary(to_recorded),
                            "pace_ms": args.pace_ms},
                "throughput": {"deliveries": args.burst, "bursts": bursts,
                               "deliveries_per_s": statistics.median(
                                   b["deliveries_per_s"] for b in bursts),
                               "received": stats["count"], "signatures_ok": signed_ok},
                "attempt_duration": durations,
                "load_before": load_before,
                "workers": args.workers,
                "counters": counters,
            }
        finally:
            await db.close()
            running.stop.set()


def _tls(tmp: Path) -> dict[str, Any]:
    ca = trustme.CA()
    leaf = ca.issue_cert("hook.test", "127.0.0.1")
    cert, key, ca_file = tmp / "cert.pem", tmp / "key.pem", tmp / "ca.pem"
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    leaf.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    hosts = tmp / "hosts"
    hosts.write_text("127.0.0.1 hook.test\n")
    client = ssl.create_default_context(cafile=str(ca_file))
    return {"cert": cert, "key": key, "ca_file": str(ca_file), "hosts_file": str(hosts),
            "client": client}


def _print(report: dict[str, Any]) -> None:
    lat, thr = report["latency"], report["throughput"]
    print(f"\noutbox bench — {report['workers']} workers, local HTTPS receiver process")
    print(f"  {'commit → ...':<28}{'n':>6}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for label, key in (("receiver has the request", "commit_to_receiver"),
                       ("row recorded delivered", "commit_to_delivered_row")):
        r = lat[key]
        print(f"  {label:<28}{r['n']:>6}{r['p50_ms']:>9}{r['p99_ms']:>9}{r['max_ms']:>9}")
    verdict = "ok" if lat["commit_to_receiver"]["p50_ms"] < P50_TARGET_MS else "OVER"
    print(f"  p50 target {P50_TARGET_MS:.0f} ms: {verdict}")
    rate_verdict = "ok" if thr["deliveries_per_s"] >= RATE_TARGET else "UNDER"
    for n, burst in enumerate(thr["bursts"], 1):
        print(f"  burst {n} of {thr['deliveries']:,}: drained in {burst['drain_s']} s = "
              f"{burst['deliveries_per_s']:,} deliveries/s; CPU per delivery: appliance "
              f"{burst['appliance_cpu_us_per_delivery']} µs (claim, sign, HTTPS, record), "
              f"receiver {burst['receiver_cpu_us_per_request']} µs")
    print(f"  median of {len(thr['bursts'])} bursts: {thr['deliveries_per_s']:,} deliveries/s "
          f"(target {RATE_TARGET:,.0f}: {rate_verdict}); receiver verified "
          f"{thr['received']:,} requests, signatures ok: {thr['signatures_ok']}")
    print(f"  attempt p50 {report['attempt_duration']['p50_ms']} ms; load average before "
          f"{report['load_before']}")
    cheapest = min(b["appliance_cpu_us_per_delivery"] for b in thr["bursts"])
    print(f"  the appliance's own ceiling at its CPU cost: ~{1e6 / max(cheapest, 1):,.0f} "
          f"deliveries/s per core (the measured rate also pays for the receiver and Postgres "
          f"on this machine)")
    alone = report.get("client_alone")
    if alone:
        note = " (under cProfile: slower)" if alone["profiled"] else ""
        print(f"  delivery client alone: {alone['requests']:,} signed POSTs from "
              f"{report['workers']} tasks, {alone['requests_per_s']:,}/s, CPU "
              f"{alone['cpu_us_per_request']} µs per request{note}, "
              f"{alone['connections_opened']} connections opened")
        for group, share in alone.get("cpu_share_percent", {}).items():
            print(f"    {group:<36}{share:>6} %")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-events", type=int, default=300)
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--burst", type=int, default=5000, help="deliveries per burst")
    parser.add_argument("--bursts", type=int, default=3,
                        help="bursts in a row; the figure is their median (the machine is shared)")
    parser.add_argument("--client-requests", type=int, default=3000,
                        help="POSTs for the client-alone phase (0 skips it)")
    parser.add_argument("--profile", action="store_true",
                        help="profile the client-alone phase and print CPU shares by package")
    parser.add_argument("--workers", type=int, default=None,
                        help="outbox.workers (default: the configuration's default)")
    args = parser.parse_args()
    if args.workers is None:
        args.workers = parse({}).outbox.workers
    print("starting a private PostgreSQL cluster and migrating ...", flush=True)
    server = postgres.start()
    receiver: ReceiverProcess | None = None
    with tempfile.TemporaryDirectory(prefix="ipamd-bench-outbox-") as tmp:
        try:
            run_sync(run_once, server.dsn("postgres"), _create)
            tls = _tls(Path(tmp))
            receiver = ReceiverProcess(tls["cert"], tls["key"])
            tls["port"] = receiver.port
            print("delivering ...", flush=True)
            report = trio.run(_measure, server.dsn(DATABASE), args, tls)
        finally:
            if receiver is not None:
                receiver.stop()
            server.stop()
    _print(report)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"outbox-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"  written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
