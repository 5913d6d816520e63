#!/usr/bin/env python3
"""`make bench` for occupancy history: a year of lease events across a /16, then the queries.

A private PostgreSQL cluster (tests/support/postgres: initdb in a temp dir, unix socket) gets a
fresh, migrated database. Into it go, by bulk SQL:
  - a /16 subnet (10.77.0.0/16) with four pools, an exclude, 500 reservations and 200
    assignments (each with its audit entries; a quarter of the reservations deleted mid-year);
  - for each of 65,280 addresses, one occupancy per quarter of the past year by a client that
    moves to another address every quarter: granted, two renewals, and an end (released,
    expired, or 1 % declined); 60 % of the last quarter's leases still hold. That is over
    1,000,000 lease_events rows, inserted in time order through the fold trigger, as the DHCP
    server writes them.
Then the real appliance (API only) serves, over loopback HTTP, and each query is timed
end to end (request → JSON received):
  - GET /history?mac=…              (a client's whole year)
  - GET /history?ip=…&at=…          (who had this address then)
  - GET /subnets/{id}/history?at=…  (the /16 "As of" map, at a busy moment and now)
Targets: lookups under 50 ms, the /16 map under 300 ms (p95; the exit status is 1 when one is
missed). The machine's load is printed beside the figures: on a shared 2-core box they vary.
Figures are printed and written to bench/results/history-<time>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import trio
from tests.support import postgres

from ipamd import runtime
from ipamd.api.routes.history import map_json
from ipamd.config import parse
from ipamd.db.bridge import Database, asyncio_loop, run_once, run_sync
from ipamd.ipam import address_map

ROOT = Path(__file__).resolve().parents[1]

RESULTS = Path(__file__).resolve().parent / "results"
DATABASE = "bench_history"
TENANT = "00000000-0000-7000-8000-000000000001"
ADDRESSES = 65_280  # 10.77.1.0 .. 10.77.255.255
YEAR_DAYS = 364  # inside the one-year retention, so the sweeper leaves the data alone
LOOKUP_TARGET_MS = 50.0
MAP_TARGET_MS = 300.0
BASELINE_EVENTS = 50_000

_PLAN = f"""
WITH p AS (
    INSERT INTO prefixes (tenant_id, cidr) VALUES ('{TENANT}', '10.77.0.0/16') RETURNING id
)
INSERT INTO subnets (tenant_id, prefix_id, cidr, gateway)
SELECT '{TENANT}', id, '10.77.0.0/16', '10.77.0.1' FROM p RETURNING id
"""

# Plan objects with their audit trail; created ten days into the year, a quarter of the
# reservations deleted at mid-year (so only the audit log knows they existed).
_OBJECTS = """
WITH pools_made AS (
    INSERT INTO pools (subnet_id, name, start_ip, end_ip, created_at, updated_at)
    SELECT $1, 'pool-' || q, '10.77.0.0'::inet + (256 + q * 16320),
           '10.77.0.0'::inet + (256 + q * 16320 + 15999), $2, $2
    FROM generate_series(0, 3) q RETURNING *
), excludes_made AS (
    INSERT INTO excludes (subnet_id, start_ip, end_ip, created_at, updated_at)
    VALUES ($1, '10.77.0.0', '10.77.0.255', $2, $2) RETURNING *
), reservations_made AS (
    INSERT INTO reservations (subnet_id, ip, mac, hostname, created_at, updated_at)
    SELECT $1, '10.77.0.0'::inet + (256 + n * 97),
           ('02:01:' || lpad(to_hex(n / 256), 2, '0') || ':' || lpad(to_hex(n % 256), 2, '0')
            || ':00:01')::macaddr, 'reserved-' || n, $2, $2
    FROM generate_series(0, 499) n RETURNING *
), assignments_made AS (
    INSERT INTO assignments (subnet_id, ip, hostname, created_at, updated_at)
    SELECT $1, '10.77.0.0'::inet + (10 + n), 'static-' || n, $2, $2
    FROM generate_series(0, 199) n RETURNING *
), audited AS (
    INSERT INTO audit_log (at, actor, action, object_type, object_id, before, after)
    SELECT $2, 'bench', 'create', kind, id::text, NULL, fields FROM (
        SELECT 'pool' AS kind, id, jsonb_build_object('id', id, 'subnet_id', subnet_id,
               'start_ip', host(start_ip), 'end_ip', host(end_ip), 'created_at', created_at)
               AS fields FROM pools_made
        UNION ALL SELECT 'exclude', id, jsonb_build_object('id', id, 'subnet_id', subnet_id,
               'start_ip', host(start_ip), 'end_ip', host(end_ip), 'created_at', created_at)
               FROM excludes_made
        UNION ALL SELECT 'reservation', id, jsonb_build_object('id', id, 'subnet_id', subnet_id,
               'ip', host(ip), 'mac', mac::text, 'hostname', hostname, 'created_at', created_at)
               FROM reservations_made
        UNION ALL SELECT 'assignment', id, jsonb_build_object('id', id, 'subnet_id', subnet_id,
               'ip', host(ip), 'hostname', hostname, 'created_at', created_at)
               FROM assignments_made
    ) objects
)
SELECT count(*) FROM reservations_made
"""

_DELETE_SOME = """
WITH gone AS (
    DELETE FROM reservations WHERE subnet_id = $1 AND hostname ~ '-[0-9]*[0]$' RETURNING *
)
INSERT INTO audit_log (at, actor, action, object_type, object_id, before, after)
SELECT $2, 'bench', 'delete', 'reservation', id::text,
       jsonb_build_object('id', id, 'subnet_id', subnet_id, 'ip', host(ip), 'mac', mac::text,
                          'hostname', hostname, 'created_at', created_at), NULL
