"""Hostile inputs over HTTP, against the live appliance: each answers a clear 4xx."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest

from tests.integration.ipam.helpers import created, error_of, subnet


async def _raw_post(client: httpx.AsyncClient, path: str, body: bytes) -> httpx.Response:
    return await client.post(path, content=body, headers={"Content-Type": "application/json"})


async def _healthy(client: httpx.AsyncClient) -> None:
    assert (await client.get("/health")).status_code == 200


async def test_item1_huge_integer_literal_is_422(admin: httpx.AsyncClient) -> None:
    body = b'{"cidr":"10.9.0.0/16","zz":' + b"9" * 5000 + b"}"
    message = error_of(await _raw_post(admin, "/prefixes", body), 422, "validation_error")
    assert "out of range" in message
    assert (await admin.get("/prefixes", params={"cidr": "10.9.0.0/16"})).json()["items"] == []


@pytest.mark.parametrize("body", [b"[" * 1000 + b"]" * 1000, b"[" * 100_000,
                                  b'{"a":' * 20_000])
async def test_item2_deep_nesting_is_400(admin: httpx.AsyncClient, body: bytes) -> None:
    message = error_of(await _raw_post(admin, "/prefixes", body), 400, "bad_request")
    assert "nested deeper than 64" in message
    await _healthy(admin)


@pytest.mark.parametrize(("path", "param"), [
    ("/audit", "object_type"), ("/audit", "object_id"), ("/audit", "actor"),
    ("/audit", "action"), ("/leases", "hostname"), ("/tenants", "name"),
    ("/prefixes", "cidr"), ("/subnets", "cidr"), ("/history", "hostname"),
    ("/search", "q"), ("/tokens", "cursor"),
])
async def test_item3_nul_in_a_query_value_is_400(
    admin: httpx.AsyncClient, path: str, param: str
) -> None:
    message = error_of(await admin.get(f"{path}?{param}=a%00b"), 400, "bad_request")
    assert message.startswith(f"{param}:")


async def test_item3_invalid_utf8_in_a_query_is_not_a_500(admin: httpx.AsyncClient) -> None:
    response = await admin.get("/tenants?name=%ff%fe")
    assert response.status_code == 200  # decoded with U+FFFD: a name that matches nothing
    assert response.json()["items"] == []


async def test_item4_token_name_with_nul_or_controls_is_422(admin: httpx.AsyncClient) -> None:
    for name in ("a\u0000b", "a\u0001b", "tab\tname"):
        message = error_of(await admin.post("/tokens", json={"name": name, "role": "viewer"}),
                           422, "validation_error")
        assert message.startswith("name:"), message
    # A lone surrogate, escaped in the JSON text (httpx would refuse to encode one).
    body = b'{"name":"a\\ud800","role":"viewer"}'
    assert error_of(await _raw_post(admin, "/tokens", body), 422,
                    "validation_error").startswith("name:")


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00",
                                  "10000-01-01T00:00:00Z"])
async def test_item5_expires_at_out_of_range_is_422(admin: httpx.AsyncClient, when: str) -> None:
    response = await admin.post("/tokens", json={"name": "t", "role": "viewer",
                                                 "expires_at": when})
    assert error_of(response, 422, "validation_error").startswith("expires_at:")


async def test_item5_audit_and_outbox_times_out_of_range_are_400(
    admin: httpx.AsyncClient,
) -> None:
    for path in ("/audit", "/outbox"):
        for name in ("from", "to"):
            response = await admin.get(path, params={name: "9999-12-31T23:59:59-14:00"})
            assert error_of(response, 400, "bad_request").startswith(name), response.text


def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("raw", [
    b'["2020-01-01T00:00:00Z", 1e30]',
    b'["2020-01-01T00:00:00Z", 99999999999999999999999]',
    b'["9999-12-31T23:59:59-14:00", 1]',
    b'["0001-01-01T00:00:00+14:00", 1]',
    b"[" * 5000,
])
async def test_item6_forged_history_cursor_is_400(admin: httpx.AsyncClient, raw: bytes) -> None:
    response = await admin.get("/history", params={"ip": "10.0.0.1", "cursor": _cursor(raw)})
    assert "invalid cursor" in error_of(response, 400, "bad_request")


async def test_item6_history_times_at_the_edges_are_400(admin: httpx.AsyncClient) -> None:
    s = await subnet(admin, "10.20.1.0/24")
    response = await admin.get(f"/subnets/{s['id']}/history",
                               params={"at": "9999-12-31T23:00:00Z", "tz": "Pacific/Kiritimati"})
    assert "out of range" in error_of(response, 400, "bad_request")
    response = await admin.get("/history", params={"ip": "10.0.0.1",
                                                   "from": "0001-01-01T00:00:00+14:00"})
    assert "out of range" in error_of(response, 400, "bad_request")


async def test_item7_unknown_ddns_server_id_is_refused(admin: httpx.AsyncClient) -> None:
    ghost = str(uuid.uuid4())
    response = await admin.post("/prefixes", json={"cidr": "10.20.0.0/16"})
    prefix_id = created(response)["id"]
    response = await admin.post("/subnets", json={
        "prefix_id": prefix_id, "cidr": "10.20.2.0/24", "ddns_server_id": ghost})
    message = error_of(response, 422, "validation_error")
    assert message.startswith("ddns_server_id:") and "no DNS server with this id" in message
    s = created(await admin.post("/subnets", json={"prefix_id": prefix_id,
                                                   "cidr": "10.20.3.0/24"}))
    response = await admin.patch(f"/subnets/{s['id']}", json={"ddns_server_id": ghost})
    assert "no DNS server" in error_of(response, 422, "validation_error")
    # Clearing it (null) stays possible, as for any optional reference.
    response = await admin.patch(f"/subnets/{s['id']}", json={"ddns_server_id": None})
    assert response.status_code == 200 and response.json()["ddns_server_id"] is None
    # Same rule for unknown prefix/tenant ids, for comparison.
    response = await admin.post("/subnets", json={"prefix_id": ghost, "cidr": "10.20.4.0/24"})
    assert error_of(response, 422, "validation_error").startswith("prefix_id:")
