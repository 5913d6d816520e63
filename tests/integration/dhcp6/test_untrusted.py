"""A Relay-forward from a source outside dhcp6.trusted_relays is ignored and counted."""

from __future__ import annotations

from typing import Any

import pytest

from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from tests.integration.dhcp6.conftest import Running6
from tests.integration.dhcp6.harness import client_duid, message, seed_v6


@pytest.fixture
def dhcp6_overrides() -> dict[str, Any]:
    return {"trusted_relays": ["2001:db8:ffff::/48"]}  # not ::1, where the test's relay is


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    return await db.transaction(seed_v6)


async def test_untrusted_relay_is_ignored_and_counted(dhcp6: Running6) -> None:
    xid = 0x77
    await dhcp6.relay.send(message(p.SOLICIT, xid, client_duid(1), rapid=True))
    assert await dhcp6.relay.silence(xid)
    assert dhcp6.server.counters.drops["untrusted_relay"] == 1
    assert dhcp6.server.counters.received == {}  # not even parsed

    async def count(conn: Any) -> int:
        return await conn.fetchval("SELECT count(*) FROM leases")

    assert await dhcp6.db.run(count) == 0
