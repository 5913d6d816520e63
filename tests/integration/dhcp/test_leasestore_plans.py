"""The batch statements stay point lookups: with the lease table's statistics as the DHCP
server's LeaseStats keeps them (its light ANALYZE: a few columns, a small sample), the
generic plan of every statement shape the committer prepares (a lone op's among them) finds
each op's lease through an index, never by reading the table or hashing it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import leasestore, leasestore4, leasetable
from ipamd.dhcp.leasestats import PLANNED_COLUMNS, LeaseStats, analyze, table_rows
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.sessions import open_commit_db
from tests.integration.dhcp.harness import seed_subnet
from tests.unit.dhcp.packets import ip

LEASES = 2000
BASE = ip("127.77.8.0")


@pytest.fixture
async def subnet(db: Database) -> uuid.UUID:
    async def seed(conn: Any) -> Any:
        return (await seed_subnet(conn, pools=[("127.77.8.0", "127.77.31.255")]))["subnet_id"]

    return await db.transaction(seed)


def _key(n: int) -> bytes:
    return b"\x01\x02" + n.to_bytes(5, "big")


async def _fill(db: Database, subnet: uuid.UUID, count: int) -> None:
    for start in range(0, count, 256):
        grants = [Op(OpKind.INSERT, subnet, BASE + n, _key(n), 3600, mac=_key(n)[1:].hex())
                  for n in range(start, min(count, start + 256))]
        await db.run(leasestore.commit, grants)
        assert all(op.ok for op in grants)
        renewals = [Op(OpKind.ACK, subnet, op.ip, op.client_key, 3600) for op in grants]
        await db.run(leasestore.commit, renewals)
        assert all(op.ok for op in renewals)


def _shapes() -> list[str]:
    """Every statement the committer can send, and the expiry sweep's."""
    shapes = [leasestore4._SUPERSEDE, leasestore4._BLOCKERS, leasetable._EXPIRE]
    for mask in range(1, 8):
        present = tuple(bool(mask & (1 << k)) for k in range(3))
        for careful in (True, False) if present[2] else (True,):  # inserts trusting or not
            shapes.append(leasestore4._main_sql(present, careful=careful))  # type: ignore[arg-type]
            if sum(present) == 1:  # a lone op: its part's values, not arrays
                shapes.append(leasestore4._main_sql(present, True, careful))  # type: ignore[arg-type]
    return shapes


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += _nodes(child)
    return found


async def _generic_plans(conn: Any, sql: str) -> list[dict[str, Any]]:
    # A named SQL PREPARE (not asyncpg's): EXPLAIN EXECUTE shows its generic plan.
    await conn.execute(f"PREPARE shape AS {sql}")
    try:
        count = await conn.fetchval("SELECT cardinality(parameter_types) "
                                    "FROM pg_prepared_statements WHERE name = 'shape'")
        text = await conn.fetchval(
            f"EXPLAIN (FORMAT JSON) EXECUTE shape({', '.join(['NULL'] * count)})")
    finally:
        await conn.execute("DEALLOCATE shape")
    return _nodes(json.loads(text)[0]["Plan"])


async def test_every_statement_shape_looks_leases_up_by_index(db: Database,
                                                              subnet: uuid.UUID) -> None:
    await _fill(db, subnet, LEASES)
    sessions = await open_commit_db(db, 1)
    try:
        async def check(conn: Any) -> list[tuple[str, str]]:
            await analyze(conn)
            bad = []
            for sql in _shapes():
                for node in await _generic_plans(conn, sql):
                    kind = node["Node Type"]
                    if node.get("Relation Name") == "leases" and kind not in (
                            "Index Scan", "Index Only Scan", "ModifyTable"):
                        bad.append((kind, sql.split("AS (")[0][:60]))
                    if kind == "Hash Join" or kind == "Merge Join":
                        bad.append((kind, sql.split("AS (")[0][:60]))
            return bad

        assert await sessions.run(check) == []
    finally:
        await sessions.close()