FROM gone
"""

# One occupancy per address per quarter. Client c = (address + 17 q) mod N: a client moves
# every quarter. Starts in the first fifth of the quarter, lasts 50-95 % of it; a lease that
# still holds was renewed in the last three days. Staged first, numbered in time order.
_STAGE = """
CREATE TEMPORARY TABLE staged AS
SELECT row_number() OVER (ORDER BY e.at) AS rn, e.at, iv.lease_id, e.kind AS event, iv.ip,
       iv.mac, '\\x01'::bytea || iv.mac_bytes AS client_id, 'host-' || iv.client AS hostname,
       convert_to('port-' || (iv.a % 48), 'UTF8') AS circuit_id,
       convert_to('sw-' || (iv.a / 4096), 'UTF8') AS remote_id,
       CASE WHEN e.kind IN ('granted', 'renewed') THEN e.at + interval '7 days'
            WHEN e.kind = 'declined' THEN e.at + interval '1 day' ELSE e.at END AS expires_at
FROM (
    SELECT a, q, gen_random_uuid() AS lease_id, '10.77.1.0'::inet + a AS ip, c AS client,
           m::macaddr AS mac, decode(replace(m, ':', ''), 'hex') AS mac_bytes,
           $1::timestamptz + q * $2::interval + random() * 0.2 * $2::interval AS starts,
           (0.5 + random() * 0.45) * $2::interval AS lasts,
           (q = 3 AND random() < 0.6) AS holds,
           now() - random() * interval '3 days' AS last_renew,
           CASE WHEN random() < 0.01 THEN 'declined'
                WHEN random() < 0.5 THEN 'released' ELSE 'expired' END AS ending
    FROM generate_series(0, $3 - 1) a, generate_series(0, 3) q,
         LATERAL (SELECT (a + 17 * q) % $3 AS c) client,
         LATERAL (SELECT '02:00:' || lpad(to_hex(c / 65536), 2, '0') || ':'
                         || lpad(to_hex(c / 256 % 256), 2, '0') || ':'
                         || lpad(to_hex(c % 256), 2, '0') || ':01' AS m) mac
) iv
CROSS JOIN LATERAL (VALUES
    (0, 'granted', iv.starts),
    (1, 'renewed', iv.starts + iv.lasts / 3),
    (2, 'renewed', CASE WHEN iv.holds THEN iv.last_renew ELSE iv.starts + iv.lasts * 2 / 3 END),
    (3, iv.ending, iv.starts + iv.lasts)
) AS e(n, kind, at)
WHERE NOT (iv.holds AND e.n = 3) AND e.at < now()
"""

# As the DHCP server commits: batches in time order, one INSERT statement each.
_INSERT_BATCH = """
INSERT INTO lease_events (at, lease_id, event, subnet_id, ip, mac, client_id, hostname,
                          circuit_id, remote_id, giaddr, expires_at)
