"""The request-rate limit (docs/security.md) is applied before the app stack runs: a
request over it from a genuine non-loopback peer is answered 429 with the error envelope
and Retry-After, and neither Quart nor api/direct.py sees it; loopback stays exempt."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from quart import Request
from quart_trio import QuartTrio

from ipamd.api.app import API_PREFIX
from ipamd.api.direct import Direct
from tests.e2e.conftest import ApiNet, Prober

pytestmark = pytest.mark.netns

LIMIT = 20
OVER = 5


@pytest.fixture
def config_overrides(api_net: ApiNet) -> dict[str, dict[str, Any]]:
    return {"api": {"public_listen": [f"{api_net.root_ip}:0"]},
            "limits": {"requests_per_minute": LIMIT}}


async def test_over_the_limit_is_refused_before_quart_and_loopback_is_exempt(
    probe: Prober, anon: httpx.AsyncClient, api_net: ApiNet, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = await anon.post("/tokens", json={"name": "first", "role": "admin"})
    assert made.status_code == 201, made.text
    auth = {"Authorization": f"Bearer {made.json()['token']}"}
    entered: list[str] = []  # the peer's requests the app handled (Quart or api/direct.py)
    real, real_direct = QuartTrio.handle_request, Direct.answer

    async def spy(self: QuartTrio, request: Request) -> Any:
        if request.remote_addr == api_net.peer_ip:
            entered.append(request.path)
        return await real(self, request)

    async def spy_direct(self: Direct, scope: dict[str, Any], *args: Any) -> None:
        if scope["client"][0] == api_net.peer_ip:
            entered.append(scope["path"])
        await real_direct(self, scope, *args)

    monkeypatch.setattr(QuartTrio, "handle_request", spy)
    monkeypatch.setattr(Direct, "answer", spy_direct)
    [step] = await probe({"name": "burst", "method": "GET", "path": "/health",
                          "headers": {**auth, "X-Request-Id": "probe-429"},
                          "repeat": LIMIT + OVER})
    assert step["statuses"] == [200] * LIMIT + [429] * OVER, step["statuses"]
    assert entered == [f"{API_PREFIX}/health"] * LIMIT  # the refused ones never reached it

    refused = step["by_status"]["429"]
    assert refused["body"] == {"error": {
        "code": "rate_limited", "message": f"more than {LIMIT} requests a minute from this "
                                           "address"}}
    headers = refused["headers"]
    # The same answer as when Quart gave it (before the gate), header for header.
    assert list(headers) == ["content-type", "content-length", "retry-after", "x-request-id",
                             "cache-control", "x-content-type-options", "date", "server"]
    assert 1 <= int(headers["retry-after"]) <= 60
    assert headers["x-request-id"] == "probe-429"
    assert headers["content-type"] == "application/json"
    assert headers["cache-control"] == "no-store"
    assert headers["x-content-type-options"] == "nosniff"

    # The host itself is never limited.
    statuses = {(await anon.get("/health", headers=auth)).status_code for _ in range(LIMIT + 5)}
    assert statuses == {200}