async def test_lease_stats_analyze_a_fresh_table_and_again_as_it_doubles(
        db: Database, subnet: uuid.UUID) -> None:
    stats = LeaseStats(db, min_step=100)
    async with trio.open_nursery() as nursery:
        await nursery.start(stats.run)
        with trio.fail_after(10):
            while stats.analyses < 1:  # never analyzed: at once
                await trio.sleep(0.05)
        assert await db.run(table_rows) == 0
        await _fill(db, subnet, 150)
        stats.added(150)
        with trio.fail_after(10):
            while stats.analyses < 2:
                await trio.sleep(0.05)
        assert await db.run(table_rows) == 150
        stats.added(120)  # 120 < 150 rows at the last analysis: not yet
        await trio.sleep(0.3)
        assert stats.analyses == 2
        stats.added(40)
        with trio.fail_after(10):
            while stats.analyses < 3:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()


async def test_lease_stats_analyze_only_the_planned_columns_from_a_small_sample(
        db: Database, subnet: uuid.UUID) -> None:
    async def no_autovacuum(conn: Any) -> None:  # what pg_stats shows is this analysis only
        await conn.execute("ALTER TABLE leases SET (autovacuum_enabled = false)")

    await db.run(no_autovacuum)
    await _fill(db, subnet, LEASES)

    async def analyzed(conn: Any) -> tuple[float, dict[str, Any]]:
        rows = await analyze(conn)
        found = await conn.fetch(
            "SELECT attname, array_length(histogram_bounds, 1) AS bounds, "
            "array_length(most_common_vals, 1) AS common "
            "FROM pg_stats WHERE tablename = 'leases'")
        return rows, {r["attname"]: r for r in found}

    rows, stats = await db.run(analyzed)
    assert rows == LEASES  # every page read: the row count is exact at this size
    assert set(stats) == set(PLANNED_COLUMNS)  # the other columns are autovacuum's
    # A tenth of the default target (100): at most 11 histogram bounds, 10 common values
    # (a full ANALYZE of these 2,000 leases gives the unique columns 101 bounds).
    for column in PLANNED_COLUMNS:
        assert (stats[column]["bounds"] or 0) <= 11, column
        assert (stats[column]["common"] or 0) <= 10, column
    assert max(stats[c]["bounds"] or 0 for c in ("ip", "client_key", "sweep_at")) == 11


async def test_lease_stats_leave_a_table_they_do_not_own_to_autovacuum(db: Database,
                                                                     dsn: str) -> None:
    async def make_role(conn: Any) -> None:
        await conn.execute("DROP ROLE IF EXISTS ipamd_test_reader")
        await conn.execute("CREATE ROLE ipamd_test_reader LOGIN")

    await db.run(make_role)
    scheme, rest = dsn.split("://", 1)
    reader = await Database.connect(f"{scheme}://ipamd_test_reader@{rest.split('@', 1)[1]}",
                                    min_size=1, max_size=1)
    try:
        stats = LeaseStats(reader, min_step=1)
        with trio.fail_after(10):
            await stats.run()  # never analyzed, not allowed to: gives up instead of retrying
        assert stats.analyses == 0
    finally:
        await reader.close()

        async def drop_role(conn: Any) -> None:
            await conn.execute("DROP ROLE ipamd_test_reader")

        await db.run(drop_role)


async def test_a_warmed_session_has_planned_the_storm_shapes_and_written_nothing(
        db: Database, subnet: uuid.UUID) -> None:
    async def warmed(conn: Any) -> tuple[list[Any], int, int]:
        await leasestore.warm(conn)
        plans = await conn.fetch("SELECT statement, generic_plans FROM pg_prepared_statements")
        return (plans, await conn.fetchval("SELECT count(*) FROM leases"),
                await conn.fetchval("SELECT count(*) FROM lease_journal"))

    sessions = await open_commit_db(db, 1)
    try:
        plans, leases, journal = await sessions.run(warmed)
    finally:
        await sessions.close()
    planned = {row["statement"]: row["generic_plans"] for row in plans}
    for present in leasestore4.WARM_SHAPES:
        assert planned[leasestore4._main_sql(present, careful=False)] == 1
    assert (leases, journal) == (0, 0)
    # And a warmed session's first batch goes in as any other.
    grants = [Op(OpKind.INSERT, subnet, BASE + n, _key(n), 3600) for n in range(3)]
    sessions = await open_commit_db(db, 1, leasestore.warm)
    try:
        await sessions.run(leasestore.commit, grants)
    finally:
        await sessions.close()
    assert all(op.ok and op.event == "granted" for op in grants)