SELECT at, lease_id, event, $3, ip, mac, client_id, hostname, circuit_id, remote_id,
       '10.77.0.1', expires_at
FROM staged WHERE rn BETWEEN $1 AND $2 ORDER BY rn
"""


async def _create(conn: Any) -> None:
    await conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    await conn.execute(f"CREATE DATABASE {DATABASE} TEMPLATE {postgres.TEMPLATE}")


def _backend_cpu(pid: int) -> float:
    """CPU seconds a local Postgres backend has used (less noisy than wall time on a busy box)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


async def _load(conn: Any, addresses: int, batch: int) -> dict[str, Any]:
    year0 = dt.datetime.now(dt.UTC) - dt.timedelta(days=YEAR_DAYS)
    quarter = dt.timedelta(days=YEAR_DAYS / 4)
    subnet = await conn.fetchval(_PLAN)
    await conn.execute("SELECT setseed(0.42)")
    await conn.fetchval(_OBJECTS, subnet, year0 + dt.timedelta(days=10))
    await conn.execute(_DELETE_SOME, subnet, year0 + 2 * quarter)
    await conn.execute(_STAGE, year0, quarter, addresses)
    await conn.execute("CREATE INDEX ON staged (rn); ANALYZE staged")
    events = await conn.fetchval("SELECT count(*) FROM staged")
    pid = await conn.fetchval("SELECT pg_backend_pid()")

    async def insert(upto: int) -> tuple[float, float]:
        cpu0, started = _backend_cpu(pid), time.perf_counter()
        for first in range(1, upto + 1, batch):
            await conn.execute(_INSERT_BATCH, first, min(first + batch - 1, upto), subnet)
        return time.perf_counter() - started, (_backend_cpu(pid) - cpu0) / upto * 1e6

    # What the fold adds to a DHCP commit: the first events inserted without it and with it,
    # each in a transaction rolled back, then the whole year with it.
    sample = min(events, BASELINE_EVENTS)
    sampled = []
    for fold in (False, True):
        tx = conn.transaction()
        await tx.start()
        if not fold:
            await conn.execute("ALTER TABLE lease_events DISABLE TRIGGER lease_events_history")
        sampled.append((await insert(sample))[1])
        await tx.rollback()
    plain_us, sample_fold_us = sampled
    fold_s, cpu_us = await insert(events)
    await conn.execute("VACUUM ANALYZE")
    sizes = await conn.fetchrow(
        """SELECT (SELECT count(*) FROM lease_intervals) AS intervals,
                  pg_total_relation_size('lease_events') AS events_bytes,
                  pg_total_relation_size('lease_intervals') AS intervals_bytes""")
    return {"subnet_id": str(subnet), "addresses": addresses, "year0": year0,
            "quarter": quarter, "events": events, "batch": batch,
            "insert_s": round(fold_s, 1), "events_per_s": round(events / fold_s),
            "backend_cpu_us_per_event": round(cpu_us, 1),
            "sample_events": sample,
            "sample_cpu_us_per_event_without_fold": round(plain_us, 1),
            "sample_cpu_us_per_event_with_fold": round(sample_fold_us, 1),
            "intervals": sizes["intervals"], "events_mb": round(sizes["events_bytes"] / 2**20),
            "intervals_mb": round(sizes["intervals_bytes"] / 2**20)}


async def _samples(conn: Any, count: int) -> dict[str, list[str]]:
    macs = await conn.fetch(
        "SELECT DISTINCT mac::text AS v FROM lease_intervals ORDER BY 1 LIMIT $1 OFFSET 1000",
        count)
    ips = await conn.fetch(
        "SELECT host(ip) AS v FROM lease_intervals ORDER BY id LIMIT $1 OFFSET 5000", count)
    return {"mac": [r["v"] for r in macs], "ip": [r["v"] for r in ips]}


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"n": len(times), "p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2),
            "max_ms": round(ordered[-1], 2)}


