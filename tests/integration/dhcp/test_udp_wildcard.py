"""A wildcard listen address without dhcp.server_id: option 54 is the address each packet
reached (IP_PKTINFO), and a Request naming that address is ours."""

from __future__ import annotations

from typing import Any

import pytest

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, seed_subnet
from tests.unit.dhcp.packets import ip, mac_bytes, request


@pytest.fixture
def dhcp_overrides() -> dict[str, Any]:
    return {"listen": ["0.0.0.0:0"], "server_id": ""}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> dict[str, Any]:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.20")])

    return await db.transaction(seed)


async def test_server_identifier_is_the_address_the_request_reached(dhcp: Any) -> None:
    relay = dhcp.relay
    port = dhcp.server.addresses[0][1]
    relay.server = ("127.0.0.3", port)  # any loopback address reaches the wildcard socket
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(1), giaddr=RELAY_IP))
    assert offer is not None
    assert offer.options[o.SERVER_ID] == ip("127.0.0.3").to_bytes(4, "big")
    ack = await relay.exchange(request(o.REQUEST, mac_bytes(1), giaddr=RELAY_IP,
                                       server_id="127.0.0.3",
                                       requested=o.ip_to_str(offer.yiaddr)))
    assert ack is not None and ack.message_type == o.ACK
    elsewhere = request(o.REQUEST, mac_bytes(2), giaddr=RELAY_IP, server_id="127.0.0.9",
                        requested="127.77.1.15")
    await relay.send(elsewhere)
    assert await relay.silence(elsewhere.xid)
    assert dhcp.server.counters.drops["not_for_us"] == 1
