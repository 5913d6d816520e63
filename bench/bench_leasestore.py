#!/usr/bin/env python3
"""Where PostgreSQL's share of a DORA goes: the lease store's grant statement alone, and
the derivation of its history row and event from the lease journal.

A private, durable PostgreSQL cluster (fsync and synchronous commit on, as the appliance
runs) gets a fresh, migrated database per variant, with one /16 subnet. The bench commits
new leases (Acks of new clients, each with a MAC and a host name) through the DHCP
committer's own code, ``leasestore.commit``, on a session with the committer's settings,
in batches of --batch, and prints the CPU the PostgreSQL backend spent per grant (from
/proc, so it counts only that session's process) and the wall time per grant; then it
derives the journal rows those grants wrote (``core.lease_events.derive``, as the deriver
does, DERIVE_BATCH at a time) and prints that CPU per grant too; then it renews those leases
(the same clients' Acks again, in the same batches) and prints the backend's CPU per renewal,
for its commit and for deriving its journal row (the fold extends the open interval).

Variants take one part away (``expiry_index`` adds one), so the difference to ``base`` is
that part's cost (they are measurements, not configurations: every part is there for a
feature):
  base              the schema as migrated
  no_history        without the lease_events → lease_intervals fold (occupancy history)
  no_gist           without the "As of" map's GiST index on intervals
  no_interval_idx   without the eight identity indexes on intervals (history look-ups)
  no_lease_idx      without the leases' API indexes (by subnet, address, MAC) and the sweep's
  no_fanout         without the events table's three statement triggers (outbox, DNS, alerts)
  no_triggers       no_history and no_fanout together
  expiry_index      one part more: an index on expires_at, as leases had before migration
                    0014 (a renewal then rewrites an entry in every index of leases)
(the history fold and the fan-out run when deriving, not in the grant's commit).
Each variant runs --rounds times, alternating, and the median is printed. No peer: the
comparison is between variants of one run: a DORA's PostgreSQL CPU.

``--crossing`` measures the other side instead: the wall time of one lone grant's commit
(--grants of them, --gap-ms apart, as at light load) from plain asyncio, and from trio through
ipamd's crossing (``db.bridge.Database`` over the committer's own session, as the DHCP
server commits), alternating --rounds times; the medians and their difference, which is what
the crossing adds to every Ack at light load.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

import asyncpg
import trio
from tests.integration.dhcp.harness import seed_subnet
from tests.support import postgres

from ipamd.core import lease_events
from ipamd.db import bridge
from ipamd.dhcp import leasestore
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.sessions import SESSION_SETTINGS, open_commit_db

NET = (10 << 24) | (77 << 16)  # 10.77.0.0/16
WARM = 400  # grants before measuring (plans prepared, caches warm)

VARIANTS: dict[str, list[str]] = {
    "base": [],
    "no_history": ["DROP TRIGGER lease_events_history ON lease_events"],
    "no_gist": ["DROP INDEX lease_intervals_subnet_period"],
    "no_interval_idx": [f"DROP INDEX lease_intervals_{name}" for name in (
        "ip", "mac", "client_id", "duid", "hostname", "fqdn", "circuit", "remote")],
    "no_lease_idx": [f"DROP INDEX leases_{name}" for name in ("subnet", "ip", "mac", "sweep")],
    "no_fanout": ["DROP TRIGGER events_outbox_fanout ON events",
                  "DROP TRIGGER events_outbox_fanout_dns ON events",
                  "DROP TRIGGER events_zz_alert_fanout ON events"],
}
# Both derived writes away: what the lease, lease_events and events rows cost on their own.
VARIANTS["no_triggers"] = VARIANTS["no_history"] + VARIANTS["no_fanout"]
VARIANTS["expiry_index"] = ["CREATE INDEX leases_expires ON leases (expires_at) "
                            "WHERE state IN ('offered', 'active', 'declined')"]


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def grants(subnet_id: object, first: int, count: int, kind: OpKind = OpKind.INSERT) -> list[Op]:
    ops = []
    for k in range(first, first + count):
        mac = bytes((2, 0, k >> 24 & 255, k >> 16 & 255, k >> 8 & 255, k & 255))
        ops.append(Op(kind, subnet_id, NET + 256 + k, b"\x01" + mac, 3600,  # type: ignore[arg-type]
                      mac=mac.hex(":"), hostname=f"host-{k}", giaddr=NET + 2))
    return ops


async def _commit_all(conn: asyncpg.Connection, subnet_id: object, kind: OpKind, event: str,
                      batch: int, count: int, gap: float) -> float:
    """The bench's clients' ops of ``kind``, in batches; seconds spent in ``commit``."""
    wall = 0.0
    for first in range(WARM, WARM + count, batch):
        ops = grants(subnet_id, first, batch, kind)
        if gap:
            await asyncio.sleep(gap)  # an idle database between batches (light load)
        started = time.perf_counter()
        await leasestore.commit(conn, ops)
        wall += time.perf_counter() - started
        if not all(op.ok and op.event == event for op in ops):
            raise RuntimeError(f"an op was refused, or not {event}")
    return wall


async def _derive_all(conn: asyncpg.Connection) -> None:
    while await lease_events.derive(conn):
        pass


async def _seeded(pg: postgres.PgServer) -> tuple[str, object]:
    """A fresh migrated database with the bench's subnet: (its name, the subnet's id); the
    caller drops it (``_dropped``)."""
    admin = await asyncpg.connect(pg.dsn("postgres"))
    name = postgres.next_name()
    try:
        await postgres.clone(admin, name)
    finally:
        await admin.close()
    try:
        conn = await asyncpg.connect(pg.dsn(name))
        try:
            return name, (await seed_subnet(conn, "10.77.0.0/16"))["subnet_id"]
        finally:
            await conn.close()
    except BaseException:
        await _dropped(pg, name)
        raise


async def _dropped(pg: postgres.PgServer, name: str) -> None:
    admin = await asyncpg.connect(pg.dsn("postgres"))
    try:
        await postgres.drop(admin, name)
    finally:
        await admin.close()


async def measure(pg: postgres.PgServer, variant: str, batch: int, count: int,
                  gap: float = 0.0) -> tuple[float, float, float, float, float]:
    """(commit backend CPU µs, commit wall µs, derive backend CPU µs) per grant, then
    (commit, derive) backend CPU µs per renewal."""
    name, subnet_id = await _seeded(pg)
    try:
        conn = await asyncpg.connect(pg.dsn(name), server_settings=SESSION_SETTINGS)
        try:
            for statement in VARIANTS[variant]:
                await conn.execute(statement)
            pid = await conn.fetchval("SELECT pg_backend_pid()")
            await leasestore.commit(conn, grants(subnet_id, 0, WARM))
            await lease_events.derive_all(conn)
            spent = [backend_cpu(pid)]  # the backend's CPU after each part
            wall = await _commit_all(conn, subnet_id, OpKind.INSERT, "granted", batch, count, gap)
            spent.append(backend_cpu(pid))
            await _derive_all(conn)
            spent.append(backend_cpu(pid))
            await _commit_all(conn, subnet_id, OpKind.ACK, "renewed", batch, count, gap)
            spent.append(backend_cpu(pid))
            await _derive_all(conn)
            spent.append(backend_cpu(pid))
        finally:
            await conn.close()
    finally:
        await _dropped(pg, name)
    done = count // batch * batch
    granted, derived, renewed, folded = (b - a for a, b in itertools.pairwise(spent))
    return (1e6 * granted / done, 1e6 * wall / done, 1e6 * derived / done,
            1e6 * renewed / done, 1e6 * folded / done)


async def _lone_asyncio(dsn: str, subnet_id: object, first: int, count: int,
                        gap: float) -> list[float]:
    conn = await asyncpg.connect(dsn, server_settings=SESSION_SETTINGS)
    try:
        await leasestore.warm(conn)
        walls = []
        for k in range(first, first + count):
            ops = grants(subnet_id, k, 1)
            await asyncio.sleep(gap)
            started = time.perf_counter()
            await leasestore.commit(conn, ops)
            walls.append(time.perf_counter() - started)
        return walls
    finally:
        await conn.close()


async def _lone_trio(dsn: str, subnet_id: object, first: int, count: int,
                     gap: float) -> list[float]:
    async with bridge.asyncio_loop():
        db = await bridge.Database.connect(dsn, min_size=1, max_size=1)
        sessions = await open_commit_db(db, 1, leasestore.warm)
        try:
            walls = []
            for k in range(first, first + count):
                ops = grants(subnet_id, k, 1)
                await trio.sleep(gap)
                started = time.perf_counter()
                await sessions.run(leasestore.commit, ops)
                walls.append(time.perf_counter() - started)
            return walls
        finally:
            await sessions.close()
            await db.close()


def crossing(pg: postgres.PgServer, count: int, rounds: int, gap: float) -> None:
    """Print the median lone-commit wall time from asyncio and through the crossing."""
    name, subnet_id = asyncio.run(_seeded(pg))
    dsn = pg.dsn(name)
    medians: dict[str, list[float]] = {"asyncio": [], "trio crossing": []}
    first = WARM
    try:
        for _ in range(rounds):
            walls = asyncio.run(_lone_asyncio(dsn, subnet_id, first, count, gap))
            medians["asyncio"].append(statistics.median(walls))
            first += count
            walls = trio.run(_lone_trio, dsn, subnet_id, first, count, gap)
            medians["trio crossing"].append(statistics.median(walls))
            first += count
    finally:
        asyncio.run(_dropped(pg, name))
    for side, values in medians.items():
        print(f"  {side:14s} median lone-commit wall µs: {1e6 * statistics.median(values):6.0f}"
              f"   (rounds: {', '.join(f'{1e6 * v:.0f}' for v in values)})")
    added = statistics.median(medians["trio crossing"]) - statistics.median(medians["asyncio"])
    print(f"  the crossing adds {1e6 * added:.0f} µs a lone commit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=40, help="grants per statement")
    parser.add_argument("--grants", type=int, default=8_000, help="grants measured per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per variant (median)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--gap-ms", type=float, default=0.0,
                        help="idle time before each batch (light load: cold caches)")
    parser.add_argument("--crossing", action="store_true",
                        help="lone commits from asyncio against through ipamd's crossing")
    args = parser.parse_args(argv)
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or not 1 <= args.batch <= 1000 or args.grants < args.batch:
        parser.error(f"unknown variants {unknown}" if unknown else "batch 1..1000, grants ≥ batch")
    if args.crossing:
        print(f"lease store: {args.grants} lone grants a round, {args.gap_ms:g} ms apart, "
              f"durable PostgreSQL, load {os.getloadavg()[0]:.1f}", flush=True)
        pg = postgres.start(durable=True)
        try:
            crossing(pg, args.grants, args.rounds, args.gap_ms / 1000)
        finally:
            pg.stop()
        return 0
    print(f"lease store: {args.grants} grants in batches of {args.batch}, durable PostgreSQL, "
          f"{args.gap_ms:g} ms idle before each, load {os.getloadavg()[0]:.1f}", flush=True)
    pg = postgres.start(durable=True)
    try:
        runs: dict[str, list[tuple[float, float, float, float, float]]] = {n: [] for n in names}
        for _ in range(args.rounds):
            for variant in names:
                runs[variant].append(asyncio.run(measure(pg, variant, args.batch, args.grants,
                                                           args.gap_ms / 1000)))
    finally:
        pg.stop()
    def total(figures: tuple[float, float, float, float, float]) -> float:
        return figures[0] + figures[2]

    base = statistics.median(map(total, runs["base"])) if "base" in runs else None
    print(f"  {'variant':18s} {'commit CPU µs':>13s} {'commit wall µs':>14s} "
          f"{'derive CPU µs':>13s} {'total vs base':>13s} {'renew CPU µs':>12s} "
          f"{'derive µs':>9s}   (per grant; per renewal)")
    for variant, figures in runs.items():
        cpu = statistics.median(f[0] for f in figures)
        wall = statistics.median(f[1] for f in figures)
        derive = statistics.median(f[2] for f in figures)
        renew = statistics.median(f[3] for f in figures)
        fold = statistics.median(f[4] for f in figures)
        diff = f"{statistics.median(map(total, figures)) - base:+13.1f}" if base is not None else ""
        print(f"  {variant:18s} {cpu:13.1f} {wall:14.1f} {derive:13.1f} {diff:>13s} {renew:12.1f} "
              f"{fold:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
