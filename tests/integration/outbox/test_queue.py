"""The queue in SQL: fan-out trigger, NOTIFY at commit, claims (SKIP LOCKED, timeout),
outcomes, Replay, webhook deletion and retention."""

import datetime as dt
import uuid

import asyncpg
import pytest
import trio

from ipamd.core import audit
from ipamd.core.errors import Conflict, NotFound
from ipamd.outbox import queue, webhooks, work
from ipamd.outbox.queue import Outcome

NODE = "test-node"


def hook(name, topics=("*",), **extra):
    return {"name": name, "url": "https://hook.test/x", "secret_ref": "env:HOOK_SECRET",
            "topics": list(topics), **extra}


async def _create_hook(conn, values):
    return await webhooks.create(conn, "test", values)


async def _emit(conn, topics_and_payloads):
    await conn.execute(
        "INSERT INTO events (topic, payload) SELECT * FROM unnest($1::text[], $2::jsonb[])",
        [t for t, _ in topics_and_payloads], [p for _, p in topics_and_payloads],
    )


async def _rows(conn):
    return [dict(r) for r in await conn.fetch("SELECT * FROM outbox ORDER BY id")]


async def _sql(conn, statement, *args):
    return await conn.fetch(statement, *args)


def outcome(job, ok, **fields):
    return Outcome(job_id=job.id, claim=job.claim, attempt=job.attempt, ok=ok,
                   started=dt.datetime.now(dt.UTC), duration_ms=1.0, **fields)


async def test_no_webhook_no_rows(db):
    await db.transaction(_emit, [("lease.granted", {"ip": "10.77.0.5"})] * 3)
    assert await db.run(_rows) == []


async def test_fanout_one_row_per_matching_webhook(db):
    every = await db.transaction(_create_hook, hook("every"))
    leases = await db.transaction(_create_hook, hook("leases", ["lease.granted"]))
    await db.transaction(_create_hook, hook("off", enabled=False))
    await db.transaction(_sql, "DELETE FROM outbox")  # the webhook creations' audit events
    await db.transaction(_emit, [
        ("lease.granted", {"n": 1}), ("lease.granted", {"n": 2}), ("lease.expired", {"n": 3}),
    ])
    rows = await db.run(_rows)
    pairs = sorted((str(r["webhook_id"]), r["topic"]) for r in rows)
    assert pairs == sorted([
        (str(every["id"]), "lease.granted"), (str(every["id"]), "lease.granted"),
        (str(every["id"]), "lease.expired"),
        (str(leases["id"]), "lease.granted"), (str(leases["id"]), "lease.granted"),
    ])
    assert {r["kind"] for r in rows} == {"webhook"}
    assert {r["state"] for r in rows} == {"pending"}
    assert all(r["attempts"] == 0 for r in rows)


async def test_audit_entries_fan_out_as_ipam_audit(db):
    only_audit = await db.transaction(_create_hook, hook("audit", ["ipam.audit"]))
    await db.transaction(_sql, "DELETE FROM outbox")
    await db.transaction(audit.record, "tester", "create", "prefix", "p-1", None, {"cidr": "x"})
    (row,) = await db.run(_rows)
    assert row["topic"] == "ipam.audit" and row["webhook_id"] == only_audit["id"]


async def test_notify_once_at_commit(db):
    await db.transaction(_create_hook, hook("every"))
    notifications = await db.listen(queue.CHANNEL)
    try:
        async def two_statements(conn):
            await _emit(conn, [("lease.granted", {"n": 1})])
            await _emit(conn, [("lease.renewed", {"n": 2})])

        await db.transaction(two_statements)
        with trio.fail_after(5):
            assert await notifications.receive() == "webhook"
        with trio.move_on_after(0.3):
            extra = await notifications.receive()
            pytest.fail(f"a second notification arrived: {extra!r}")
    finally:
        await notifications.release()


async def _queue_n(db, n, topic="lease.granted"):
    await db.transaction(_create_hook, hook(f"h-{uuid.uuid4()}", [topic]))
    await db.transaction(_emit, [(topic, {"n": i}) for i in range(n)])


async def test_skip_locked_a_second_claimer_never_waits_nor_gets_the_same_rows(db):
    await _queue_n(db, 6)

    async def two_claimers(conn):
        other = await asyncpg.connect(db.dsn)
        try:
            await other.execute("SET statement_timeout = '5s'")
            async with conn.transaction():
                first = await queue.claim(conn, ["webhook"], 4, 30, "a")
                # conn's transaction still holds its row locks here.
                rows = await other.fetch(
                    """SELECT id FROM outbox WHERE state = 'pending'
                       ORDER BY next_attempt_at LIMIT 10 FOR UPDATE SKIP LOCKED"""
                )
                second = [r["id"] for r in rows]
            return [j.id for j in first], second
        finally:
            await other.close()

    first, second = await db.run(two_claimers)
    assert len(first) == 4 and len(second) == 2
    assert not set(first) & set(second)


async def test_concurrent_claimers_share_the_rows_without_overlap(db):
    await _queue_n(db, 30)
    claimed: list[uuid.UUID] = []

    async def claimer():
        while True:
            jobs = await db.transaction(queue.claim, ["webhook"], 3, 30, "n")
            if not jobs:
                return
            claimed.extend(j.id for j in jobs)

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(claimer)
    assert len(claimed) == 30 and len(set(claimed)) == 30


