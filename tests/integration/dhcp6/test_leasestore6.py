"""The DHCPv6 lease store's batch statement (``leasestore.commit6``) on the suite's Postgres,
through the committer's own sessions: grants go in trusting and a refused one is retried
careful; every change's journal row carries its binding's IA, and deriving it into history
and events reads no lease row (migration 0025); rows journaled without it (by the previous
version) still get it from their lease."""

from __future__ import annotations

import time
import uuid
from ipaddress import IPv6Address
from typing import Any

import asyncpg
import trio

from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp import leasestore
from ipamd.dhcp.leasestore import IA_NA, IA_PD, Op6, OpKind, Ops6
from ipamd.dhcp.sessions import open_commit_db
from tests.integration.dhcp6.harness import LINK, POOL, seed_v6

FIRST = int(IPv6Address(POOL[0]))
DELEGATED = IPv6Address("2001:db8:4400:300::")  # a /56 of the seeded delegation pool


def _duid(n: int) -> bytes:
    return bytes.fromhex("0003000102005e10") + n.to_bytes(2, "big")  # DUID-LL


def _na(kind: OpKind, subnet: uuid.UUID, n: int, *, at: int | None = None) -> Op6:
    address = IPv6Address(FIRST + (n if at is None else at))
    return Op6(kind, subnet, address, 128, _duid(n), n, IA_NA, preferred=300, valid=600,
               seconds=60, giaddr=LINK)


def _pd(kind: OpKind, subnet: uuid.UUID, n: int) -> Op6:
    return Op6(kind, subnet, DELEGATED, 56, _duid(n), 7, IA_PD, preferred=300, valid=600,
               giaddr=LINK)


async def _subnet(db: Database) -> uuid.UUID:
    async def seed(conn: asyncpg.Connection) -> Any:
        return (await seed_v6(conn))["subnet_id"]

    subnet: uuid.UUID = await db.transaction(seed)
    return subnet


async def _commit(db: Database, ops: list[Op6], trusting: bool = True) -> bool:
    """One batch through a committer session (its settings, its warm-up), one op a message."""
    sessions = await open_commit_db(db, 1, leasestore.warm6)
    try:
        refused: bool = await sessions.run(leasestore.commit6, [Ops6([op]) for op in ops],
                                           trusting)
        return refused
    finally:
        await sessions.close()


async def _fetch(db: Database, sql: str) -> list[dict[str, Any]]:
    async def read(conn: asyncpg.Connection) -> Any:
        return [dict(r) for r in await conn.fetch(sql)]

    rows: list[dict[str, Any]] = await db.run(read)
    return rows


async def _derived(db: Database) -> dict[str, list[dict[str, Any]]]:
    """Derive the journal, then what it became: lease_events, intervals and lease.* events
    (payloads), each in the order written."""
    await db.run(lease_events.derive_all)
    return {
        "history": await _fetch(db, "SELECT lease_id, event, iaid, ia_type, prefix_length "
                                    "FROM lease_events ORDER BY id"),
        "intervals": await _fetch(db, "SELECT lease_id, state, iaid, ia_type, prefix_length "
                                      "FROM lease_intervals ORDER BY id"),
        "events": [{"topic": e["topic"], **e["payload"]} for e in await _fetch(
            db, "SELECT topic, payload FROM events WHERE topic LIKE 'lease.%' ORDER BY id")],
    }


def _ia(op: Op6) -> tuple[int, str, int]:
    return (op.iaid, op.ia_type, op.prefix_length)


