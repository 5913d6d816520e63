"""The console's files: served at / on both faces, without a token, with a strict CSP."""

from __future__ import annotations

import httpx
import pytest

from ipamd import runtime
from ipamd.api import console
from tests.conftest import make_config


@pytest.fixture
def config_overrides() -> dict:
    return {}


async def test_files_served_with_headers(appliance: runtime.Running, tokens: dict) -> None:
    async with httpx.AsyncClient(base_url=appliance.url("http")) as client:
        index = await client.get("/")
        assert index.status_code == 200
        assert index.headers["content-type"] == "text/html; charset=utf-8"
        assert index.headers["content-security-policy"] == console.CSP
        assert "script-src 'self'" in console.CSP and "unsafe" not in console.CSP
        assert index.headers["x-content-type-options"] == "nosniff"
        assert index.headers["referrer-policy"] == "no-referrer"
        assert "set-cookie" not in index.headers
        assert b'<script type="module" src="js/main.js">' in index.content
        assert b"<script>" not in index.content  # no inline script
        etag = index.headers["etag"]
        again = await client.get("/", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        js = await client.get("/js/main.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        css = await client.get("/app.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        for path in ("/nope.js", "/js/../../config.py", "/js/%2e%2e/api/app.py",
                     "/..%2fapi%2fapp.py", "/console.py", "/js/"):
            missing = await client.get(path)
            assert missing.status_code == 404, path
            assert "set-cookie" not in missing.headers
        # The API is unchanged beside it.
        api = await client.get("/api/v1/health")
        assert api.status_code == 401


async def test_public_face_serves_the_console(appliance: runtime.Running) -> None:
    public = [b for b in appliance.binds if b.startswith("https://")]
    assert public, appliance.binds
    async with httpx.AsyncClient(base_url=public[0], verify=False) as client:
        index = await client.get("/")
        assert index.status_code == 200
        assert index.headers["content-security-policy"] == console.CSP


def test_console_can_be_switched_off(tmp_path) -> None:
    from ipamd.api.app import create_app
    from ipamd.state import AppState

    config = make_config("postgresql:///unused", api={"console_enabled": False})
    app = create_app(AppState(config=config, db=None))  # type: ignore[arg-type]
    assert not [r for r in app.url_map.iter_rules() if r.endpoint.startswith("console_")]
    config = make_config("postgresql:///unused")
    app = create_app(AppState(config=config, db=None))  # type: ignore[arg-type]
    assert any(r.rule == "/" for r in app.url_map.iter_rules())


async def test_whoami(appliance: runtime.Running) -> None:
    base = appliance.url("http") + "/api/v1"
    async with httpx.AsyncClient(base_url=base) as client:
        # Before the first token: the host itself is admin (the console offers the bootstrap).
        before = await client.get("/whoami")
        assert before.status_code == 200
        assert before.json() == {"token_id": None, "name": None, "role": "admin",
                                 "loopback": True, "bootstrap": True}
        made = (await client.post("/tokens", json={"name": "ops", "role": "operator"})).json()
        me = await client.get("/whoami", headers={"Authorization": f"Bearer {made['token']}"})
        assert me.json() == {"token_id": made["id"], "name": "ops", "role": "operator",
                             "loopback": True, "bootstrap": False}
        assert (await client.get("/whoami")).status_code == 401
    public = next(b for b in appliance.binds if b.startswith("https://"))
    async with httpx.AsyncClient(base_url=public + "/api/v1", verify=False) as client:
        assert (await client.get("/whoami")).status_code == 401
