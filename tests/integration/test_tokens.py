"""Tokens and auth (docs/security.md): bootstrap, Bearer, roles, hashing, audit, idempotency."""

from __future__ import annotations

import hashlib

import httpx
import trio

from ipamd.db.bridge import Database


async def _all_text(conn) -> str:
    """Every value of every user table, as text: where a leaked secret would show."""
    tables = await conn.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
    )
    chunks = []
    for row in tables:
        rows = await conn.fetch(f'SELECT t::text AS v FROM "{row["tablename"]}" t')
        chunks += [r["v"] for r in rows]
    return "\n".join(chunks)


async def _token_rows(conn):
    return await conn.fetch("SELECT * FROM tokens ORDER BY id")


async def test_secret_is_stored_only_as_hash_and_never_returned(admin, tokens, db: Database):
    secret = tokens["operator"]
    everything = await db.run(_all_text)
    assert secret not in everything
    assert secret[len("service_live_"):] not in everything
    rows = await db.run(_token_rows)
    digests = {bytes(r["secret_hash"]) for r in rows}
    assert hashlib.sha256(secret.encode()).digest() in digests
    listed = await admin.get("/tokens")
    assert listed.status_code == 200
    assert secret not in listed.text and "token" not in listed.json()["items"][0]
    one = await admin.get(f"/tokens/{listed.json()['items'][1]['id']}")
    assert one.status_code == 200 and secret not in one.text and "token" not in one.json()


async def test_create_and_delete_are_audited_with_before_and_after(admin):
    made = await admin.post("/tokens", json={"name": "ci", "role": "viewer"})
    assert made.status_code == 201
    token_id = made.json()["id"]
    gone = await admin.delete(f"/tokens/{token_id}")
    assert gone.status_code == 204
    audit = (await admin.get("/audit", params={"object_type": "token", "object_id": token_id})).json()
    actions = {e["action"]: e for e in audit["items"]}
    assert actions["create"]["before"] is None
    assert actions["create"]["after"]["name"] == "ci"
    assert "token" not in actions["create"]["after"]
    assert actions["delete"]["before"]["revoked"] is False
    assert actions["delete"]["after"]["revoked"] is True
    assert actions["delete"]["actor"].startswith("token:")
    # The revoked token no longer works.
    secret = made.json()["token"]
    async with httpx.AsyncClient(base_url=str(admin.base_url)) as client:
        denied = await client.get("/health", headers={"Authorization": f"Bearer {secret}"})
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "unauthorized"


async def test_roles(admin, operator, viewer):
    for client in (viewer, operator):
        refused = await client.post("/tokens", json={"name": "x", "role": "viewer"})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "forbidden"
        assert (await client.get("/tokens")).status_code == 403
    assert (await viewer.get("/health")).status_code == 200
    assert (await viewer.get("/audit")).status_code == 200


async def test_missing_or_bad_bearer_is_401(anon, tokens):
    for headers in ({}, {"Authorization": "Bearer nope"},
                    {"Authorization": "Basic abc"},
                    {"Authorization": "Bearer service_live_" + "x" * 43}):
        response = await anon.get("/health", headers=headers)
        assert response.status_code == 401, headers
        assert response.json() == {"error": {"code": "unauthorized",
                                             "message": response.json()["error"]["message"]}}
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_expired_token_is_refused(admin, anon, db: Database):
    made = await admin.post("/tokens", json={"name": "short", "role": "viewer",
                                             "expires_at": "2099-01-01T00:00:00Z"})
    assert made.status_code == 201, made.text

    async def expire(conn, token_id):
        await conn.execute("UPDATE tokens SET expires_at = now() - interval '1 second' "
                           "WHERE id = $1::uuid", token_id)

    await db.run(expire, made.json()["id"])
    response = await anon.get("/health", headers={"Authorization": f"Bearer {made.json()['token']}"})
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]
    past = await admin.post("/tokens", json={"name": "p", "role": "viewer",
                                             "expires_at": "2001-01-01T00:00:00Z"})
    assert past.status_code == 422 and "expires_at" in past.json()["error"]["message"]


async def test_token_body_validation(admin):
    cases = [
        ({"name": "x", "role": "root"}, "role"),
        ({"role": "admin"}, "name"),
        ({"name": 5, "role": "admin"}, "name"),
        ({"name": "x", "role": "admin", "colour": "red"}, "colour"),
        ({"name": "x", "role": "admin", "expires_at": "tomorrow"}, "expires_at"),
    ]
    for body, field in cases:
        response = await admin.post("/tokens", json=body)
        assert response.status_code == 422, body
        assert response.json()["error"]["code"] == "validation_error"
        assert field in response.json()["error"]["message"]


