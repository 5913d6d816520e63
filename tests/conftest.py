"""Fixtures shared by every test: the private Postgres, a database per test, the appliance."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.config import Config, parse
from ipamd.db.bridge import Database, asyncio_loop, run_once
from tests.support import postgres


@pytest.fixture(scope="session")
def pg() -> Iterator[postgres.PgServer]:
    server = postgres.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def aio() -> AsyncIterator[Any]:
    """The asyncio loop asyncpg runs on, for tests that touch the database directly."""
    async with asyncio_loop() as loop:
        yield loop


@pytest.fixture
async def dsn(pg: postgres.PgServer, aio: Any) -> AsyncIterator[str]:
    name = postgres.next_name()
    await run_once(pg.dsn("postgres"), postgres.clone, name)
    try:
        yield pg.dsn(name)
    finally:
        await run_once(pg.dsn("postgres"), postgres.drop, name)


@pytest.fixture
async def db(dsn: str) -> AsyncIterator[Database]:
    database = await Database.connect(dsn, min_size=1, max_size=4)
    try:
        yield database
    finally:
        await database.close()


def make_config(dsn: str, **sections: dict[str, Any]) -> Config:
    """A config for tests: the given database, ephemeral loopback ports, no DHCP socket."""
    data: dict[str, Any] = {
        "state_dir": "/tmp/ipamd-test-state",
        "database": {"dsn": dsn, "pool_min": 1, "pool_max": 8},
        "api": {"public_listen": ["127.0.0.1:0"], "loopback_listen": "127.0.0.1:0", "workers": 1,
                "graceful_timeout_seconds": 0.5},
        "dhcp": {"enabled": False},
        "outbox": {"enabled": False},
        "logging": {"access_log": False},
    }
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return parse(data)


@pytest.fixture
def config_overrides() -> dict[str, dict[str, Any]]:
    """Override in a test module to change the appliance's configuration."""
    return {}


@pytest.fixture
async def appliance(
    nursery: trio.Nursery, dsn: str, config_overrides: dict[str, dict[str, Any]]
) -> AsyncIterator[runtime.Running]:
    running: runtime.Running = await nursery.start(
        lambda task_status: runtime.run(
            make_config(dsn, **config_overrides), handle_signals=False, task_status=task_status
        )
    )
    try:
        yield running
    finally:
        running.stop.set()


@pytest.fixture
async def anon(appliance: runtime.Running) -> AsyncIterator[httpx.AsyncClient]:
    """A client on the loopback face with no token."""
    async with httpx.AsyncClient(base_url=appliance.url("http") + "/api/v1") as client:
        yield client


@pytest.fixture
async def tokens(anon: httpx.AsyncClient) -> dict[str, str]:
    """Secrets for one token per role; the admin one is minted through the bootstrap."""
    secrets: dict[str, str] = {}
    first = await anon.post("/tokens", json={"name": "admin", "role": "admin"})
    assert first.status_code == 201, first.text
    secrets["admin"] = first.json()["token"]
    for role in ("operator", "viewer"):
        made = await anon.post(
            "/tokens", json={"name": role, "role": role},
            headers={"Authorization": f"Bearer {secrets['admin']}"},
        )
        assert made.status_code == 201, made.text
        secrets[role] = made.json()["token"]
    return secrets


def _client(appliance: runtime.Running, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=appliance.url("http") + "/api/v1",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )


@pytest.fixture
async def admin(appliance: runtime.Running, tokens: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(appliance, tokens["admin"]) as client:
        yield client


@pytest.fixture
async def operator(appliance: runtime.Running, tokens: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(appliance, tokens["operator"]) as client:
        yield client


@pytest.fixture
async def viewer(appliance: runtime.Running, tokens: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(appliance, tokens["viewer"]) as client:
        yield client


@pytest.fixture
def relay_sock() -> Iterator[socket.socket]:
    """A UDP socket on a loopback address posing as a DHCP relay (tests/integration/dhcp)."""
    from tests.integration.dhcp.harness import relay_socket

    sock = relay_socket()
    yield sock
    sock.close()
