"""Per-client-IP rate limits with the API in two worker processes (api.workers = 2): a
remote client gets its limit once, not once per worker (spec §8), whichever worker serves
each of its requests; loopback stays unlimited. Same lab as test_api_non_loopback.py."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from tests.e2e.conftest import ApiNet, Prober
from tests.e2e.test_api_non_loopback import bearer, error_code, mint_on_loopback

pytestmark = pytest.mark.netns

LIMIT = 40


@pytest.fixture
def config_overrides(api_net: ApiNet) -> dict[str, dict[str, Any]]:
    return {"api": {"public_listen": [f"{api_net.root_ip}:0"], "workers": 2},
            "limits": {"requests_per_minute": LIMIT}}


def _served(appliance: runtime.Running, worker: str) -> int:
    """Requests to /health a worker has reported (its latency histograms, each second)."""
    report = appliance.state.children.get(worker) or {}
    return sum(item["count"] for item in report.get("api_latency", [])
               if item["key"][1] == "/api/v1/health")


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
