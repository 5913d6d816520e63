"""Shared by the delivery tests: a trustme CA the appliance trusts, a real HTTPS receiver,
a hosts file (hook.test → 127.0.0.1) and the secret in the environment."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trustme

from tests.support.receiver import Receiver, trustme_context

SECRET = b"integration-hook-secret"
SECRET_ENV = "IPAMD_TEST_HOOK_SECRET"


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def hosts_file(tmp_path: Path) -> Path:
    path = tmp_path / "hosts"
    path.write_text("127.0.0.1 hook.test\n")
    return path


@pytest.fixture
def hook_secret(monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setenv(SECRET_ENV, SECRET.decode())
    return SECRET


@pytest.fixture
async def receiver(nursery: trio.Nursery, ca: trustme.CA, hook_secret: bytes
                   ) -> AsyncIterator[Receiver]:
    server = Receiver(trustme_context(ca), [hook_secret])
    await server.start(nursery)
    try:
        yield server
    finally:
        server.stop()


def fast_outbox(ca_file: str, hosts_file: Path, **changes: Any) -> dict[str, Any]:
    """Outbox settings that make retries take milliseconds instead of hours."""
    return {
        "enabled": True, "workers": 4, "max_attempts": 3, "backoff_base_seconds": 0.05,
        "backoff_multiplier": 2.0, "backoff_max_seconds": 0.2, "backoff_jitter": 0.0,
        "request_timeout_seconds": 1.0, "claim_timeout_seconds": 3.0,
        "poll_interval_seconds": 0.2, "ca_file": ca_file, "hosts_file": str(hosts_file),
        **changes,
    }


async def make_hook(admin: httpx.AsyncClient, receiver: Receiver, **fields: Any) -> dict:
    body = {"name": fields.pop("name", "hook"), "url": receiver.url(host="hook.test"),
            "secret_ref": f"env:{SECRET_ENV}", "topics": "lease.granted", **fields}
    made = await admin.post("/webhooks", json=body)
    assert made.status_code == 201, made.text
    return made.json()


async def emit(db: Any, *events: tuple[str, dict]) -> None:
    """Event rows as the DHCP server and audit.record write them (one statement)."""

    async def insert(conn: Any) -> None:
        await conn.execute(
            "INSERT INTO events (topic, payload) SELECT * FROM unnest($1::text[], $2::jsonb[])",
            [t for t, _ in events], [p for _, p in events],
        )

    await db.transaction(insert)


async def rows_for(client: httpx.AsyncClient, webhook_id: str, **params: Any) -> list[dict]:
    reply = await client.get("/outbox", params={"webhook_id": webhook_id, "limit": 1000,
                                                **params})
    assert reply.status_code == 200, reply.text
    return reply.json()["items"]


async def wait_rows(
    client: httpx.AsyncClient, webhook_id: str, count: int, state: str, timeout: float = 15
) -> list[dict]:
    """Poll the Work view until `count` rows of the webhook are in `state` (bounded)."""
    with trio.fail_after(timeout):
        while True:
            rows = await rows_for(client, webhook_id, state=state)
            if len(rows) >= count:
                return rows
            await trio.sleep(0.05)


def lease(ip: str, **extra: Any) -> dict:
    return {"lease_id": "0192f000-0000-7000-8000-000000000001", "ip": ip,
            "subnet_id": "0192f000-0000-7000-8000-0000000000aa", "hostname": "pc-1",
            "fqdn": None, "state": "active", "mac": "02:00:00:00:00:01", **extra}
