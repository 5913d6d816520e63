"""Retries: receiver down then back (none lost), Retry-After, timeouts, a fix picked up."""

import datetime as dt
import os

import pytest
import trio

from tests.integration.outbox.conftest import (
    emit,
    fast_outbox,
    lease,
    make_hook,
    rows_for,
    wait_rows,
)
from tests.support.receiver import Reply


@pytest.fixture
def config_overrides(ca_file, hosts_file):
    return {"outbox": fast_outbox(ca_file, hosts_file, max_attempts=100,
                                  backoff_max_seconds=2.0)}


def _time(value):
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_receiver_down_then_back_none_lost(admin, viewer, receiver, db, nursery):
    hook = await make_hook(admin, receiver)
    receiver.stop()
    await emit(db, *[("lease.granted", lease(f"10.77.1.{i}")) for i in range(20)])
    with trio.fail_after(15):
        while True:
            rows = await rows_for(viewer, hook["id"], state="retrying")
            if len(rows) == 20 and all(r["attempts"] >= 2 for r in rows):
                break
            await trio.sleep(0.05)
    assert all("cannot connect" in r["last_error"] for r in rows)
    await receiver.start(nursery)  # same port
    delivered = await wait_rows(viewer, hook["id"], 20, "delivered")
    assert {r["id"] for r in delivered} <= {r.delivery for r in receiver.received}
    assert sorted(r.json()["ip"] for r in receiver.received) == sorted(
        f"10.77.1.{i}" for i in range(20))
    assert all(r.signature_ok for r in receiver.received)
    assert await rows_for(viewer, hook["id"], state="failed") == []


async def test_retry_after_is_honoured(admin, viewer, receiver, db):
    hook = await make_hook(admin, receiver)
    receiver.reply_next(Reply(503, [("Retry-After", "1")]))
    await emit(db, ("lease.granted", lease("10.77.1.100")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    first, second = (await viewer.get(f"/outbox/{row['id']}")).json()["history"]
    assert first["status"] == 503 and second["status"] == 200
    waited = _time(second["at"]) - _time(first["at"])
    # The schedule alone would wait 0.05 s; the receiver asked for a second.
    assert waited >= dt.timedelta(seconds=1)


async def test_a_hanging_receiver_times_out_and_is_retried(admin, viewer, receiver, db):
    hook = await make_hook(admin, receiver)
    receiver.reply_next(Reply(hang=True))
    await emit(db, ("lease.granted", lease("10.77.1.101")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    first, second = (await viewer.get(f"/outbox/{row['id']}")).json()["history"]
    assert first["error"] in ("no complete response within 1 s", "timed out (ReadTimeout)")
    assert second["status"] == 200
    assert len(receiver.received) == 2


async def test_a_fixed_secret_file_is_picked_up_by_the_next_attempt(
    admin, viewer, receiver, db, tmp_path
):
    path = tmp_path / "hook.secret"
    path.write_text("file-secret")
    os.chmod(path, 0o640)
    receiver.secrets = [b"file-secret"]
    hook = await make_hook(admin, receiver, secret_ref=f"file:{path}")
    await emit(db, ("lease.granted", lease("10.77.1.102")))
    with trio.fail_after(10):
        while not (rows := await rows_for(viewer, hook["id"], state="retrying")):
            await trio.sleep(0.05)
    assert "mode 0640" in rows[0]["last_error"]
    os.chmod(path, 0o600)
    await wait_rows(viewer, hook["id"], 1, "delivered")
    (got,) = receiver.received
    assert got.signature_ok
