"""Replay every failed delivery a filter selects (Work's "replay all failed", docs/console.md), and
the count the console's confirmation names."""

import pytest

from ipamd.outbox import work
from tests.integration.outbox.conftest import emit, fast_outbox, lease, make_hook, wait_rows
from tests.support.receiver import Reply


@pytest.fixture
def config_overrides(ca_file, hosts_file):
    return {"outbox": fast_outbox(ca_file, hosts_file)}


async def test_replay_all_failed_of_a_filter(admin, operator, viewer, receiver, db):
    hook = await make_hook(admin, receiver)
    receiver.reply_next(*[Reply(500, body=b"down")] * 9)  # three rows, three attempts each
    await emit(db, *[("lease.granted", lease(f"10.77.0.{n}")) for n in (1, 2, 3)])
    failed = await wait_rows(viewer, hook["id"], 3, "failed")
    assert {r["webhook_name"] for r in failed} == {hook["name"]}  # named for every role

    counted = await viewer.get("/outbox/count", params={"kind": "webhook", "state": "failed"})
    assert counted.status_code == 200, counted.text
    assert counted.json() == {"count": 3, "replayable": 3}
    assert (await viewer.get("/outbox/count", params={"kind": "dns"})).json() == {
        "count": 0, "replayable": 0}

    assert (await viewer.post("/outbox/replay")).status_code == 403
    bad = await operator.post("/outbox/replay", params={"state": "delivered"})
    assert bad.status_code == 400 and "state" in bad.json()["error"]["message"]
    # Another kind's filter takes none of them.
    assert (await operator.post("/outbox/replay", params={"kind": "dns"})).json() == {
        "replayed": 0, "more": False}

    # In batches (two rows here, as the route does with REPLAY_BATCH): "more" says come back.
    async def two(conn):
        return await work.replay_all(conn, "token:test", work.Filters(kind="webhook"), 2)

    assert await db.transaction(two) == {"replayed": 2, "more": True}
    second = await operator.post("/outbox/replay", params={"webhook_id": hook["id"],
                                                            "state": "failed"})
    assert second.status_code == 200, second.text
    assert second.json() == {"replayed": 1, "more": False}
    done = await wait_rows(viewer, hook["id"], 3, "delivered")
    assert {r["id"] for r in done} == {r["id"] for r in failed}
    assert all(r["attempts"] == 1 for r in done)

    entries = (await viewer.get("/audit", params={"object_type": "outbox",
                                                  "action": "replay"})).json()["items"]
    assert sorted(e["object_id"] for e in entries) == sorted(r["id"] for r in failed)
    assert all(e["before"]["state"] == "failed" and e["after"]["state"] == "pending"
               for e in entries)
    assert (await viewer.get("/outbox/count", params={"state": "failed"})).json()["count"] == 0
