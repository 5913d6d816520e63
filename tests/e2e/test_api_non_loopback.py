"""The API over a real non-loopback socket (Foundation, "Done when").

A veth pair joins the root namespace (the appliance's public TLS listener) and a test
namespace; the client runs there as a subprocess (tests/support/api_probe.py), so the
appliance sees a genuine 10.77.9.x peer: bootstrap refusal, Bearer, and the per-IP limits
(docs/security.md), with loopback never limited.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ipamd.db.bridge import Database
from tests.e2e.conftest import ApiNet, Prober

pytestmark = pytest.mark.netns

ADMIN_BODY = {"name": "from-namespace", "role": "admin"}


@pytest.fixture
def config_overrides(api_net: ApiNet) -> dict[str, dict[str, Any]]:
    # Public TLS face on the veth address, plain loopback face on a free port.
    return {"api": {"public_listen": [f"{api_net.root_ip}:0"]}}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def error_code(step: dict[str, Any], status: int) -> str:
    body = step["by_status"][str(status)]["body"]
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"], body
    return body["error"]["code"]


async def _count(conn: Any) -> int:
    return await conn.fetchval("SELECT count(*) FROM tokens")


async def count_tokens(db: Database) -> int:
    # The test's own pool (the appliance's lives on the appliance's asyncio loop).
    return await db.run(_count)


async def mint_on_loopback(anon: httpx.AsyncClient) -> str:
    made = await anon.post("/tokens", json={"name": "first", "role": "admin"})
    assert made.status_code == 201, made.text
    return made.json()["token"]


async def test_bootstrap_is_loopback_only_then_bearer_works_remotely(
    probe: Prober, anon: httpx.AsyncClient, db: Database
) -> None:
    before = await probe(
        {"name": "health", "method": "GET", "path": "/health"},
        {"name": "mint", "method": "POST", "path": "/tokens", "json": ADMIN_BODY},
    )
    for step in before:
        assert step["statuses"] == [403], step
        assert error_code(step, 403) == "forbidden"
    assert "no API token yet" in before[1]["by_status"]["403"]["body"]["error"]["message"]
    # Nothing was minted from the namespace: the table is empty, and loopback says so too.
    assert await count_tokens(db) == 0
    listed = await anon.get("/tokens")
    assert listed.status_code == 200, listed.text
    assert listed.json()["items"] == []

    secret = await mint_on_loopback(anon)
    after = await probe(
        {"name": "anonymous", "method": "GET", "path": "/health"},
        {"name": "bad", "method": "GET", "path": "/health",
         "headers": bearer("service_live_not-a-real-token")},
        {"name": "bearer", "method": "GET", "path": "/health", "headers": bearer(secret)},
        {"name": "mint", "method": "POST", "path": "/tokens", "headers": bearer(secret),
         "json": {"name": "remote", "role": "viewer"}},
    )
    assert after[0]["statuses"] == [401] and error_code(after[0], 401) == "unauthorized"
    assert after[1]["statuses"] == [401] and error_code(after[1], 401) == "unauthorized"
    assert after[2]["statuses"] == [200], after[2]
    assert after[2]["by_status"]["200"]["body"]["database"] == "ok"
    assert after[3]["statuses"] == [201], after[3]
    minted = after[3]["by_status"]["201"]["body"]["token"]
    assert minted.startswith("service_live_")
    assert await count_tokens(db) == 2


async def test_request_rate_is_limited_per_remote_ip_and_never_on_loopback(
    probe: Prober, anon: httpx.AsyncClient
) -> None:
    secret = await mint_on_loopback(anon)
    [step] = await probe(
        {"name": "burst", "method": "GET", "path": "/health", "headers": bearer(secret),
         "repeat": 301},
    )
    # The window is a minute: the burst must fit in it for the count to mean anything.
    assert step["elapsed"] < 55, f"301 requests took {step['elapsed']} s"
    assert step["statuses"][:300] == [200] * 300, sorted(set(step["statuses"][:300]))
    assert step["statuses"][300] == 429
    assert error_code(step, 429) == "rate_limited"
    retry = step["by_status"]["429"]["headers"].get("retry-after")
    assert retry is not None and retry.isdigit() and 1 <= int(retry) <= 60, retry

    # The host itself is never limited, even while the remote address is.
    statuses = [
        (await anon.get("/health", headers=bearer(secret))).status_code for _ in range(350)
    ]
    assert statuses == [200] * 350, sorted(set(statuses))
    [again] = await probe(
        {"name": "still-limited", "method": "GET", "path": "/health", "headers": bearer(secret)}
    )
    assert again["statuses"] == [429]


async def test_token_creation_rate_is_ten_a_minute_per_remote_ip(
    probe: Prober, anon: httpx.AsyncClient, db: Database
) -> None:
    secret = await mint_on_loopback(anon)
    [step] = await probe(
        {"name": "mint", "method": "POST", "path": "/tokens", "headers": bearer(secret),
         "json": ADMIN_BODY, "repeat": 11},
    )
    assert step["statuses"] == [201] * 10 + [429], step["statuses"]
    assert error_code(step, 429) == "rate_limited"
    retry = step["by_status"]["429"]["headers"].get("retry-after")
    assert retry is not None and retry.isdigit() and 1 <= int(retry) <= 60, retry
    assert await count_tokens(db) == 11  # the loopback one and ten remote ones

    # Other requests from that address are still served (a separate, larger budget).
    [other] = await probe(
        {"name": "health", "method": "GET", "path": "/health", "headers": bearer(secret)}
    )
    assert other["statuses"] == [200]
    # Loopback mints past ten a minute.
    for n in range(12):
        made = await anon.post("/tokens", json={"name": f"local-{n}", "role": "viewer"},
                               headers=bearer(secret))
        assert made.status_code == 201, made.text
