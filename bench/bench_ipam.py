"""IPAM benchmark: utilisation, search and next-free on a /16 subnet with 30,000 used addresses.

Starts a private Postgres and the real appliance on loopback, loads a plan, then times
each API call end to end over HTTP (and the database unit alone). Two plans, each a /16
with 30,000 used addresses besides the gateway, two pools and two excludes:

  community      1,000 managed IPs (the community license cap): 600 reservations (half of
                 them with their client's live lease) and 400 assignments; 29,000 leases
  managed-heavy  12,000 managed IPs: 8,000 reservations (half leased), 4,000 assignments;
                 18,000 leases

Each plan also has 2,000 ended (expired) leases.
Prints figures and writes them to bench/results/ipam-<time>.json; not a pass/fail test.
The machine's load average is printed too: on 2 shared cores the figures move with it.

    python -m bench.bench_ipam [--rounds 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import trio
from tests.conftest import make_config
from tests.support import postgres

from ipamd import runtime
from ipamd.db.bridge import (
    Database,
    run_once,
    run_sync,
)
from ipamd.ipam import nextfree, search, search_terms, utilisation

ROOT = Path(__file__).resolve().parent.parent

# name -> (reservations, assignments, pool leases); ended leases on top
SCENARIOS = {"community": (600, 400, 29_000), "managed-heavy": (8_000, 4_000, 18_000)}
ENDED_LEASES = 2_000

# Addresses are offsets from 10.100.0.0: reservations and assignments in the static half
# (outside pools), leases in the pools (10.100.128.0/17).
MAC = """('{prefix}:' || lpad(to_hex(n >> 24 & 255), 2, '0') || ':'
        || lpad(to_hex(n >> 16 & 255), 2, '0') || ':' || lpad(to_hex(n >> 8 & 255), 2, '0')
        || ':' || lpad(to_hex(n & 255), 2, '0'))::macaddr"""
LOAD_RESERVATIONS = f"""
INSERT INTO reservations (subnet_id, ip, mac, hostname)
SELECT $1::uuid, '10.100.0.0'::inet + 256 + n, {MAC.format(prefix="02:00")}, 'res-' || n
FROM generate_series(1, $2::int) AS n
"""
# Half the reserved clients hold a live lease at their reserved address.
LOAD_RESERVED_LEASES = f"""
INSERT INTO leases (subnet_id, ip, state, client_key, mac, hostname, expires_at)
SELECT $1::uuid, '10.100.0.0'::inet + 256 + n, 'active', int4send(-n),
       {MAC.format(prefix="02:00")}, 'res-' || n, now() + interval '1 day'
FROM generate_series(1, $2::int / 2) AS n
"""
LOAD_ASSIGNMENTS = """
INSERT INTO assignments (subnet_id, ip, hostname)
SELECT $1::uuid, '10.100.0.0'::inet + 16384 + n, 'host-' || n FROM generate_series(1, $2) AS n
"""
LOAD_LEASES = f"""
INSERT INTO leases (subnet_id, ip, state, client_key, mac, hostname, expires_at)
SELECT $1::uuid, '10.100.128.0'::inet + n,
       CASE WHEN n <= $2::int THEN 'active' ELSE 'expired' END,
       int4send(n), {MAC.format(prefix="04:00")}, 'dyn-' || n, now() + interval '1 day'
