"""api/direct.py: a plain GET answered before Quart gets the same bytes Quart gives.

Each request is sent twice on raw sockets with the same X-Request-Id: once as a plain query
(answered by ``Direct``) and once with a percent escape that decodes to the same query (not
plain: answered by Quart). Heads (but for Date) and bodies must be equal, for pages, cursors,
refusals (401, 403, 400, 422) and reads without a query model."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from ipamd import runtime
from ipamd.api.app import API_PREFIX, all_routes
from ipamd.api.direct import Direct, answerable
from ipamd.api.token_cache import TokenCache
from ipamd.core.histogram import ApiLatency

pytestmark = pytest.mark.trio


async def _exchange(appliance: runtime.Running, target: str, headers: dict[str, str]) -> bytes:
    """One GET on its own connection (closed by the server after it); every byte back."""
    host, port = appliance.url("http").removeprefix("http://").rsplit(":", 1)
    lines = [f"GET {API_PREFIX}{target} HTTP/1.1", f"Host: {host}:{port}",
             "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        out = b""
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                out += chunk
    return out


def _without_date(raw: bytes) -> tuple[list[bytes], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return [line for line in head.split(b"\r\n") if not line.lower().startswith(b"date:")], body


async def _same(appliance: runtime.Running, plain: str, escaped: str,
                headers: dict[str, str]) -> tuple[list[bytes], bytes]:
    assert "%" not in plain and "%" in escaped
    headers = {**headers, "X-Request-Id": "direct-or-quart"}
    direct = _without_date(await _exchange(appliance, plain, headers))
    quart = _without_date(await _exchange(appliance, escaped, headers))
    assert direct == quart
    return direct


async def test_pages_and_refusals_are_the_bytes_quart_gives(
        appliance: runtime.Running, admin: Any, tokens: dict[str, str]) -> None:
    for n in range(3):
        assert (await admin.post("/prefixes", json={"cidr": f"10.77.{n}.0/24"})).status_code == 201
    bearer = {"Authorization": f"Bearer {tokens['admin']}"}
    head, body = await _same(appliance, "/prefixes?limit=2", "/prefixes?limit=%32", bearer)
    assert head[0] == b"HTTP/1.1 200 OK" and b'"next_cursor":"' in body
    cursor = body.split(b'"next_cursor":"')[1].split(b'"')[0].decode()
    head, body = await _same(appliance, f"/prefixes?limit=2&cursor={cursor}",
                             f"/prefixes?limit=%32&cursor={cursor}", bearer)
    assert body.endswith(b'"next_cursor":null}') and b"10.77.2.0/24" in body
    await _same(appliance, "/subnets?limit=5", "/subnets?limit=%35", bearer)
    await _same(appliance, "/whoami", "/whoami?x=%41", bearer)
    # /health tells its uptime: the rest must match.
    headers = {**bearer, "X-Request-Id": "direct-or-quart"}
    health = [_without_date(await _exchange(appliance, target, headers))
              for target in ("/health", "/health?x=%41")]
    heads = [[line for line in head if not line.startswith(b"content-length")]
             for head, _ in health]
    assert heads[0] == heads[1] and heads[0][0] == b"HTTP/1.1 200 OK"
    bodies = [{**json.loads(body), "uptime_seconds": 0} for _, body in health]
    assert bodies[0] == bodies[1]
    refusals = [
        ("/prefixes?limit=0", "/prefixes?limit=%30", bearer, b"400"),
        ("/prefixes?limit=1&limit=2", "/prefixes?limit=1&limit=%32", bearer, b"400"),
        ("/prefixes?cursor=bogus", "/prefixes?cursor=bog%75s", bearer, b"400"),
        ("/prefixes?colour=red", "/prefixes?colour=r%65d", bearer, b"400"),
        ("/prefixes?limit=5000", "/prefixes?limit=%35000", bearer, b"400"),
        ("/prefixes", "/prefixes?limit=%35", {}, b"401"),
        ("/prefixes", "/prefixes?limit=%35", {"Authorization": "Bearer service_live_nope"},
         b"401"),
        ("/tokens", "/tokens?limit=%35", {"Authorization": f"Bearer {tokens['viewer']}"},
         b"403"),
        ("/prefixes", "/prefixes?limit=%35", {**bearer, "Idempotency-Key": "k" * 1000}, b"400"),
    ]
    for plain, escaped, headers, status in refusals:
        head, body = await _same(appliance, plain, escaped, headers)
        assert head[0].split()[1] == status, (plain, head, body)
        assert body.startswith(b'{"error":{"code":'), body


def _scope(path: str, query: bytes = b"", method: str = "GET",
           headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": API_PREFIX + path, "query_string": query,
            "http_version": "1.1", "headers": headers or [], "client": ("127.0.0.1", 1)}


async def test_what_is_answered_directly(appliance: runtime.Running) -> None:
    direct = Direct(appliance.state, TokenCache(), ApiLatency(),
                    [(API_PREFIX + route.path, route) for route in all_routes()])
    auth = [(b"Authorization", b"Bearer x")]
    assert direct.takes(_scope("/prefixes", b"limit=50", headers=auth)) == {
        b"authorization": "Bearer x"}
    assert direct.takes(_scope("/prefixes", b"within=10.0.0.0/8&limit=2")) == {}
    assert direct.takes(_scope("/prefixes", headers=[(b"content-length", b"0")])) == {}
    for refused in (_scope("/prefixes", b"limit=%35"), _scope("/prefixes", b"limit=5+"),
                    _scope("/prefixes", b"limit"), _scope("/prefixes", b"a=1&&b=2"),
                    _scope("/prefixes", method="HEAD"), _scope("/prefixes", method="POST"),
                    _scope("/prefixes", headers=[(b"content-length", b"2")]),
                    _scope("/prefixes", headers=[(b"transfer-encoding", b"chunked")]),
                    _scope("/prefixes", headers=[(b"expect", b"100-continue")]),
                    _scope("/prefixes/"), _scope("/metrics"), _scope("/netbox/prefixes"),
                    {**_scope("/prefixes"), "root_path": "/under"}):
        assert direct.takes(refused) is None, refused
    # Path parameters, route rate limits and Quart Responses stay Quart's.
    routes = {route.path: route for route in all_routes() if route.method == "GET"}
    assert answerable(routes["/prefixes"]) and answerable(routes["/health"])
    assert not answerable(routes["/prefixes/{prefix_id}"])
    assert not answerable(routes["/metrics"]) and not answerable(routes["/history"])
