"""Audit: entries with before/after and their ipam.audit events; filters; retention."""

from __future__ import annotations

import contextlib
import datetime as dt

from ipamd.api.idempotency import purge_expired
from ipamd.core import audit
from ipamd.db.bridge import Database
from ipamd.workers.housekeeping import sweep_once


async def test_record_writes_entry_and_event_in_one_go(db: Database):
    async def unit(conn):
        entry = await audit.record(conn, "tester", "update", "thing", "42",
                                   {"a": 1}, {"a": 2})
        event = await conn.fetchrow("SELECT topic, payload FROM events ORDER BY id DESC LIMIT 1")
        return entry, event

    entry, event = await db.transaction(unit)
    assert event["topic"] == "ipam.audit"
    payload = event["payload"]
    assert payload["id"] == str(entry["id"])
    assert payload["before"] == {"a": 1} and payload["after"] == {"a": 2}
    assert set(payload) == {"id", "at", "actor", "action", "object_type", "object_id",
                            "before", "after"}
    # The event's time is written as the API writes times (RFC 3339, UTC, "Z").
    assert payload["at"].endswith("Z")
    assert dt.datetime.fromisoformat(payload["at"]) == entry["at"]


async def test_rolled_back_mutation_leaves_no_audit(db: Database):
    class Boom(Exception):
        pass

    async def unit(conn):
        await audit.record(conn, "tester", "create", "thing", "1", None, {"x": 1})
        raise Boom

    with contextlib.suppress(Boom):
        await db.transaction(unit)

    async def count(conn):
        return (await conn.fetchval("SELECT count(*) FROM audit_log WHERE actor = 'tester'"),
                await conn.fetchval("SELECT count(*) FROM events"))

    assert await db.run(count) == (0, 0)


async def test_filters_and_paging(admin, viewer):
    for i in range(3):
        assert (await admin.post("/tokens", json={"name": f"a{i}", "role": "viewer"})).status_code == 201
    everything = (await viewer.get("/audit", params={"object_type": "token"})).json()["items"]
    assert len(everything) == 6  # admin (bootstrap), operator, viewer (fixture) + 3
    assert everything[-1]["actor"] == "bootstrap:loopback"
    assert [e["id"] for e in everything] == sorted((e["id"] for e in everything), reverse=True)
    actor = everything[0]["actor"]
    mine = (await viewer.get("/audit", params={"actor": actor, "limit": 2})).json()
    assert len(mine["items"]) == 2 and mine["next_cursor"]
    rest = (await viewer.get("/audit", params={"actor": actor, "cursor": mine["next_cursor"]})).json()
    assert {e["id"] for e in rest["items"]}.isdisjoint({e["id"] for e in mine["items"]})
    future = (await viewer.get("/audit", params={"from": "2999-01-01T00:00:00Z"})).json()
    assert future["items"] == []
    naive = await viewer.get("/audit", params={"from": "2020-01-01T00:00:00"})
    assert naive.status_code == 400
    assert (await viewer.get("/audit", params={"to": "yesterday"})).status_code == 400
    for loose in ("0.5", "1700000000", "2026-11-21"):
        refused = await viewer.get("/audit", params={"to": loose})
        assert refused.status_code == 400, loose
        assert "to" in refused.json()["error"]["message"]


async def test_retention_sweep_removes_only_old_entries(db: Database):
    async def seed(conn):
        await audit.record(conn, "old", "create", "thing", "1", None, {})
        await audit.record(conn, "new", "create", "thing", "2", None, {})
        await conn.execute("UPDATE audit_log SET at = now() - interval '400 days' WHERE actor = 'old'")

    await db.transaction(seed)
    removed, _ = await db.run(sweep_once, 365, 86400, purge_expired)
    assert removed == 1

    async def actors(conn):
        return [r["actor"] for r in await conn.fetch("SELECT actor FROM audit_log")]

    assert await db.run(actors) == ["new"]
