"""Both servers in one appliance (runtime.services): DHCPv4 and DHCPv6 serve side by side, and
an operator's force-release of a DHCPv6 binding, taken by an API worker process, reaches the
DHCPv6 server's bindings through the main process (api/workers.py)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp.expiry import sweep
from ipamd.dhcp6 import protocol as p
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, relay_socket, seed_subnet
from tests.integration.dhcp6.harness import (
    Relay6,
    client_duid,
    dhcp6_section,
    message,
    seed_v6,
)
from tests.integration.dhcp6.harness import relay_socket as relay6_socket
from tests.support.waiting import until
from tests.unit.dhcp.packets import mac_bytes, request


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.20")])
        return await seed_v6(conn)

    return await db.transaction(seed)


@pytest.fixture
def v4_sock() -> Any:
    sock = relay_socket()
    yield sock
    sock.close()


@pytest.fixture
async def config_overrides(seeded: dict[str, Any], v4_sock: Any) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(v4_sock.getsockname()[1]), "dhcp6": dhcp6_section(),
            "api": {"workers": 1}}


async def test_both_servers_serve_and_a_v6_force_release_reaches_the_v6_server(
        appliance: runtime.Running, operator: httpx.AsyncClient, v4_sock: Any,
        nursery: trio.Nursery) -> None:
    state = appliance.state
    assert state.dhcp is not None and state.dhcp6 is not None
    assert not runtime.api_in_main_process(state.config)  # the API in a worker process
    relay4 = Relay(trio.socket.from_stdlib_socket(v4_sock), state.dhcp.addresses[0])
    relay6 = Relay6(trio.socket.from_stdlib_socket(relay6_socket()), state.dhcp6.addresses[0])
    nursery.start_soon(relay4.run)
    nursery.start_soon(relay6.run)

    offer = await relay4.exchange(request(o.DISCOVER, mac_bytes(1), giaddr=RELAY_IP))
    assert offer is not None and offer.message_type == o.OFFER
    reply = await relay6.exchange(message(p.SOLICIT, 0x42, client_duid(1), rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY

    [lease] = (await operator.get("/leases", params={"state": "active"})).json()["items"]
    assert lease["ia_type"] == "na"
    lease_id = uuid.UUID(lease["lease_id"])
    server6: Any = state.dhcp6
    assert lease_id in server6.cache
    released = await operator.post(f"/leases/{lease_id}/release")
    assert released.status_code == 200, released.text

    async def forgotten() -> bool:
        return lease_id not in server6.cache

    await until(forgotten, "the DHCPv6 server forgot the force-released binding")


async def test_each_server_counts_only_its_own_leases_ending(
        appliance: runtime.Running, operator: httpx.AsyncClient, db: Database,
        nursery: trio.Nursery) -> None:
    """The expiry sweep and a force-release tell both servers (one lease table), yet a
    DHCPv6 binding's end is counted by the DHCPv6 server only."""
    state = appliance.state
    assert state.dhcp is not None and state.dhcp6 is not None
    server4: Any = state.dhcp
    server6: Any = state.dhcp6
    relay6 = Relay6(trio.socket.from_stdlib_socket(relay6_socket()), state.dhcp6.addresses[0])
    nursery.start_soon(relay6.run)
    reply = await relay6.exchange(message(p.SOLICIT, 0x43, client_duid(2), pd=[], rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY
    items = (await operator.get("/leases", params={"state": "active"})).json()["items"]
    by_type = {item["ia_type"]: item for item in items}
    assert set(by_type) == {"na", "pd"}

    released = await operator.post(f"/leases/{by_type['pd']['lease_id']}/release")
    assert released.status_code == 200, released.text

    async def released_counted() -> bool:
        return server6.counters.leases["released"] == 1

    await until(released_counted, "the DHCPv6 server counted the force-release")

    async def due(conn: Any) -> None:
        await conn.execute("UPDATE leases SET expires_at = now() - interval '1 second', "
                           "sweep_at = now() - interval '1 second' WHERE lease_id = $1",
                           uuid.UUID(by_type["na"]["lease_id"]))

    await db.run(due)
    assert await sweep(state) == 1
    assert server6.counters.leases["expired"] == 1
    assert server4.counters.leases["released"] == server4.counters.leases["expired"] == 0
