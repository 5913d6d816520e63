"""A worker that dies mid-delivery: the row is delivered later (at least once).

Two ways to die: a clean stop (the claim is handed back at once) and a real crash — a
second appliance process, killed with SIGKILL while its request is in flight, whose claim
comes back after the claim timeout.
"""

import json
import os
import signal
import subprocess
import sys

import trio

from ipamd.outbox import scheduler, webhooks
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.outbox.conftest import SECRET_ENV, emit, fast_outbox, lease
from tests.support.receiver import Reply


async def _row(conn):
    return dict(await conn.fetchrow(
        """SELECT id, state, attempts, claim, claimed_by, next_attempt_at > now() AS held
           FROM outbox"""))


async def _history(conn):
    return [dict(r) for r in await conn.fetch("SELECT * FROM outbox_attempts ORDER BY at")]


async def _hook(db, receiver):
    return await db.transaction(webhooks.create, "test", {
        "name": "crash", "url": receiver.url(host="hook.test"),
        "secret_ref": f"env:{SECRET_ENV}", "topics": ["lease.granted"],
    })


def _state(db, dsn, ca_file, hosts_file, **outbox):
    config = make_config(dsn, outbox=fast_outbox(ca_file, hosts_file, **outbox))
    return AppState(config=config, db=db)


async def _wait_delivered(db, timeout=20):
    with trio.fail_after(timeout):
        while (row := await db.run(_row))["state"] != "delivered":
            await trio.sleep(0.05)
    return row


async def test_cancelled_mid_delivery_hands_the_claim_back(db, dsn, receiver, ca_file,
                                                           hosts_file):
    await _hook(db, receiver)
    receiver.reply_next(Reply(hang=True))
    state = _state(db, dsn, ca_file, hosts_file, request_timeout_seconds=30,
                   claim_timeout_seconds=60)
    async with trio.open_nursery() as nursery:
        await nursery.start(scheduler.run, state)
        await emit(db, ("lease.granted", lease("10.77.2.1")))
        await receiver.wait_for(1)
        nursery.cancel_scope.cancel()  # the worker dies while the request is in flight
    row = await db.run(_row)
    assert row["state"] == "pending" and row["attempts"] == 0 and row["claim"] is None
    async with trio.open_nursery() as nursery:
        await nursery.start(scheduler.run, state)
        row = await _wait_delivered(db)
        nursery.cancel_scope.cancel()
    assert [r.delivery for r in receiver.received] == [str(row["id"])] * 2
    assert all(r.signature_ok for r in receiver.received)


async def test_killed_appliance_process_row_delivered_later(
    db, dsn, receiver, ca_file, hosts_file, tmp_path, hook_secret
):
    await _hook(db, receiver)
    receiver.reply_next(Reply(hang=True))
    await emit(db, ("lease.granted", lease("10.77.2.2")))
    outbox = fast_outbox(ca_file, hosts_file, request_timeout_seconds=2.0,
                         claim_timeout_seconds=3.0)
    config = tmp_path / "node-b.toml"
    config.write_text("\n".join([
        f"state_dir = {json.dumps(str(tmp_path))}",
        'node_name = "node-b"',
        "[database]", f"dsn = {json.dumps(dsn)}", "pool_min = 1", "pool_max = 4",
        "[api]", "public_enabled = false", 'loopback_listen = "127.0.0.1:0"',
        "[dhcp]", "enabled = false",
        "[logging]", "access_log = false",
        "[outbox]", *(f"{k} = {json.dumps(v)}" for k, v in outbox.items()),
    ]) + "\n")
    log = open(tmp_path / "node-b.log", "wb")  # noqa: SIM115 - closed below
    node_b = subprocess.Popen(
        [sys.executable, "-m", "ipamd", "--config", str(config), "run"],
        stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, SECRET_ENV: hook_secret.decode()},
    )
    try:
        with trio.fail_after(30):
            while not receiver.received:
                assert node_b.poll() is None, (tmp_path / "node-b.log").read_text()
                await trio.sleep(0.02)
        os.kill(node_b.pid, signal.SIGKILL)  # mid-delivery: the request is in flight
        node_b.wait(timeout=10)
    finally:
        if node_b.poll() is None:
            node_b.kill()
            node_b.wait(timeout=10)
        log.close()
    row = await db.run(_row)
    assert row["state"] == "pending" and row["attempts"] == 1
    assert row["claimed_by"].startswith("node-b:") and row["held"]
    assert await db.run(_history) == []  # node B never lived to record its attempt

    state = _state(db, dsn, ca_file, hosts_file)
    async with trio.open_nursery() as nursery:
        await nursery.start(scheduler.run, state)
        row = await _wait_delivered(db)
        nursery.cancel_scope.cancel()
    assert row["attempts"] == 2
    assert [r.delivery for r in receiver.received] == [str(row["id"])] * 2
    (attempt,) = await db.run(_history)
    assert attempt["status"] == 200 and attempt["attempt"] == 2
