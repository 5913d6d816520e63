"""The lease_events → lease_intervals fold (migration 0005), on hand-written event orders."""

from __future__ import annotations

import datetime as dt
import uuid
from importlib import resources

import asyncpg

from tests.integration.history.rows import T0, event, intervals, make_subnet

H = dt.timedelta(hours=1)
MAC = "02:00:00:00:00:01"


async def _fold(db, scenario):
    async def unit(conn: asyncpg.Connection):
        subnet = await make_subnet(conn, "10.77.10.0/24")
        await scenario(conn, subnet)
        return await intervals(conn)

    return await db.run(unit)


async def test_grant_renew_release_is_one_interval(db):
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        await event(conn, subnet, lease, "granted", "10.77.10.5", T0, mac=MAC,
                    hostname="old", expires_at=T0 + 2 * H)
        await event(conn, subnet, lease, "renewed", "10.77.10.5", T0 + H, mac=MAC,
                    hostname="new", expires_at=T0 + 3 * H)
        await event(conn, subnet, lease, "released", "10.77.10.5", T0 + 2 * H, mac=MAC)

    [only] = await _fold(db, scenario)
    assert (only["from_at"], only["to_at"], only["state"]) == (T0, T0 + 2 * H, "released")
    assert only["hostname"] == "new"  # identities as last seen
    assert only["expires_at"] == T0 + 3 * H


async def test_expiry_ends_when_the_lease_ran_out_not_when_swept(db):
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        await event(conn, subnet, lease, "granted", "10.77.10.6", T0, mac=MAC,
                    expires_at=T0 + H)
        await event(conn, subnet, lease, "expired", "10.77.10.6", T0 + 5 * H)

    [only] = await _fold(db, scenario)
    assert (only["to_at"], only["state"]) == (T0 + H, "expired")
    assert only["mac"] == MAC  # an end event without identities keeps them


async def test_decline_holds_until_probation_ends(db):
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        await event(conn, subnet, lease, "granted", "10.77.10.7", T0, mac=MAC,
                    expires_at=T0 + H)
        await event(conn, subnet, lease, "declined", "10.77.10.7", T0 + dt.timedelta(seconds=2),
                    expires_at=T0 + 24 * H)
        mid = await intervals(conn)
        assert (mid[0]["to_at"], mid[0]["state"]) == (None, "declined")
        await event(conn, subnet, lease, "expired", "10.77.10.7", T0 + 25 * H)

    [only] = await _fold(db, scenario)
    assert only["declined_at"] == T0 + dt.timedelta(seconds=2)
    assert (only["to_at"], only["state"], only["mac"]) == (T0 + 24 * H, "declined", MAC)


async def test_decline_without_grant_starts_at_the_decline(db):
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        await event(conn, subnet, lease, "declined", "10.77.10.8", T0, expires_at=T0 + H)

    [only] = await _fold(db, scenario)
    assert (only["from_at"], only["declined_at"], only["to_at"]) == (T0, T0, None)
    assert only["mac"] is None


async def test_regrant_of_the_same_lease_after_its_end_opens_a_new_interval(db):
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        await event(conn, subnet, lease, "granted", "10.77.10.9", T0, mac=MAC,
                    expires_at=T0 + H)
        await event(conn, subnet, lease, "granted", "10.77.10.9", T0 + dt.timedelta(minutes=1),
                    mac=MAC, expires_at=T0 + 2 * H)  # re-ACK: same occupancy
        await event(conn, subnet, lease, "expired", "10.77.10.9", T0 + 2 * H)
        await event(conn, subnet, lease, "granted", "10.77.10.9", T0 + 3 * H, mac=MAC,
                    expires_at=T0 + 4 * H)

    first, second = await _fold(db, scenario)
    assert (first["from_at"], first["to_at"], first["state"]) == (T0, T0 + 2 * H, "expired")
    assert (second["from_at"], second["to_at"], second["state"]) == (T0 + 3 * H, None, "active")


async def test_repeats_and_skewed_clocks_never_fail_the_commit(db):
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        # An end with nothing open (a repeat) is ignored.
        await event(conn, subnet, lease, "released", "10.77.10.10", T0)
        await event(conn, subnet, lease, "granted", "10.77.10.10", T0, mac=MAC)
        # Another node's clock runs behind: the end is clamped to the start.
        await event(conn, subnet, lease, "released", "10.77.10.10", T0 - H)
        await event(conn, subnet, lease, "released", "10.77.10.10", T0 + H)

    [only] = await _fold(db, scenario)
    assert (only["from_at"], only["to_at"], only["state"]) == (T0, T0, "released")


async def test_duid_is_stored_as_plain_lowercase_hex(db):
    async def scenario(conn, subnet):
        await event(conn, subnet, uuid.uuid4(), "granted", "10.77.10.11", T0,
                    duid="00:01:AB-cd", expires_at=T0 + H)

    [only] = await _fold(db, scenario)
    assert only["duid"] == "0001abcd"


async def test_backfill_folds_events_written_before_the_migration(db):
    sql = (resources.files("ipamd.db.migrations") / "0005_history.sql").read_text()
    backfill = sql[sql.index("-- Events written before this migration"):]
    lease = uuid.uuid4()

    async def scenario(conn, subnet):
        await conn.execute("ALTER TABLE lease_events DISABLE TRIGGER lease_events_history")
        await event(conn, subnet, lease, "granted", "10.77.10.12", T0, mac=MAC,
                    expires_at=T0 + H)
        await event(conn, subnet, lease, "released", "10.77.10.12", T0 + H)
        assert await intervals(conn) == []
        await conn.execute("ALTER TABLE lease_events ENABLE TRIGGER lease_events_history")
        await conn.execute(backfill)

    [only] = await _fold(db, scenario)
    assert (only["from_at"], only["to_at"], only["state"]) == (T0, T0 + H, "released")


async def test_one_statement_with_several_events_per_lease_folds_in_time_order(db):
    # As a bulk load (or a batch holding two events of one lease) would write them.
    a, b = uuid.uuid4(), uuid.uuid4()
    rows = [
        (T0, a, "granted", "10.77.10.20", MAC, T0 + H),
        (T0 + H, a, "renewed", "10.77.10.20", MAC, T0 + 3 * H),
        (T0 + 2 * H, a, "released", "10.77.10.20", MAC, T0 + 2 * H),
        (T0 + 3 * H, a, "granted", "10.77.10.20", MAC, T0 + 4 * H),
        (T0 + H, b, "granted", "10.77.10.21", None, T0 + 2 * H),
        (T0 + 90 * H, b, "expired", "10.77.10.21", None, None),
    ]

    async def scenario(conn, subnet):
        await conn.execute(
            """INSERT INTO lease_events (at, lease_id, event, subnet_id, ip, mac, expires_at)
               SELECT at, lease_id, event, $1, ip::inet, mac::macaddr, expires_at
               FROM unnest($2::timestamptz[], $3::uuid[], $4::text[], $5::text[], $6::text[],
                           $7::timestamptz[]) AS r(at, lease_id, event, ip, mac, expires_at)
               ORDER BY at DESC""",  # reversed on purpose: the fold orders by time itself
            subnet, *[list(column) for column in zip(*rows, strict=True)])

    found = await _fold(db, scenario)
    assert [(r["ip"], r["from_at"], r["to_at"], r["state"]) for r in found] == [
        ("10.77.10.20", T0, T0 + 2 * H, "released"),
        ("10.77.10.21", T0 + H, T0 + 2 * H, "expired"),
        ("10.77.10.20", T0 + 3 * H, None, "active"),
    ]
