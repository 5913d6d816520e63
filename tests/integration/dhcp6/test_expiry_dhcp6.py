"""The expiry worker ends DHCPv6 bindings (one lease table), with no DHCPv4 server running."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message
from tests.integration.dhcp6.harness import (
    Relay6,
    client_duid,
    dhcp6_section,
    message,
    relay_socket,
    seed_v6,
)
from tests.support.waiting import until


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_v6(conn, lease_time=3)  # valid 3 s: expiry within the test

    return await db.transaction(seed)


@pytest.fixture
async def config_overrides(seeded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # The expiry worker runs for DHCPv6 alone (no DHCPv4 server), every 0.2 s.
    return {"dhcp6": dhcp6_section(),
            "dhcp": {"enabled": False, "expiry_interval_seconds": 0.2}}


@pytest.fixture
async def relay6(appliance: runtime.Running, nursery: trio.Nursery) -> Relay6:
    server = appliance.state.dhcp6
    assert server is not None
    found = Relay6(trio.socket.from_stdlib_socket(relay_socket()), server.addresses[0])
    nursery.start_soon(found.run)
    return found


async def _bind(relay: Relay6, n: int, xid: int) -> Message:
    reply = await relay.exchange(message(p.SOLICIT, xid, client_duid(n), pd=[], rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY
    return reply


async def test_expiry_ends_v6_bindings(relay6: Relay6, viewer: httpx.AsyncClient) -> None:
    await _bind(relay6, 2, 0x20)

    async def all_expired() -> bool:
        items = (await viewer.get("/leases")).json()["items"]
        return len(items) == 2 and all(item["state"] == "expired" for item in items)

    await until(all_expired, "both DHCPv6 bindings expired (valid lifetime 3 s)")
    history = await viewer.get("/history", params={"duid": client_duid(2).text})
    assert history.status_code == 200, history.text
    assert {item["state"] for item in history.json()["items"]} == {"expired"}
