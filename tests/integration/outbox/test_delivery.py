"""Deliveries to a real HTTPS receiver that checks every signature over the raw bytes."""

import hashlib
import hmac
import json
import os

import pytest

from tests.integration.outbox.conftest import (
    SECRET_ENV,
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
    return {"outbox": fast_outbox(ca_file, hosts_file)}


async def test_signed_delivery_carries_every_header_and_the_payload(admin, viewer, receiver,
                                                                    db):
    hook = await make_hook(admin, receiver)
    payload = lease("10.77.0.10")
    await emit(db, ("lease.granted", payload))
    (row,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    (got,) = receiver.received
    assert got.method == "POST" and got.path == "/hook"
    assert got.signature_ok and got.standard_ok
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-service-topic"] == "lease.granted"
    assert got.headers["x-service-delivery"] == got.headers["webhook-id"] == row["id"]
    expected = "sha256=" + hmac.new(receiver.secrets[0], got.body, hashlib.sha256).hexdigest()
    assert got.headers["x-service-signature"] == expected
    assert got.headers["host"] == f"hook.test:{receiver.port}"
    assert got.json() == payload
    detail = (await viewer.get(f"/outbox/{row['id']}")).json()
    assert detail["payload"] == payload and detail["attempts"] == 1
    assert detail["delivered_at"] is not None and detail["next_attempt_at"] is None
    (attempt,) = detail["history"]
    assert attempt["status"] == 200 and attempt["error"] is None and attempt["response"] == "ok"


async def test_topics_filtering(admin, viewer, receiver, db):
    leases = await make_hook(admin, receiver, name="leases", topics="lease.granted",
                             url=receiver.url("/leases", "hook.test"))
    audits = await make_hook(admin, receiver, name="audits", topics="ipam.audit",
                             url=receiver.url("/audits", "hook.test"))
    await emit(db, ("lease.granted", lease("10.77.0.11")), ("lease.expired", lease("10.77.0.12")),
               ("lease.granted", lease("10.77.0.13")))
    # An IPAM mutation (creating a token) emits ipam.audit.
    await admin.post("/tokens", json={"name": "ci", "role": "viewer"})
    await wait_rows(viewer, leases["id"], 2, "delivered")
    # Two audit entries: the audits webhook's own creation, then the token.
    await wait_rows(viewer, audits["id"], 2, "delivered")
    by_path = {}
    for got in receiver.received:
        assert got.signature_ok
        by_path.setdefault(got.path, []).append(got)
    assert sorted(r.json()["ip"] for r in by_path["/leases"]) == ["10.77.0.11", "10.77.0.13"]
    assert {r.topic for r in by_path["/leases"]} == {"lease.granted"}
    assert {r.topic for r in by_path["/audits"]} == {"ipam.audit"}
    bodies = sorted((r.json() for r in by_path["/audits"]), key=lambda b: b["id"])
    for body in bodies:
        assert set(body) == {"id", "at", "actor", "action", "object_type", "object_id",
                             "before", "after"}
    assert [(b["object_type"], b["action"]) for b in bodies] == [
        ("webhook", "create"), ("token", "create")]
    assert bodies[1]["after"]["name"] == "ci" and bodies[1]["before"] is None
    assert len(await rows_for(viewer, leases["id"])) == 2  # nothing for lease.expired


async def test_a_302_is_a_failure_and_never_followed(admin, viewer, receiver, db):
    hook = await make_hook(admin, receiver)
    receiver.reply_next(Reply(302, [("Location", receiver.url("/elsewhere", "hook.test"))]))
    await emit(db, ("lease.granted", lease("10.77.0.20")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    assert [r.path for r in receiver.received] == ["/hook", "/hook"]
    history = (await viewer.get(f"/outbox/{row['id']}")).json()["history"]
    assert [h["status"] for h in history] == [302, 200]
    assert "redirect (not followed)" in history[0]["error"]
    assert receiver.received[0].delivery == receiver.received[1].delivery == row["id"]


async def test_failed_after_the_last_attempt_then_replay_delivers(
    admin, operator, viewer, receiver, db
):
    hook = await make_hook(admin, receiver)
    receiver.reply_next(*[Reply(500, body=b"receiver broken")] * 3)
    await emit(db, ("lease.granted", lease("10.77.0.30")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "failed")
    assert row["attempts"] == 3 and row["last_status"] == 500
    assert row["last_error"] == "HTTP 500 Internal Server Error"
    detail = (await viewer.get(f"/outbox/{row['id']}")).json()
    assert [h["attempt"] for h in detail["history"]] == [1, 2, 3]
    assert detail["history"][0]["response"] == "receiver broken"

    denied = await viewer.post(f"/outbox/{row['id']}/replay")
    assert denied.status_code == 403
    replayed = await operator.post(f"/outbox/{row['id']}/replay")
    assert replayed.status_code == 200, replayed.text
    assert replayed.json()["state"] in ("pending", "delivered")
    (done,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    assert done["id"] == row["id"] and done["attempts"] == 1
    assert len(receiver.received) == 4 and all(r.signature_ok for r in receiver.received)
    again = await operator.post(f"/outbox/{row['id']}/replay")
    assert again.status_code == 409 and "only failed rows" in again.json()["error"]["message"]


async def test_name_that_resolves_to_a_forbidden_address_at_delivery(
    admin, viewer, receiver, db, hosts_file
):
    # DNS rebinding: hook.test was fine when the webhook was saved, then moves to metadata.
    hook = await make_hook(admin, receiver)
    hosts_file.write_text("169.254.169.254   hook.test\n")
    await emit(db, ("lease.granted", lease("10.77.0.40")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "failed")
    assert row["last_error"] == (
        "refused at delivery: hook.test resolves to 169.254.169.254, "
        "a cloud metadata service address"
    )
    assert receiver.received == []


async def test_url_rules_are_checked_again_at_delivery(admin, viewer, receiver, db):
    # A row saved before a rule existed (written straight into the table here).
    hook = await make_hook(admin, receiver)

    async def downgrade(conn):
        await conn.execute("UPDATE webhooks SET url = $1 WHERE id = $2",
                           "https://[::ffff:169.254.169.254]/", hook["id"])

    await db.transaction(downgrade)
    await emit(db, ("lease.granted", lease("10.77.0.41")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "failed")
    assert "IPv6 form of 169.254.169.254" in row["last_error"]
    assert receiver.received == []


async def test_rotation_signs_with_the_new_secret_in_one_value(admin, viewer, receiver, db,
                                                               monkeypatch):
    # One sha256=<hex> value; the receiver accepts old and new meanwhile (docs/webhooks.md).
    monkeypatch.setenv("IPAMD_TEST_NEW_SECRET", "the-new-secret")
    old_secret = receiver.secrets[0]
    receiver.secrets = [old_secret, b"the-new-secret"]  # step 2 of docs/webhooks.md
    hook = await make_hook(admin, receiver, secret_ref="env:IPAMD_TEST_NEW_SECRET",
                           previous_secret_ref=f"env:{SECRET_ENV}")
    await emit(db, ("lease.granted", lease("10.77.0.50")))
    await wait_rows(viewer, hook["id"], 1, "delivered")
    (got,) = receiver.received
    assert got.signature_ok and got.standard_ok
    new = "sha256=" + hmac.new(b"the-new-secret", got.body, hashlib.sha256).hexdigest()
    assert got.headers["x-service-signature"] == new
    # The Standard Webhooks header keeps both, as its own format allows.
    assert len(got.headers["webhook-signature"].split()) == 2
    receiver.secrets = [b"the-new-secret"]  # a receiver that already dropped the old one
    await emit(db, ("lease.granted", lease("10.77.0.51")))
    await wait_rows(viewer, hook["id"], 2, "delivered")
    assert receiver.received[1].signature_ok and receiver.received[1].standard_ok


async def test_secret_problems_fail_with_a_clear_error_and_no_request(
    admin, viewer, receiver, db, tmp_path
):
    loose = tmp_path / "loose.secret"
    loose.write_text("file-secret\n")
    os.chmod(loose, 0o644)
    by_file = await make_hook(admin, receiver, name="file", secret_ref=f"file:{loose}")
    by_env = await make_hook(admin, receiver, name="env", secret_ref="env:IPAMD_TEST_UNSET")
    await emit(db, ("lease.granted", lease("10.77.0.60")))
    (file_row,) = await wait_rows(viewer, by_file["id"], 1, "failed")
    (env_row,) = await wait_rows(viewer, by_env["id"], 1, "failed")
    assert file_row["attempts"] == 3  # retried, not given up at once
    # What is wrong, never where the secret lives (viewers read it; the server log names it).
    assert file_row["last_error"] == (
        "the secret could not be read: its file has mode 0644; it must be 0600 (readable by its "
        "owner only) (see the server log)"
    )
    assert env_row["last_error"] == ("the secret could not be read: its environment variable "
                                     "is not set on this node (see the server log)")
    assert receiver.received == []
    # Fixed on the node: Replay delivers, signed with the file's secret.
    os.chmod(loose, 0o600)
    receiver.secrets = [b"file-secret"]
    assert (await admin.post(f"/outbox/{file_row['id']}/replay")).status_code == 200
    await wait_rows(viewer, by_file["id"], 1, "delivered")
    assert receiver.received[0].signature_ok


async def test_secret_never_reaches_the_database_or_the_api(admin, viewer, receiver, db,
                                                            hook_secret):
    hook = await make_hook(admin, receiver)
    await emit(db, ("lease.granted", lease("10.77.0.70")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "delivered")

    async def everything(conn):
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        text = []
        for t in tables:
            text += [r["v"] for r in await conn.fetch(f'SELECT x::text AS v FROM "{t[0]}" x')]
        return "\n".join(text)

    assert hook_secret.decode() not in await db.run(everything)
    for path in ("/webhooks", f"/webhooks/{hook['id']}", "/outbox", f"/outbox/{row['id']}"):
        assert hook_secret.decode() not in (await admin.get(path)).text


async def test_work_view_filters_and_paging(admin, viewer, receiver, db):
    hook = await make_hook(admin, receiver, topics="*")
    await wait_rows(viewer, hook["id"], 1, "delivered")  # its own creation (ipam.audit)
    receiver.reply_next(*[Reply(500)] * 3)
    await emit(db, ("lease.granted", lease("10.77.0.80")))
    await wait_rows(viewer, hook["id"], 1, "failed")
    await emit(db, *[("lease.renewed", lease(f"10.77.0.{i}")) for i in range(81, 84)])
    await wait_rows(viewer, hook["id"], 4, "delivered")
    assert len(await rows_for(viewer, hook["id"], topic="lease.renewed")) == 3
    assert len(await rows_for(viewer, hook["id"], topic="ipam.audit")) == 1
    assert len(await rows_for(viewer, hook["id"], kind="dns")) == 0
    (failed,) = await rows_for(viewer, hook["id"], state="failed")
    assert failed["topic"] == "lease.granted"
    everything = await rows_for(viewer, hook["id"])
    assert [r["id"] for r in everything] == sorted((r["id"] for r in everything), reverse=True)
    first = (await viewer.get("/outbox", params={"limit": 2})).json()
    second = (await viewer.get("/outbox", params={"limit": 2, "cursor": first["next_cursor"]}))
    ids = [r["id"] for r in first["items"] + second.json()["items"]]
    assert ids == [r["id"] for r in everything[:4]]
    # The three renewals share one transaction, hence one created_at.
    newest = everything[0]["created_at"]
    since = await rows_for(viewer, hook["id"], **{"from": newest})
    assert [r["id"] for r in since] == [r["id"] for r in everything[:3]]
    before = await rows_for(viewer, hook["id"], to=newest)
    assert [r["id"] for r in before] == [r["id"] for r in everything[3:]]
    for params in ({"state": "bogus"}, {"kind": "smtp"}, {"topic": "lease.*"},
                   {"webhook_id": "nope"}, {"from": "2030-01-01T00:00:00"}, {"limit": 0},
                   {"cursor": "!!"}):
        bad = await viewer.get("/outbox", params=params)
        assert bad.status_code == 400, (params, bad.text)
        assert bad.json()["error"]["code"] == "bad_request"
    assert (await viewer.get("/outbox/0192f000-0000-7000-8000-00000000dead")).status_code == 404
    assert (await viewer.get("/outbox/not-a-uuid")).status_code == 404


async def test_large_reply_is_read_only_up_to_the_cap(admin, viewer, receiver, db):
    hook = await make_hook(admin, receiver)
    receiver.reply_next(Reply(200, body=b"x" * 3_000_000))
    await emit(db, ("lease.granted", lease("10.77.0.90")))
    (row,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    (attempt,) = (await viewer.get(f"/outbox/{row['id']}")).json()["history"]
    assert attempt["response"] == "x" * 512


async def test_disabled_webhook_queues_nothing(admin, viewer, receiver, db):
    hook = await make_hook(admin, receiver, enabled=False)
    await emit(db, ("lease.granted", lease("10.77.0.95")))
    enabled = await admin.patch(f"/webhooks/{hook['id']}", json={"enabled": True})
    assert enabled.status_code == 200
    await emit(db, ("lease.granted", lease("10.77.0.96")))
    await wait_rows(viewer, hook["id"], 1, "delivered")
    assert json.loads(receiver.received[0].body)["ip"] == "10.77.0.96"
    assert len(await rows_for(viewer, hook["id"])) == 1
