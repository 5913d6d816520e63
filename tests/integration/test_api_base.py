"""The API's base behaviour: the error envelope everywhere, body limits, request ids, roles."""

from __future__ import annotations

import httpx
import pytest
from quart import Quart

from ipamd.api.app import API_PREFIX, all_routes, create_app
from ipamd.api.router import ROLES
from ipamd.config import parse
from ipamd.state import AppState


def _is_envelope(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


async def test_unknown_path_and_method(admin):
    _is_envelope(await admin.get("/nothing-here"), 404, "not_found")
    _is_envelope(await admin.get("/tokens/not-a-uuid"), 404, "not_found")
    _is_envelope(await admin.get("/tokens/01a2006f-dc5e-7d72-b2ce-a0c93da8db8b"), 404, "not_found")
    response = await admin.put("/health")
    _is_envelope(response, 405, "method_not_allowed")
    assert "GET" in response.headers["Allow"]
    async with httpx.AsyncClient(base_url=str(admin.base_url).removesuffix("/api/v1")) as root:
        _is_envelope(await root.get("/definitely/not/here"), 404, "not_found")


async def test_malformed_and_oversized_bodies(admin):
    bad = await admin.post("/tokens", content=b'{"name": "x", "role":', headers={"content-type": "application/json"})
    _is_envelope(bad, 400, "bad_request")
    _is_envelope(await admin.post("/tokens", content=b"\xff\xfe"), 400, "bad_request")
    _is_envelope(await admin.post("/tokens", json=[1, 2]), 422, "validation_error")
    huge = b'{"name": "' + b"x" * 2_000_000 + b'", "role": "viewer"}'
    _is_envelope(await admin.post("/tokens", content=huge), 413, "payload_too_large")
    listed = (await admin.get("/tokens")).json()["items"]
    assert {t["name"] for t in listed} == {"admin", "operator", "viewer"}


async def test_request_id_is_echoed_or_made(admin):
    mine = await admin.get("/health", headers={"X-Request-Id": "abc-123"})
    assert mine.headers["X-Request-Id"] == "abc-123"
    made = await admin.get("/health", headers={"X-Request-Id": "bad id with spaces"})
    assert made.headers["X-Request-Id"] != "bad id with spaces"
    assert len(made.headers["X-Request-Id"]) == 32


async def test_health_reports_schema_version(admin):
    body = (await admin.get("/health")).json()
    assert body["status"] == "ok" and body["database"] == "ok"
    assert isinstance(body["schema_version"], int) and body["schema_version"] >= 1


async def test_openapi_document_is_served_and_lists_every_route(anon):
    doc = (await anon.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    for route in all_routes():
        operation = doc["paths"][route.path][route.method.lower()]
        assert operation["x-required-role"] == route.role


def test_every_api_rule_declares_a_role():
    """A route added to the app without a declaration (and so without a role) fails here."""
    state = AppState(config=parse({}), db=None)  # type: ignore[arg-type]
    app: Quart = create_app(state)
    declared = {route.endpoint: route for route in all_routes()}
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith(API_PREFIX) or rule.rule == API_PREFIX + "/openapi.json":
            continue
        assert rule.endpoint in declared, f"{rule.rule} is served without a declared role"
        assert declared[rule.endpoint].role in ROLES


@pytest.fixture
def broken_app() -> Quart:
    state = AppState(config=parse({"limits": {}}), db=None)  # type: ignore[arg-type]
    app = create_app(state)

    async def explode() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    app.add_url_rule("/explode", "explode", explode)
    return app


async def test_unexpected_errors_are_500_in_the_envelope_without_details(broken_app):
    client = broken_app.test_client()
    response = await client.get("/explode")
    assert response.status_code == 500
    body = await response.get_json()
    assert body["error"]["code"] == "internal"
    assert "hunter2" not in body["error"]["message"]
    assert "Traceback" not in body["error"]["message"]