async def test_abandoned_claim_comes_back_and_the_stale_outcome_is_ignored(db):
    await _queue_n(db, 1)
    (first,) = await db.transaction(queue.claim, ["webhook"], 10, 0.3, "crashed")
    assert first.attempt == 1
    assert await db.transaction(queue.claim, ["webhook"], 10, 0.3, "other") == []
    await trio.sleep(0.5)
    (again,) = await db.transaction(queue.claim, ["webhook"], 10, 30, "other")
    assert again.id == first.id and again.attempt == 2 and again.claim != first.claim
    # The first worker wakes up late: its outcome must not overwrite the new claim's.
    stale = await db.transaction(queue.record_outcomes, [outcome(first, False, error="late",
                                                                  delay_seconds=1)], 12, NODE)
    assert stale == {}
    done = await db.transaction(queue.record_outcomes, [outcome(again, True, status=200)], 12,
                                NODE)
    assert done == {again.id: "delivered"}
    detail = await db.run(work.get, again.id)
    assert detail["state"] == "delivered" and detail["delivered_at"] is not None
    assert [h["attempt"] for h in detail["history"]] == [1, 2]  # both attempts are history


async def test_outcomes_retry_then_fail_at_the_last_attempt(db):
    await _queue_n(db, 1)
    max_attempts = 2
    (job,) = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    states = await db.transaction(queue.record_outcomes, [
        outcome(job, False, status=500, error="HTTP 500", delay_seconds=60)], max_attempts, NODE)
    assert states == {job.id: "retrying"}
    row = await db.run(work.get, job.id)
    assert row["next_attempt_at"] > dt.datetime.now(dt.UTC) + dt.timedelta(seconds=50)
    assert row["last_status"] == 500 and row["last_error"] == "HTTP 500"
    # Not due yet: nothing to claim.
    assert await db.transaction(queue.claim, ["webhook"], 1, 30, NODE) == []
    await db.transaction(_sql, "UPDATE outbox SET next_attempt_at = now()")
    (job2,) = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    states = await db.transaction(queue.record_outcomes, [
        outcome(job2, False, error="timed out", delay_seconds=60)], max_attempts, NODE)
    assert states == {job.id: "failed"}
    row = await db.run(work.get, job.id)
    assert row["next_attempt_at"] is None and row["attempts"] == 2


async def test_final_outcome_fails_at_once(db):
    await _queue_n(db, 1)
    (job,) = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    states = await db.transaction(queue.record_outcomes, [
        outcome(job, False, error="webhook is disabled", final=True)], 12, NODE)
    assert states == {job.id: "failed"}


async def test_replay_requeues_a_failed_row_and_is_audited(db):
    await _queue_n(db, 1)
    (job,) = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    with pytest.raises(Conflict) as caught:
        await db.transaction(work.replay, "op", job.id)
    assert "only failed rows" in caught.value.message
    await db.transaction(queue.record_outcomes, [outcome(job, False, error="x", final=True)],
                         12, NODE)
    after = await db.transaction(work.replay, "token:op", job.id)
    assert after["state"] == "pending" and after["attempts"] == 0
    entry = await db.run(_sql, "SELECT * FROM audit_log WHERE action = 'replay'")
    assert entry[0]["actor"] == "token:op" and entry[0]["object_id"] == str(job.id)
    assert entry[0]["before"]["state"] == "failed" and entry[0]["after"]["state"] == "pending"
    (again,) = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    assert again.id == job.id and again.attempt == 1
    with pytest.raises(NotFound):
        await db.transaction(work.replay, "op", uuid.uuid4())


async def test_deleting_a_webhook_fails_its_queue_and_keeps_history(db):
    made = await db.transaction(_create_hook, hook("gone", ["lease.granted"]))
    await db.transaction(_emit, [("lease.granted", {"n": 1})])
    await db.transaction(webhooks.delete, "admin", made["id"])
    (row,) = [r for r in await db.run(_rows) if r["webhook_id"] == made["id"]]
    assert row["state"] == "failed" and row["last_error"] == "the webhook was deleted"
    with pytest.raises(Conflict) as caught:
        await db.transaction(work.replay, "op", row["id"])
    assert "was deleted" in caught.value.message


async def test_a_claimed_row_of_a_deleted_webhook_is_failed_not_delivered(db):
    made = await db.transaction(_create_hook, hook("soon-gone", ["lease.granted"]))
    await db.transaction(_emit, [("lease.granted", {"n": 1})])
    await db.transaction(_sql, "DELETE FROM webhooks WHERE id = $1", made["id"])
    (job,) = await db.transaction(queue.claim, ["webhook"], 5, 30, NODE)
    assert job.webhook_state == "deleted" and job.url is None


async def test_purge_removes_old_finished_rows_and_orphan_events(db):
    await _queue_n(db, 2)
    jobs = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    await db.transaction(queue.record_outcomes, [outcome(jobs[0], True, status=200)], 12, NODE)
    await db.transaction(_sql, "UPDATE outbox SET updated_at = now() - interval '40 days'")
    await db.transaction(_sql, "UPDATE events SET created_at = now() - interval '40 days'")
    removed = await db.transaction(queue.purge, 30)
    rows = await db.run(_rows)
    assert len(rows) == 1 and rows[0]["state"] == "pending"  # queued work is never purged
    events = await db.run(_sql, "SELECT id FROM events")
    assert [e["id"] for e in events] == [rows[0]["event_id"]]
    assert removed >= 2


async def test_outcome_text_with_nul_is_stored_safely(db):
    await _queue_n(db, 1)
    (job,) = await db.transaction(queue.claim, ["webhook"], 1, 30, NODE)
    await db.transaction(queue.record_outcomes, [
        outcome(job, False, error="bad\x00reply", response="x\x00" * 5000, delay_seconds=1)],
        12, NODE)
    detail = await db.run(work.get, job.id)
    assert detail["last_error"] == "bad\ufffdreply"
    assert len(detail["history"][0]["response"]) == queue.TEXT_LIMIT
