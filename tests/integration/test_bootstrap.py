"""The first-token bootstrap cannot be reached by a browser (docs/security.md):
before the first token a request must name the box in its Host header, a mutating one must
carry a JSON content type, and two concurrent first mints make exactly one token."""

from __future__ import annotations

import socket

import httpx
import pytest
import trio

from ipamd.api import auth

FIRST = b'{"name": "first", "role": "admin"}'


async def _token_count(db) -> int:
    async def count(conn):
        return await conn.fetchval("SELECT count(*) FROM tokens")

    return await db.run(count)


async def test_a_text_plain_post_mints_nothing(anon, db):
    # What a form or a "simple" fetch of a web page in a browser on the box can send.
    made = await anon.post("/tokens", content=FIRST, headers={"Content-Type": "text/plain"})
    assert made.status_code == 415, made.text
    error = made.json()["error"]
    assert error["code"] == "unsupported_media_type"
    assert "Content-Type: application/json" in error["message"]
    bare = await anon.post("/tokens", content=FIRST)  # no content type at all
    assert bare.status_code == 415
    assert await _token_count(db) == 0
    ok = await anon.post("/tokens", content=FIRST,
                         headers={"Content-Type": "application/json; charset=utf-8"})
    assert ok.status_code == 201, ok.text


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.nip.io",
                                  "10.77.0.1"])
async def test_a_foreign_host_mints_nothing(anon, db, host):
    # DNS rebinding: the attacker's name resolves to 127.0.0.1, the Host header keeps it.
    made = await anon.post("/tokens", json={"name": "x", "role": "admin"},
                           headers={"Host": host})
    assert made.status_code == 403, made.text
    assert "Host header" in made.json()["error"]["message"]
    read = await anon.get("/health", headers={"Host": host})
    assert read.status_code == 403
    assert await _token_count(db) == 0


@pytest.mark.parametrize("host", ["localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.2",
                                  "console.localhost"])
async def test_names_of_the_box_are_accepted(anon, host):
    seen = await anon.get("/whoami", headers={"Host": host})
    assert seen.status_code == 200, seen.text
    assert seen.json()["bootstrap"] is True


def test_names_the_box_rules():
    assert auth.names_the_box(socket.gethostname(), [])
    assert auth.names_the_box("ipam.corp.example:8080", ["IPAM.corp.example"])
    assert not auth.names_the_box("ipam.corp.example", [])
    assert not auth.names_the_box("", [])
    assert not auth.names_the_box(None, [])
    assert auth.host_name("[::1]:80") == "::1"
    assert auth.host_name("Example.ORG.:443") == "example.org"


async def test_after_the_first_token_host_and_type_rules_do_not_apply(anon, tokens):
    bearer = {"Authorization": f"Bearer {tokens['admin']}", "Host": "ipam.example"}
    seen = await anon.get("/whoami", headers=bearer)
    assert seen.status_code == 200, seen.text


async def test_two_concurrent_first_mints_make_exactly_one_token(appliance, db):
    answers: list[httpx.Response] = []

    async def mint(name: str) -> None:
        # Each on its own connection, so the two run at once.
        async with httpx.AsyncClient(base_url=appliance.url("http") + "/api/v1") as client:
            answers.append(await client.post("/tokens", json={"name": name, "role": "admin"}))

    for _ in range(5):  # the race is tried a few times; every round must mint at most one
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mint, "a")
            nursery.start_soon(mint, "b")
        if await _token_count(db):
            break
    created = [a for a in answers if a.status_code == 201]
    assert len(created) == 1, [a.text for a in answers]
    assert await _token_count(db) == 1
    for refused in (a for a in answers if a.status_code != 201):
        # Refused by the bootstrap's lock (409) or, once the token exists, as unauthenticated.
        assert refused.status_code in (401, 409), refused.text
