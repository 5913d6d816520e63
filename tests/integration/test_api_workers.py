"""The API served by two worker processes (api.workers = 2): each worker serves, and what
they share stays one thing — the loopback bootstrap, a revoke, the metrics — and a worker
that dies is replaced. (Rate limits across workers need a non-loopback client:
tests/e2e/test_api_workers_non_loopback.py; DHCP control from a worker:
tests/integration/dhcp/test_api.py runs with both worker counts.)"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.api.balance import POLL_SECONDS
from tests.conftest import make_config
from tests.support.workers import serving_pid, worker_pids

WORKERS = 2
MAX_CONNECTIONS = 40  # opened until every worker serves one (each accept is a race)


@pytest.fixture
def config_overrides() -> dict[str, dict[str, Any]]:
    return {"api": {"workers": WORKERS}}


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


class Connection:
    """One keep-alive connection to the loopback face, and the worker that accepted it."""

    def __init__(self, base: str) -> None:
        self.client = httpx.AsyncClient(base_url=base + "/api/v1", timeout=10,
                                        limits=httpx.Limits(max_connections=1))
        self.worker: int | None = None

    async def get(self, path: str, secret: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        return await self.client.get(path, headers=headers)


@contextlib.asynccontextmanager
async def one_per_worker(appliance: runtime.Running) -> AsyncIterator[list[Connection]]:
    """A kept-alive connection to each worker (found by asking the kernel who serves it)."""
    base = appliance.url("http")
    pids = worker_pids()
    assert len(pids) == WORKERS, pids
    found: dict[int, Connection] = {}
    spare: list[Connection] = []
    try:
        for _ in range(MAX_CONNECTIONS):
            conn = Connection(base)
            reply = await conn.get("/openapi.json")
            assert reply.status_code == 200
            client_port = reply.extensions["network_stream"].get_extra_info("client_addr")[1]
            conn.worker = serving_pid(_port(base), client_port, pids)
            assert conn.worker in pids, (conn.worker, pids)
            if conn.worker in found:
                spare.append(conn)
            else:
                found[conn.worker] = conn
            if len(found) == WORKERS:
                yield list(found.values())
                return
        pytest.fail(f"{MAX_CONNECTIONS} connections all went to {sorted(found)}")
    finally:
        for conn in [*found.values(), *spare]:
            await conn.client.aclose()


async def _mint(conn: Connection, name: str, role: str, secret: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    made = await conn.client.post("/tokens", json={"name": name, "role": role},
                                  headers=headers)
    assert made.status_code == 201, made.text
    return made.json()


async def _until(condition: Any, seconds: float = 2.0) -> None:
    with trio.fail_after(seconds):
        while not await condition():
            await trio.sleep(0.02)


async def test_bootstrap_closes_on_every_worker_when_one_mints(
    appliance: runtime.Running,
) -> None:
    async with one_per_worker(appliance) as conns:
        first, second = conns
        # No token yet: loopback is served as admin by both.
        assert (await first.get("/tokens")).status_code == 200
        assert (await second.get("/tokens")).status_code == 200
        minted = await _mint(first, "first", "admin")
        # The other worker sees the token in the database: bootstrap is over there too.
        anonymous = await second.get("/tokens")
        assert anonymous.status_code == 401, anonymous.text
        assert (await second.get("/tokens", minted["token"])).status_code == 200


async def test_a_revoke_takes_effect_on_every_worker(appliance: runtime.Running) -> None:
    async with one_per_worker(appliance) as conns:
        first, second = conns
        admin = (await _mint(first, "admin", "admin"))["token"]
        viewer = await _mint(first, "viewer", "viewer", admin)
        for conn in conns:  # each worker verifies the viewer and keeps it in its cache
            assert (await conn.get("/whoami", viewer["token"])).status_code == 200
            assert (await conn.get("/whoami", viewer["token"])).status_code == 200
        revoked = await second.client.delete(f"/tokens/{viewer['id']}",
                                             headers={"Authorization": f"Bearer {admin}"})
        assert revoked.status_code in (200, 204), revoked.text
        # At once on the worker that revoked; on the other through the tokens' NOTIFY,
        # well inside the cache's 5 s lifetime.
        assert (await second.get("/whoami", viewer["token"])).status_code == 401

        async def refused() -> bool:
            return (await first.get("/whoami", viewer["token"])).status_code == 401

        await _until(refused)


async def test_metrics_count_every_workers_requests(appliance: runtime.Running) -> None:
    async with one_per_worker(appliance) as conns:
        first, second = conns
        admin = (await _mint(first, "admin", "admin"))["token"]
        for _ in range(3):
            assert (await first.get("/health", admin)).status_code == 200
        for _ in range(5):
            assert (await second.get("/health", admin)).status_code == 200

        async def counted() -> bool:
            text = (await first.get("/metrics", admin)).text
            line = next((x for x in text.splitlines() if x.startswith(
                "ipamd_api_request_duration_seconds_count") and '"/api/v1/health"' in x), "")
            return line.endswith(" 8.0")

        await _until(counted, 10)  # the other worker's figures come with its next report


async def test_a_killed_worker_is_replaced(appliance: runtime.Running) -> None:
    before = worker_pids()
    os.kill(before[0], signal.SIGKILL)

    async def replaced() -> bool:
        now = worker_pids()
        return len(now) == WORKERS and before[0] not in now

    await _until(replaced, 20)
    async with httpx.AsyncClient(base_url=appliance.url("http") + "/api/v1") as client:
        for _ in range(10):  # new connections: whichever worker accepts serves
            reply = await client.get("/health", headers={"Connection": "close"})
            assert reply.status_code == 200


async def test_stop_ends_every_worker(nursery: trio.Nursery, dsn: str) -> None:
    config = make_config(dsn, api={"workers": WORKERS})
    done = trio.Event()

    async def appliance(task_status: trio.TaskStatus[runtime.Running]) -> None:
        try:
            await runtime.run(config, handle_signals=False, task_status=task_status)
        finally:
            done.set()

    running: runtime.Running = await nursery.start(appliance)
    pids = worker_pids()
    assert len(pids) == WORKERS
    running.stop.set()
    with trio.fail_after(10):
        await done.wait()
    assert worker_pids() == []



async def test_connections_are_shared_evenly(appliance: runtime.Running) -> None:
    """8 keep-alive connections: 4 per worker, whatever their ports hash to; one closed on
    the fuller side gives its place back, and the next connection goes to the other."""
    base = appliance.url("http")
    pids = worker_pids()
    conns = [Connection(base) for _ in range(8)]
    ports: dict[Connection, int] = {}

    async def connect(conn: Connection) -> None:
        reply = await conn.get("/openapi.json")
        assert reply.status_code == 200
        ports[conn] = reply.extensions["network_stream"].get_extra_info("client_addr")[1]
        conn.worker = serving_pid(_port(base), ports[conn], pids)

    try:
        for conn in conns:  # one at a time, as a client pool opening its connections
            await connect(conn)
        split = sorted(sum(1 for c in conns if c.worker == pid) for pid in pids)
        assert split == [4, 4], split
        gone = conns.pop()
        await gone.client.aclose()

        async def closed_by_the_server() -> bool:  # the worker has let the socket go
            return serving_pid(_port(base), ports[gone], pids) is None

        await _until(closed_by_the_server, 5)
        await trio.sleep(3 * POLL_SECONDS)  # the fuller worker gives way within one poll
        extra = Connection(base)
        conns.append(extra)
        await connect(extra)
        # The worker that lost one is the only one not over its share now.
        assert extra.worker == gone.worker
    finally:
        for conn in conns:
            await conn.client.aclose()