async def test_idempotency_key_on_tokens(admin, db: Database):
    body = {"name": "idem", "role": "viewer"}
    first = await admin.post("/tokens", json=body, headers={"Idempotency-Key": "k-1"})
    again = await admin.post("/tokens", json=body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    other = await admin.post("/tokens", json={"name": "idem2", "role": "viewer"},
                             headers={"Idempotency-Key": "k-1"})
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "conflict"
    # The replayed secret is not in the database in the clear.
    everything = await db.run(_all_text)
    assert first.json()["token"] not in everything


async def test_concurrent_requests_with_one_key_create_one_token(admin, db: Database):
    results = []

    async def post():
        results.append(await admin.post("/tokens", json={"name": "race", "role": "viewer"},
                                        headers={"Idempotency-Key": "race-key"}))

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(post)
    assert {r.status_code for r in results} == {201}
    assert len({r.json()["id"] for r in results}) == 1

    async def count(conn):
        return await conn.fetchval("SELECT count(*) FROM tokens WHERE name = 'race'")

    assert await db.run(count) == 1


async def test_paging_tokens(admin):
    for i in range(5):
        assert (await admin.post("/tokens", json={"name": f"p{i}", "role": "viewer"})).status_code == 201
    seen, cursor = [], None
    for _ in range(10):
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await admin.get("/tokens", params=params)).json()
        seen += [t["id"] for t in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 8  # admin, operator, viewer + 5
    for params in ({"limit": 0}, {"limit": 1001}, {"limit": "x"}, {"cursor": "garbage!"}):
        bad = await admin.get("/tokens", params=params)
        assert bad.status_code == 400, params
        assert bad.json()["error"]["code"] == "bad_request"


# --- verified tokens are cached for a few seconds (api/token_cache.py); a change still bites at once


async def _wait_listening(appliance) -> None:
    with trio.fail_after(20):  # a hang guard, not a timing
        while not appliance.token_cache.listening:
            await trio.sleep(0.01)


async def _wait_cleared(appliance, generation: int) -> None:
    with trio.fail_after(20):  # a hang guard: the NOTIFY clears it long before
        while appliance.token_cache.generation == generation:
            await trio.sleep(0.01)


async def test_a_token_in_use_is_refused_right_after_its_revoke(appliance, admin, viewer, tokens):
    await _wait_listening(appliance)
    assert (await viewer.get("/whoami")).status_code == 200
    digest = hashlib.sha256(tokens["viewer"].encode()).digest()
    assert appliance.token_cache.get(digest) is not None  # the next request needs no lookup
    listed = (await admin.get("/tokens")).json()["items"]
    viewer_id = next(t["id"] for t in listed if t["name"] == "viewer")
    assert (await admin.delete(f"/tokens/{viewer_id}")).status_code == 204
    refused = await viewer.get("/whoami")
    assert refused.status_code == 401
    assert "revoked" in refused.json()["error"]["message"]


async def _sql(conn, statement: str, name: str) -> None:
    await conn.execute(statement, name)


async def test_a_revoke_by_another_node_clears_the_cache(appliance, viewer, tokens, db: Database):
    await _wait_listening(appliance)
    assert (await viewer.get("/whoami")).status_code == 200
    digest = hashlib.sha256(tokens["viewer"].encode()).digest()
    assert appliance.token_cache.get(digest) is not None
    generation = appliance.token_cache.generation
    # Another connection, as another node's API would: only the NOTIFY tells this node.
    await db.run(_sql, "UPDATE tokens SET revoked_at = now() WHERE name = $1", "viewer")
    await _wait_cleared(appliance, generation)
    assert (await viewer.get("/whoami")).status_code == 401


async def test_a_role_change_takes_effect_on_the_notify(appliance, operator, db: Database):
    await _wait_listening(appliance)
    made = await operator.post("/prefixes", json={"cidr": "10.44.0.0/16"})
    assert made.status_code == 201
    generation = appliance.token_cache.generation
    await db.run(_sql, "UPDATE tokens SET role = 'viewer' WHERE name = $1", "operator")
    await _wait_cleared(appliance, generation)
    refused = await operator.post("/prefixes", json={"cidr": "10.45.0.0/16"})
    assert refused.status_code == 403
    assert (await operator.get("/prefixes")).status_code == 200


async def test_only_changes_that_can_refuse_a_token_notify(appliance, tokens, db: Database):
    heard = await db.listen("ipamd_tokens")
    try:
        for statement in (
            "UPDATE tokens SET last_used_at = now() WHERE name = $1",  # the API's own write
            "UPDATE tokens SET role = role, name = name WHERE name = $1",
            "UPDATE tokens SET expires_at = now() + interval '1 day' WHERE name = $1",
        ):
            await db.run(_sql, statement, "viewer")
        await db.run(_sql, "SELECT pg_notify('ipamd_tokens', $1)", "marker")
        payloads = []
        with trio.fail_after(20):  # a hang guard; notifications arrive in commit order
            async for payload in heard:
                payloads.append(payload)
                if payload == "marker":
                    break
        assert payloads == ["", "marker"]  # the expiry change only
    finally:
        await heard.release()