async def test_changes_journal_their_ia_and_derive_it_without_the_lease_row(
        db: Database) -> None:
    subnet = await _subnet(db)
    grants = [_na(OpKind.INSERT, subnet, 1), _na(OpKind.INSERT, subnet, 2),
              _pd(OpKind.INSERT, subnet, 3)]
    assert await _commit(db, grants) is False
    assert [(op.ok, op.event) for op in grants] == [(True, "granted")] * 3
    # Renewed, released, declined (the PD renewed), then one expires: each journaled.
    later = [_na(OpKind.ACK, subnet, 1), _na(OpKind.RELEASE, subnet, 2),
             _pd(OpKind.ACK, subnet, 3)]
    assert await _commit(db, later) is False
    assert [op.event for op in later] == ["renewed", "released", "renewed"]
    declined = [_na(OpKind.DECLINE, subnet, 1)]
    assert await _commit(db, declined) is False and declined[0].event == "declined"

    async def expire(conn: asyncpg.Connection) -> Any:
        await conn.execute("UPDATE leases SET expires_at = now() - interval '1 second', "
                           "sweep_at = now() - interval '1 second' WHERE ia_type = 'pd'")
        return await leasestore.expire_batch(conn, 10)

    ended, _ = await db.transaction(expire)
    assert [event for _, _, event in ended] == ["expired"]
    journal = await _fetch(db, "SELECT lease_id, event, iaid, ia_type, prefix_length "
                               "FROM lease_journal ORDER BY seq")
    by_lease = {op.lease_id: op for op in grants}
    assert sorted((by_lease[r["lease_id"]].iaid, r["event"], r["iaid"], r["ia_type"],
                   r["prefix_length"]) for r in journal) == [
        (1, "declined", 1, "na", 128), (1, "granted", 1, "na", 128),
        (1, "renewed", 1, "na", 128), (2, "granted", 2, "na", 128),
        (2, "released", 2, "na", 128), (7, "expired", 7, "pd", 56),
        (7, "granted", 7, "pd", 56), (7, "renewed", 7, "pd", 56)]

    # Their subnet's leases gone before deriving (as when it is deleted): nothing is lost.
    await _fetch(db, "DELETE FROM leases RETURNING lease_id")
    derived = await _derived(db)
    assert [(r["event"], r["iaid"], r["ia_type"], r["prefix_length"])
            for r in derived["history"]] == [
        (r["event"], r["iaid"], r["ia_type"], r["prefix_length"]) for r in journal]
    assert sorted((str(r["lease_id"]), r["state"], r["iaid"], r["ia_type"], r["prefix_length"])
                  for r in derived["intervals"]) == sorted(
        [(str(grants[0].lease_id), "declined", 1, "na", 128),
         (str(grants[1].lease_id), "released", 2, "na", 128),
         (str(grants[2].lease_id), "expired", 7, "pd", 56)])
    assert [(e["topic"], e["lease_id"], e["duid"], e["iaid"], e["ia_type"], e["prefix_length"])
            for e in derived["events"]] == [
        ("lease." + r["event"], str(r["lease_id"]), by_lease[r["lease_id"]].duid,
         *_ia(by_lease[r["lease_id"]])) for r in journal]


async def test_a_refused_trusting_grant_is_written_again_careful(db: Database) -> None:
    subnet = await _subnet(db)
    first = [_na(OpKind.INSERT, subnet, 1)]
    assert await _commit(db, first) is False
    # Another client at the same address (another node's grant, say) and a fresh one: the
    # trusting statement fails as a whole, the careful one writes the fresh grant alone.
    batch = [_na(OpKind.INSERT, subnet, 2, at=1), _na(OpKind.INSERT, subnet, 3)]
    assert await _commit(db, batch, trusting=True) is True
    assert [(op.ok, op.event) for op in batch] == [(False, None), (True, "granted")]
    leases = await _fetch(db, "SELECT lease_id, iaid FROM leases ORDER BY iaid")
    assert [(r["lease_id"], r["iaid"]) for r in leases] == [
        (first[0].lease_id, 1), (batch[1].lease_id, 3)]
    journal = await _fetch(db, "SELECT lease_id FROM lease_journal ORDER BY seq")
    assert [r["lease_id"] for r in journal] == [first[0].lease_id, batch[1].lease_id]


async def test_rows_journaled_without_the_ia_take_it_from_their_lease(db: Database) -> None:
    subnet = await _subnet(db)
    grants = [_na(OpKind.INSERT, subnet, 1), _pd(OpKind.INSERT, subnet, 2)]
    assert await _commit(db, grants) is False
    # As the previous version journaled them; the PD's lease is gone meanwhile.
    await _fetch(db, "UPDATE lease_journal SET iaid = NULL, ia_type = NULL, "
                     "prefix_length = NULL RETURNING seq")
    await _fetch(db, "DELETE FROM leases WHERE ia_type = 'pd' RETURNING lease_id")
    derived = await _derived(db)
    assert {(r["lease_id"], r["iaid"], r["ia_type"], r["prefix_length"])
            for r in derived["intervals"]} == {(grants[0].lease_id, 1, "na", 128),
                                               (grants[1].lease_id, None, None, None)}
    events = {e["duid"]: e for e in derived["events"]}
    na, pd = events[grants[0].duid], events[grants[1].duid]
    assert (na["duid"], na["iaid"], na["ia_type"], na["prefix_length"]) == (
        _duid(1).hex(":"), 1, "na", 128)
    assert not {"iaid", "ia_type", "prefix_length"} & set(pd)