async def _timed(client: httpx.AsyncClient, path: str, params: dict[str, str]
                 ) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    reply = await client.get(path, params=params)
    elapsed = (time.perf_counter() - started) * 1000
    if reply.status_code != 200:
        raise RuntimeError(f"{path} {params}: {reply.status_code} {reply.text[:300]}")
    return elapsed, reply


async def _measure(dsn: str, loaded: dict[str, Any], samples: dict[str, list[str]],
                   rounds: int) -> dict[str, Any]:
    config = parse({
        "state_dir": "/tmp/ipamd-bench-history",
        "database": {"dsn": dsn, "pool_min": 2, "pool_max": 4},
        "api": {"public_enabled": False, "loopback_listen": "127.0.0.1:0"},
        "dhcp": {"enabled": False}, "outbox": {"enabled": False},
        "logging": {"access_log": False, "level": "WARNING"},
        "history": {"retention_days": 400},
    })
    rng = random.Random(7)
    year0, quarter = loaded["year0"], loaded["quarter"]
    busy = year0 + quarter * 3.5  # mid last quarter: most addresses are leased
    async with trio.open_nursery() as nursery:
        running = await nursery.start(
            lambda task_status: runtime.run(config, handle_signals=False,
                                            freeze_startup_objects=True,
                                            task_status=task_status))
        base = running.url("http") + "/api/v1"
        try:
            async with httpx.AsyncClient(base_url=base, timeout=60) as anon:
                made = await anon.post("/tokens", json={"name": "bench", "role": "viewer"})
                secret = made.json()["token"]
            headers = {"Authorization": f"Bearer {secret}"}
            async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
                out: dict[str, Any] = {}
                mac_times, ip_times, answers = [], [], 0
                for mac in samples["mac"][:rounds]:
                    elapsed, reply = await _timed(client, "/history", {"mac": mac})
                    mac_times.append(elapsed)
                    answers += len(reply.json()["items"])
                out["mac_lookup"] = {**_summary(mac_times),
                                     "intervals_per_answer": round(answers / len(mac_times), 1)}
                hits = 0
                for ip in samples["ip"][:rounds]:
                    moment = year0 + dt.timedelta(seconds=rng.uniform(0, YEAR_DAYS * 86400))
                    elapsed, reply = await _timed(
                        client, "/history", {"ip": ip, "at": moment.isoformat()})
                    ip_times.append(elapsed)
                    hits += len(reply.json()["items"])
                out["ip_at_moment"] = {**_summary(ip_times), "answers_with_a_holder": hits}
                for label, moment in (("map_busy", busy), ("map_now", None)):
                    params = {} if moment is None else {"at": moment.isoformat()}
                    path = f"/subnets/{loaded['subnet_id']}/history"
                    await _timed(client, path, params)  # warm the cache once
                    times, reply = [], None
                    for _ in range(max(3, rounds // 4)):
                        elapsed, reply = await _timed(client, path, params)
                        times.append(elapsed)
                    body = reply.json()
                    server = await _map_in_process(dsn, uuid.UUID(loaded["subnet_id"]), moment,
                                                   max(3, rounds // 4))
                    out[label] = {**_summary(times), "in_process": server,
                                  "bytes": len(reply.content), "ranges": len(body["ranges"]),
                                  "addresses": len(body["addresses"]["rows"]),
                                  "counts": body["counts"]}
                return out
        finally:
            running.stop.set()


async def _map_in_process(dsn: str, subnet_id: uuid.UUID, moment: dt.datetime | None,
                          rounds: int) -> dict[str, float]:
    """The map without HTTP: the domain query and the JSON text, as the route builds them."""
    times = []
    async with asyncio_loop():
        db = await Database.connect(dsn, min_size=1, max_size=1)
        try:
            for _ in range(rounds):
                started = time.perf_counter()
                amap = await db.run(address_map.address_map, subnet_id,
                                    moment or dt.datetime.now(dt.UTC))
                map_json(amap, None)
                times.append((time.perf_counter() - started) * 1000)
        finally:
            await db.close()
    return _summary(times)


def _calibrate() -> dict[str, float]:
    """How busy the machine is: load average and a fixed CPU-bound loop (~0.2 s when idle)."""
    started = time.perf_counter()
    sum(range(10**7))
    return {"load_1min": os.getloadavg()[0],
            "cpu_loop_s": round(time.perf_counter() - started, 3)}


def _print(report: dict[str, Any]) -> None:
    load = report["load"]
    print(f"\nhistory bench — {load['events']:,} lease events over {YEAR_DAYS} days, "
          f"{load['addresses']:,} addresses of a /16")
    print(f"  insert + fold, batches of {load['batch']}: {load['events_per_s']:,} events/s "
          f"({load['insert_s']} s), Postgres CPU {load['backend_cpu_us_per_event']} µs/event; "
          f"first {load['sample_events']:,} events: "
          f"{load['sample_cpu_us_per_event_with_fold']} µs with the fold, "
          f"{load['sample_cpu_us_per_event_without_fold']} µs without")
    print(f"  "
          f"{load['intervals']:,} intervals; lease_events {load['events_mb']} MB, "
          f"lease_intervals {load['intervals_mb']} MB (with indexes)")
    rows = [("MAC lookup (a year)", "mac_lookup", LOOKUP_TARGET_MS),
            ("IP at a moment", "ip_at_moment", LOOKUP_TARGET_MS),
            ("/16 map, busy moment", "map_busy", MAP_TARGET_MS),
            ("/16 map, now", "map_now", MAP_TARGET_MS)]
    calm = report["machine"]
    print(f"  machine: load {calm['before']['load_1min']:.1f} → {calm['after']['load_1min']:.1f}, "
          f"CPU loop {calm['before']['cpu_loop_s']} s → {calm['after']['cpu_loop_s']} s "
          "(~0.2 s on an idle core)")
    print(f"  {'query':<24}{'n':>4}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'target':>9}  verdict")
    for label, key, target in rows:
        r = report["queries"][key]
        verdict = "ok" if r["p95_ms"] < target else "OVER"
        print(f"  {label:<24}{r['n']:>4}{r['p50_ms']:>9}{r['p95_ms']:>9}{r['max_ms']:>9}"
              f"{target:>9.0f}  {verdict}")
    for key in ("map_busy", "map_now"):
        r = report["queries"][key]
        print(f"  {key}: in process (no HTTP) p50 {r['in_process']['p50_ms']} ms, "
              f"p95 {r['in_process']['p95_ms']} ms; "
              f"{r['bytes'] / 2**20:.1f} MB JSON, {r['ranges']} ranges, "
              f"{r['addresses']:,} per-address entries; counts {r['counts']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="lookups per query kind")
    parser.add_argument("--addresses", type=int, default=ADDRESSES,
                        help="addresses with history (a smaller run for a quick check)")
    parser.add_argument("--batch", type=int, default=256,
                        help="events per INSERT (the DHCP server commits up to 256 at once)")
    args = parser.parse_args()
    print("starting a private PostgreSQL cluster and migrating ...", flush=True)
    server = postgres.start()
    try:
        run_sync(run_once, server.dsn("postgres"), _create)
        dsn = server.dsn(DATABASE)
        print("generating a year of lease events (bulk SQL through the fold trigger) ...",
              flush=True)
        loaded = run_sync(run_once, dsn, _load, args.addresses, args.batch)
        samples = run_sync(run_once, dsn, _samples, args.rounds)
        print("timing queries through the API ...", flush=True)
        before = _calibrate()
        queries = trio.run(_measure, dsn, loaded, samples, args.rounds)
        after = _calibrate()
    finally:
        server.stop()
    report = {
        "at": dt.datetime.now(dt.UTC).isoformat(),
        "load": {k: v for k, v in loaded.items() if k not in ("year0", "quarter")},
        "machine": {"before": before, "after": after},
        "queries": queries,
    }
    _print(report)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"history-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"  written to {path.relative_to(ROOT)}")
    over = [k for k, t in (("mac_lookup", LOOKUP_TARGET_MS), ("ip_at_moment", LOOKUP_TARGET_MS),
                           ("map_busy", MAP_TARGET_MS), ("map_now", MAP_TARGET_MS))
            if queries[k]["p95_ms"] >= t]
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