FROM generate_series(1, $2::int + $3::int) AS n
"""


async def _load(conn: Any, subnet_id: uuid.UUID, scenario: str) -> None:
    reservations, assignments, leases = SCENARIOS[scenario]
    await conn.execute(LOAD_RESERVATIONS, subnet_id, reservations)
    await conn.execute(LOAD_RESERVED_LEASES, subnet_id, reservations)
    await conn.execute(LOAD_ASSIGNMENTS, subnet_id, assignments)
    await conn.execute(LOAD_LEASES, subnet_id, leases, ENDED_LEASES)
    await conn.execute("ANALYZE")


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2),
            "max": round(ordered[-1], 2)}


def _row(name: str, samples: list[float], results: dict[str, dict[str, float]]) -> str:
    results[name] = figures = _stats(samples)
    return (f"  {name:<44} p50 {figures['p50']:7.2f} ms   p95 {figures['p95']:7.2f} ms   "
            f"max {figures['max']:7.2f} ms")


async def _time(rounds: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    await call()  # warm: prepared statements, caches
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def bench(pg: postgres.PgServer, rounds: int, scenario: str) -> dict[str, Any]:
    results: dict[str, Any] = {"http": {}, "database": {}}
    name = postgres.next_name()
    await run_once(pg.dsn("postgres"), postgres.clone, name)
    config = make_config(pg.dsn(name), license={"max_managed_ips": 1_000_000})
    async with trio.open_nursery() as nursery:
        running: runtime.Running = await nursery.start(
            lambda task_status: runtime.run(config, handle_signals=False,
                                            freeze_startup_objects=True, task_status=task_status)
        )
        base = running.url("http") + "/api/v1"
        async with httpx.AsyncClient(base_url=base, timeout=60) as anon:
            token = (await anon.post("/tokens", json={"name": "bench", "role": "admin"})).json()
        headers = {"Authorization": f"Bearer {token['token']}"}
        db = await Database.connect(pg.dsn(name), min_size=1, max_size=2)
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as api:
            prefix = (await api.post("/prefixes", json={"cidr": "10.100.0.0/16"})).json()
            subnet = (await api.post("/subnets", json={
                "prefix_id": prefix["id"], "cidr": "10.100.0.0/16",
                "gateway": "10.100.0.1"})).json()
            sid = subnet["id"]
            pool = (await api.post(f"/subnets/{sid}/pools", json={
                "name": "dyn-a", "start_ip": "10.100.128.1", "end_ip": "10.100.191.255"})).json()
            await api.post(f"/subnets/{sid}/pools", json={
                "name": "dyn-b", "start_ip": "10.100.192.0", "end_ip": "10.100.255.254"})
            for start, end in (("10.100.0.2", "10.100.0.255"), ("10.100.250.0", "10.100.250.255")):
                await api.post(f"/subnets/{sid}/excludes", json={"start_ip": start, "end_ip": end})
            started = time.perf_counter()
            await db.run(_load, uuid.UUID(sid), scenario)
            loaded = time.perf_counter() - started
            usage = (await api.get(f"/subnets/{sid}/utilisation")).json()
            results["plan"] = {"used": usage["used"], "reserved": usage["reserved"],
                               "assigned": usage["assigned"], "leased": usage["leased"],
                               "ended_leases": ENDED_LEASES, "rounds": rounds}
            print(f"ipamd IPAM benchmark, {scenario}: /16 subnet, {usage['used']} used addresses "
                  f"({usage['reserved']} reserved, {usage['assigned']} assigned, "
                  f"{usage['leased']} live leases; {ENDED_LEASES} ended leases), "
                  f"loaded in {loaded:.1f} s; {rounds} rounds each; load average "
                  f"{os.getloadavg()[0]:.2f}")
            print("HTTP, end to end (loopback, auth, JSON):")
            calls: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("GET /subnets/{id}/utilisation", lambda: api.get(f"/subnets/{sid}/utilisation")),
                ("GET /pools/{id}/utilisation", lambda: api.get(f"/pools/{pool['id']}/utilisation")),
                ("GET /prefixes/{id}/utilisation",
                 lambda: api.get(f"/prefixes/{prefix['id']}/utilisation")),
                ("GET /search?q=10.100.130.7 (lease IP)",
                 lambda: api.get("/search", params={"q": "10.100.130.7"})),
                ("GET /search?q=02-00-00-00-01-2c (MAC)",
                 lambda: api.get("/search", params={"q": "02-00-00-00-01-2c"})),
                ("GET /search?q=dyn-1234 (host name prefix)",
                 lambda: api.get("/search", params={"q": "dyn-1234"})),
                ("GET /search?q=res-7 (host name prefix, many hits)",
                 lambda: api.get("/search", params={"q": "res-7"})),
                ("GET /search?q=10.100.0.0/16 (CIDR)",
                 lambda: api.get("/search", params={"q": "10.100.0.0/16"})),
                ("GET /subnets/{id}/next-free-ip", lambda: api.get(f"/subnets/{sid}/next-free-ip")),
            ]
            for label, call in calls:
                response = await call()
                assert response.status_code == 200, response.text
                print(_row(label, await _time(rounds, call), results["http"]))
            counter = iter(range(1_000_000))

            async def take() -> None:
                made = await api.post(f"/subnets/{sid}/assignments",
                                      json={"hostname": f"bench-{next(counter)}"})
                assert made.status_code == 201, made.text

            print(_row("POST assignment without ip (next free)", await _time(rounds, take),
                       results["http"]))
            print("Database unit alone (one bridge crossing, no HTTP):")
            subnet_id, pool_id = uuid.UUID(sid), uuid.UUID(pool["id"])
            units: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("utilisation.subnet", lambda: db.run(utilisation.subnet, subnet_id)),
                ("utilisation.pool", lambda: db.run(utilisation.pool, pool_id)),
                ("search (MAC)", lambda: db.run(search.run, search_terms.parse(
                    "02:00:00:00:01:2c"), None, 50)),
                ("search (host name prefix res-7)", lambda: db.run(
                    search.run, search_terms.parse("res-7"), None, 50)),
                ("nextfree.peek (lowest free)", lambda: db.run(nextfree.peek, subnet_id)),
            ]
            for label, call in units:
                print(_row(label, await _time(rounds, call), results["database"]))
        await db.close()
        running.stop.set()
    results["load_average"] = os.getloadavg()[0]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated: " + ", ".join(SCENARIOS))
    args = parser.parse_args()
    pg = postgres.start()
    results: dict[str, Any] = {}
    try:
        for scenario in args.scenarios.split(","):
            results[scenario] = run_sync(bench, pg, args.rounds, scenario)
            print()
    finally:
        pg.stop()
    out = ROOT / "bench" / "results" / f"ipam-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"figures written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