async def test_a_warmed_session_planned_the_storm_shapes_and_wrote_nothing(
        db: Database) -> None:
    subnet = await _subnet(db)

    async def warmed(conn: asyncpg.Connection) -> tuple[list[Any], int, int]:
        await leasestore.warm6(conn)
        plans = await conn.fetch("SELECT statement, generic_plans FROM pg_prepared_statements")
        return (plans, await conn.fetchval("SELECT count(*) FROM leases"),
                await conn.fetchval("SELECT count(*) FROM lease_journal"))

    sessions = await open_commit_db(db, 1)
    try:
        plans, leases, journal = await sessions.run(warmed)
    finally:
        await sessions.close()
    planned = {row["statement"]: row["generic_plans"] for row in plans}
    for shape in leasestore.WARM_SHAPES6:
        assert planned[leasestore._commit6_sql(*shape, careful=False)] == 1
    assert (leases, journal) == (0, 0)
    grants = [_na(OpKind.INSERT, subnet, n) for n in range(3)]
    assert await _commit(db, grants) is False  # and a warmed session's first batch goes in
    assert all(op.ok and op.event == "granted" for op in grants)


async def test_a_change_s_event_and_history_row_share_one_id(db: Database) -> None:
    """dns_expand_staged finds a renamed lease's previous name as its history row with an id
    below the event's (migration 0020): the change's own row must have the event's id, also
    when deriving a batch takes longer than the millisecond of the id's clock part."""
    subnet = await _subnet(db)
    grants = [_na(OpKind.INSERT, subnet, n) for n in range(200)]
    assert await _commit(db, grants) is False
    await db.run(lease_events.derive_all)
    twins = await _fetch(db, "SELECT h.lease_id, e.payload->>'lease_id' AS event_lease "
                             "FROM lease_events h JOIN events e ON e.id = h.id")
    assert len(twins) == 200
    assert all(str(t["lease_id"]) == t["event_lease"] for t in twins)


async def test_a_renewal_rewrites_no_index_entry(db: Database) -> None:
    """A renewal changes no indexed column of leases (sweep_at stays: migration 0014), so it
    is a heap-only update. Counted from the table's statistics, which each committer
    session sends when it closes."""
    subnet = await _subnet(db)
    assert await _commit(db, [_na(OpKind.INSERT, subnet, n) for n in range(3)]) is False
    renewals = [_na(OpKind.ACK, subnet, n) for n in range(3)]
    assert await _commit(db, renewals) is False
    assert [op.event for op in renewals] == ["renewed"] * 3

    async def updates(conn: asyncpg.Connection) -> Any:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        return await conn.fetchrow("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                                   "WHERE relname = 'leases'")

    with trio.fail_after(10):
        while (counted := await db.run(updates))["n_tup_upd"] < 3:
            await trio.sleep(0.1)
    assert (counted["n_tup_upd"], counted["n_tup_hot_upd"]) == (3, 3)


async def test_new_leases_get_distinct_uuidv7_ids_of_their_grant_s_time(db: Database) -> None:
    """commit6 names its new leases itself (leasestore._v7_ids), not through the column's
    default: the ids must still be UUIDv7 (RFC 9562 §5.7) of the grant's millisecond."""
    subnet = await _subnet(db)
    before = time.time_ns() // 1_000_000
    grants = [_na(OpKind.INSERT, subnet, n) for n in range(50)]
    assert await _commit(db, grants) is False
    after = time.time_ns() // 1_000_000
    rows = await _fetch(db, "SELECT lease_id FROM leases")
    ids = {r["lease_id"] for r in rows}
    assert ids == {op.lease_id for op in grants} and len(ids) == 50
    for lease_id in ids:
        assert (lease_id.version, lease_id.variant) == (7, uuid.RFC_4122)
        assert before <= lease_id.int >> 80 <= after


async def test_a_binding_without_a_mac_has_no_leases_mac_entry(db: Database) -> None:
    """leases_mac indexes only leases with a MAC (migration 0028): a DHCPv6 binding has one
    only when its relay sent RFC 6939's option 79; a look-up by MAC still uses the index."""
    subnet = await _subnet(db)
    grants = [_na(OpKind.INSERT, subnet, n) for n in range(4)]
    grants[0].mac, grants[1].mac = "02:00:5e:10:00:01", "02:00:5e:10:00:02"
    assert await _commit(db, grants) is False

    async def entries(conn: asyncpg.Connection) -> tuple[float, str]:
        # A dead row makes VACUUM scan every index, which counts its entries (reltuples).
        await conn.execute("DELETE FROM leases WHERE lease_id = $1", grants[1].lease_id)
        await conn.execute("VACUUM leases")
        counted = await conn.fetchval("SELECT reltuples FROM pg_class WHERE relname = $1",
                                      "leases_mac")
        async with conn.transaction():
            await conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in await conn.fetch(
                "EXPLAIN SELECT lease_id FROM leases WHERE mac = '02:00:5e:10:00:01'"))
        return counted, plan

    counted, plan = await db.run(entries)
    assert counted == 1
    assert "leases_mac" in plan
