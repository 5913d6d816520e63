"""Per-client-IP rate limits with the API in two worker processes (api.workers = 2): a
remote client gets its limit once, not once per worker (docs/security.md), whichever worker serves
each of its requests; loopback stays unlimited. Same lab as test_api_non_loopback.py."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.api.workers import LocalLimits
from tests.e2e.conftest import ApiNet, Prober
from tests.e2e.test_api_non_loopback import bearer, error_code, mint_on_loopback

pytestmark = pytest.mark.netns

LIMIT = 40


@pytest.fixture
def config_overrides(api_net: ApiNet) -> dict[str, dict[str, Any]]:
    return {"api": {"public_listen": [f"{api_net.root_ip}:0"], "workers": 2},
            "limits": {"requests_per_minute": LIMIT}}


def _served(appliance: runtime.Running, worker: str) -> int:
    """Requests a worker has reported (its latency histograms, each second): to /health,
    and the ones refused over the rate limit before routing (api/app.py Gate)."""
    report = appliance.state.children.get(worker)
    return sum(item.count for item in (report.api_latency if report else [])
               if item.key[1] in ("/api/v1/health", "rate_limited"))


async def test_one_limit_across_workers(probe: Prober, anon: httpx.AsyncClient,
                                        appliance: runtime.Running) -> None:
    secret = await mint_on_loopback(anon)
    # Four kept-alive connections used in turn: the workers share connections evenly
    # (api/balance.py), so each serves at least one of them (the loopback client above
    # may hold one on either worker), and the requests go round them.
    [step] = await probe(
        {"name": "burst", "method": "GET", "path": "/health", "headers": bearer(secret),
         "repeat": LIMIT + 1, "connections": 4},
    )
    assert step["statuses"][:LIMIT] == [200] * LIMIT, step["statuses"]
    assert step["statuses"][LIMIT] == 429, step["statuses"]
    assert error_code(step, 429) == "rate_limited"

    # Both workers took part (else the test proves nothing): their reports say so.
    with trio.fail_after(5):
        while _served(appliance, "api-1") + _served(appliance, "api-2") < LIMIT + 1:
            await trio.sleep(0.1)
    assert _served(appliance, "api-1") > 0 and _served(appliance, "api-2") > 0

    # Loopback is never limited, on any worker.
    async with httpx.AsyncClient(base_url=appliance.url("http") + "/api/v1") as local:
        for _ in range(LIMIT + 10):
            reply = await local.get("/health", headers={**bearer(secret), "Connection": "close"})
            assert reply.status_code == 200


async def test_a_refused_client_costs_no_round_trip_per_request(
    probe: Prober, anon: httpx.AsyncClient, api_net: ApiNet, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker remembers a refusal until it ends (api/workers.py MainLimits): past the
    limit, the main process is asked once per worker, not once per request."""
    secret = await mint_on_loopback(anon)
    asked: list[str] = []  # the main process's window, asked for this client
    real_hit = LocalLimits.hit

    async def counting_hit(self: LocalLimits, client: str, limit: int) -> float | None:
        if client.endswith(f"|{api_net.peer_ip}"):
            asked.append(client)
        return await real_hit(self, client, limit)

    monkeypatch.setattr(LocalLimits, "hit", counting_hit)
    over = 60
    [step] = await probe(
        {"name": "flood", "method": "GET", "path": "/health", "headers": bearer(secret),
         "repeat": LIMIT + over, "connections": 4},
    )
    assert step["statuses"] == [200] * LIMIT + [429] * over, step["statuses"]
    assert LIMIT + 1 <= len(asked) <= LIMIT + 2, len(asked)  # one refusal per worker
