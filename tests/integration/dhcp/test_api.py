"""The lease API and the settings resource, on the whole appliance with its DHCP server on."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, relay_socket, seed_subnet
from tests.unit.dhcp.packets import mac_bytes, request

ROGUE_IP = "127.78.0.1"


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> Any:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.20")])

    return await db.transaction(seed)


@pytest.fixture(params=[1, 2], ids=["one-api-worker", "two-api-workers"])
async def config_overrides(relay_sock: socket.socket, seeded: dict[str, Any],
                           request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    # Seeded first, so the appliance's DHCP server starts with the plan loaded. (The
    # appliance runs its own asyncio loop: its pool is not usable from the test's tasks.)
    # With a DHCP server the API runs in worker processes, even one (runtime.
    # api_in_main_process): it reaches the DHCP server in the main process (force-release,
    # a settings change in force at once) through api/workers.py.
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "api": {"workers": request.param}}


@pytest.fixture
async def relay(appliance: runtime.Running, relay_sock: socket.socket,
                nursery: trio.Nursery) -> Relay:
    found = Relay(trio.socket.from_stdlib_socket(relay_sock),
                  appliance.state.dhcp.addresses[0])
    nursery.start_soon(found.run)
    return found


async def _lease(relay: Relay, n: int, hostname: bytes = b"host") -> str:
    mac = mac_bytes(n)
    offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP))
    assert offer is not None
    address = o.ip_to_str(offer.yiaddr)
    ack = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, server_id="127.0.0.1",
                                       requested=address, extra={o.HOSTNAME: hostname}))
    assert ack is not None and ack.message_type == o.ACK
    return address


async def test_list_filter_and_read_leases(relay: Relay, viewer: httpx.AsyncClient,
                                           seeded: dict[str, Any]) -> None:
    first = await _lease(relay, 1, b"Alpha")
    second = await _lease(relay, 2, b"beta")
    page = await viewer.get("/leases")
    assert page.status_code == 200, page.text
    items = page.json()["items"]
    assert [i["ip"] for i in items] == [first, second] and page.json()["next_cursor"] is None
    lease = items[0]
    assert lease["state"] == "active" and lease["mac"] == "02:00:00:00:00:01"
    assert lease["hostname"] == "Alpha" and lease["giaddr"] == RELAY_IP
    assert lease["subnet_id"] == str(seeded["subnet_id"])
    for key in ("lease_id", "fqdn", "client_id", "duid", "circuit_id", "remote_id",
                "starts_at", "expires_at"):
        assert key in lease
    one = await viewer.get("/leases", params={"limit": 1})
    assert len(one.json()["items"]) == 1 and one.json()["next_cursor"]
    rest = await viewer.get("/leases", params={"limit": 1, "cursor": one.json()["next_cursor"]})
    assert [i["ip"] for i in rest.json()["items"]] == [second]
    for params, expected in (
        ({"ip": second}, [second]), ({"mac": "02-00-00-00-00-01"}, [first]),
        ({"mac": "0200.0000.0002"}, [second]), ({"hostname": "ALPHA"}, [first]),
        ({"state": "released"}, []),
        ({"subnet_id": str(seeded["subnet_id"])}, [first, second]),
        ({"subnet_id": str(uuid.uuid4())}, []),
    ):
        found = await viewer.get("/leases", params=params)
        assert found.status_code == 200, found.text
        assert [i["ip"] for i in found.json()["items"]] == expected, params
    got = await viewer.get(f"/leases/{lease['lease_id']}")
    assert got.status_code == 200 and got.json() == lease
    missing = await viewer.get(f"/leases/{uuid.uuid4()}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    for params in ({"ip": "10.0.0.256"}, {"mac": "01:02"}, {"state": "gone"}, {"limit": 0}):
        bad = await viewer.get("/leases", params=params)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request", params


async def test_force_release(relay: Relay, viewer: httpx.AsyncClient,
                             operator: httpx.AsyncClient, admin: httpx.AsyncClient,
                             db: Database) -> None:
    address = await _lease(relay, 3)
    lease = (await viewer.get("/leases", params={"ip": address})).json()["items"][0]
    path = f"/leases/{lease['lease_id']}/release"
    assert (await viewer.post(path)).status_code == 403
    done = await operator.post(path)
    assert done.status_code == 200, done.text
    assert done.json()["state"] == "released"
    again = await operator.post(path)
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    assert (await operator.post(f"/leases/{uuid.uuid4()}/release")).status_code == 404
    audit = (await admin.get("/audit", params={"object_type": "lease"})).json()["items"]
    assert audit[0]["action"] == "release" and audit[0]["object_id"] == lease["lease_id"]
    assert audit[0]["before"]["state"] == "active" and audit[0]["after"]["state"] == "released"

    async def topics(conn) -> Any:
        await lease_events.derive_all(conn)  # history rows and events follow the journal
        return [r["topic"] for r in await conn.fetch(
            "SELECT topic FROM events WHERE topic LIKE 'lease.%' ORDER BY id")]

    assert await db.run(topics) == ["lease.granted", "lease.released"]
    # The running server forgot it: another client may have that address now.
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(4), giaddr=RELAY_IP,
                                         requested=address))
    assert offer is not None and o.ip_to_str(offer.yiaddr) == address
    # And the released client's renewal is refused (never acknowledged any more).
    nak = await relay.exchange(request(o.REQUEST, mac_bytes(3), giaddr=RELAY_IP,
                                       ciaddr=address))
    assert nak is not None and nak.message_type == o.NAK


async def test_settings_trusted_relays(relay: Relay, viewer: httpx.AsyncClient,
                                       operator: httpx.AsyncClient, admin: httpx.AsyncClient,
                                       appliance: runtime.Running) -> None:
    shown = await viewer.get("/settings")
    assert shown.status_code == 200
    assert shown.json() == {"trusted_relays": [], "trusted_relays_config": ["127.77.0.0/16"],
                            "updated_at": None}
    rogue_sock = relay_socket(ROGUE_IP)
    rogue = Relay(trio.socket.from_stdlib_socket(rogue_sock), relay.server)
    msg = request(o.DISCOVER, mac_bytes(9), giaddr=RELAY_IP)
    await rogue.send(msg)
    assert await relay.silence(msg.xid)
    server = appliance.state.dhcp
    assert server.counters.drops["untrusted_relay"] == 1

    body = {"trusted_relays": [ROGUE_IP, "127.79.0.0/16"]}
    assert (await operator.patch("/settings", json=body)).status_code == 403
    bad = await admin.patch("/settings", json={"trusted_relays": ["127.0.0.1", "nope"]})
    assert bad.status_code == 422 and "trusted_relays[1]" in bad.json()["error"]["message"]
    extra = await admin.patch("/settings", json={"colour": "blue"})
    assert extra.status_code == 422
    wrong = await admin.patch("/settings", json={"trusted_relays": "127.0.0.1"})
    assert wrong.status_code == 422
    done = await admin.patch("/settings", json={"trusted_relays": [
        ROGUE_IP, "127.79.1.2/16", ROGUE_IP]})
    assert done.status_code == 200, done.text
    assert done.json()["trusted_relays"] == [ROGUE_IP, "127.79.0.0/16"]
    assert done.json()["updated_at"] is not None
    assert (await viewer.get("/settings")).json()["trusted_relays"] == [ROGUE_IP,
                                                                         "127.79.0.0/16"]
    audit = (await admin.get("/audit", params={"object_type": "settings"})).json()["items"]
    assert audit[0]["before"] == {"trusted_relays": []}
    assert audit[0]["after"] == {"trusted_relays": [ROGUE_IP, "127.79.0.0/16"]}
    # In force at once on this node.
    await rogue.send(msg)
    offer = await relay.reply(msg.xid)
    assert offer is not None and offer.message_type == o.OFFER
    rogue_sock.close()


async def test_an_offer_is_no_lease_in_the_api_or_the_history(
    relay: Relay, operator: httpx.AsyncClient, db: Database
) -> None:
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(5), giaddr=RELAY_IP))
    assert offer is not None and offer.message_type == o.OFFER
    # The Offer is held in the DHCP node's memory only: nothing to list, release or show.
    assert (await operator.get("/leases", params={"state": "offered"})).json()["items"] == []
    assert (await operator.get("/leases")).json()["items"] == []

    async def counts(conn) -> Any:
        await lease_events.derive_all(conn)  # history rows and events follow the journal
        return await conn.fetchrow(
            """SELECT (SELECT count(*) FROM events WHERE topic LIKE 'lease.%') AS topics,
                      (SELECT count(*) FROM lease_events) AS history,
                      (SELECT count(*) FROM leases) AS leases""")

    assert dict(await db.run(counts)) == {"topics": 0, "history": 0, "leases": 0}
