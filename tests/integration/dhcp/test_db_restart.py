"""Postgres restarts under DHCP load — an expected event, logged as one.

A few clients run DORA continuously over loopback while the test's Postgres is restarted
(fast shutdown: every backend is told the server is going, then connections are refused
until it is back). The log must read like an outage, not a crash: no traceback, one
warning and one "reachable again" line, not one per batch. Service resumes by itself,
and every Ack the clients got is a lease in the database.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, seed_subnet
from tests.support.postgres import PgServer
from tests.unit.dhcp.packets import mac_bytes, request

CLIENTS = 6
MAX_WARNINGS = 3


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> dict[str, Any]:
        return await seed_subnet(conn, pools=[("127.77.1.1", "127.77.60.254")])

    return await db.transaction(seed)


class Load:
    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.acked: dict[str, str] = {}  # ip -> mac
        self.acks = 0
        self.next_mac = 500_000

    async def client(self, stop: trio.Event) -> None:
        while not stop.is_set():
            self.next_mac += 1
            mac = mac_bytes(self.next_mac)
            offer = await self.relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP), 1.0)
            if offer is None or offer.message_type != o.OFFER:
                await trio.sleep(0.05)
                continue
            ack = await self.relay.exchange(
                request(o.REQUEST, mac, giaddr=RELAY_IP, server_id="127.0.0.1",
                        requested=o.ip_to_str(offer.yiaddr)), 1.0)
            if ack is not None and ack.message_type == o.ACK:
                self.acked[o.ip_to_str(ack.yiaddr)] = mac.hex(":")
                self.acks += 1
            await trio.sleep(0.01)

    async def until(self, count: int, timeout: float) -> None:
        with trio.fail_after(timeout):
            while self.acks < count:
                await trio.sleep(0.05)


async def test_postgres_restart_under_load_logs_one_outage(
    dhcp: Any, pg: PgServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ipamd")
    load = Load(dhcp.relay)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(CLIENTS):
            nursery.start_soon(load.client, stop)
        await load.until(30, 30)  # serving before the restart
        caplog.clear()
        await trio.to_thread.run_sync(pg.restart)
        before = load.acks
        await load.until(before + 50, 60)  # service resumed by itself
        stop.set()

    # ipamd's own records and asyncpg's (its pool logs reconnect failures with tracebacks).
    records = [r for r in caplog.records if r.name.startswith(("ipamd", "asyncpg"))]
    shown = "\n".join(f"{r.levelname} {r.name}: {r.getMessage()}" for r in records)
    assert not [r for r in records if r.exc_info], shown  # no traceback for an expected event
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    assert 1 <= len(warnings) <= MAX_WARNINGS, shown
    assert any("unreachable" in r.getMessage() for r in warnings), shown
    assert any("reachable again" in r.getMessage() and r.levelno == logging.INFO
               for r in records), shown

    async def active(conn) -> dict[str, str]:
        rows = await conn.fetch("SELECT host(ip) AS ip, mac::text AS mac FROM leases "
                                "WHERE state = 'active'")
        return {r["ip"]: r["mac"] for r in rows}

    stored = await dhcp.db.run(active)
    lost = {ip: mac for ip, mac in load.acked.items() if stored.get(ip) != mac}
    assert not lost, f"Acked but not stored: {list(lost.items())[:5]}"


async def test_api_during_a_restart_answers_503_not_a_traceback(
    admin: Any, pg: PgServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ipamd")
    statuses: list[int] = []
    bodies: list[Any] = []
    restarted = trio.Event()

    async def poll() -> None:
        while not restarted.is_set() or len(statuses) < 5:
            response = await admin.get("/tenants")
            statuses.append(response.status_code)
            if response.status_code != 200:
                bodies.append(response.json())
            await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await trio.sleep(0.2)
        await trio.to_thread.run_sync(pg.restart)
        restarted.set()
    assert set(statuses) <= {200, 503}, statuses
    assert all(b["error"]["code"] == "unavailable" for b in bodies), bodies
    with trio.fail_after(30):
        while (await admin.get("/tenants")).status_code != 200:
            await trio.sleep(0.1)
    records = [r for r in caplog.records if r.name.startswith(("ipamd", "asyncpg"))]
    shown = "\n".join(f"{r.levelname} {r.name}: {r.getMessage()}" for r in records)
    assert not [r for r in records if r.exc_info], shown
    assert len([r for r in records if r.levelno >= logging.WARNING]) <= MAX_WARNINGS, shown
