"""DHCPv6 bindings on the whole appliance: GET /leases shows them (DUID, IAID, IA type, prefix
length, lifetimes), force-release ends them, /metrics counts the DHCPv6 server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.options import IaNa, IaPd
from tests.integration.dhcp6.harness import (
    Relay6,
    client_duid,
    dhcp6_section,
    message,
    relay_socket,
    seed_v6,
)


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_v6(conn)

    return await db.transaction(seed)


@pytest.fixture
async def config_overrides(seeded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # Seeded first, so the server starts with its plan. No DHCPv4 server.
    return {"dhcp6": dhcp6_section()}


@pytest.fixture
async def relay6(appliance: runtime.Running, nursery: trio.Nursery) -> Relay6:
    server = appliance.state.dhcp6
    assert server is not None
    found = Relay6(trio.socket.from_stdlib_socket(relay_socket()), server.addresses[0])
    nursery.start_soon(found.run)
    return found


def _server_duid(appliance: runtime.Running) -> Any:
    return appliance.state.dhcp6.server_duid  # type: ignore[union-attr]


async def _bind(relay: Relay6, appliance: runtime.Running, n: int, xid: int) -> Message:
    reply = await relay.exchange(message(p.SOLICIT, xid, client_duid(n), pd=[], rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY
    return reply


async def test_leases_show_v6_bindings_and_force_release_ends_one(
        appliance: runtime.Running, relay6: Relay6, operator: httpx.AsyncClient) -> None:
    reply = await _bind(relay6, appliance, 1, 0x10)
    ia = reply.first(IaNa)
    pd = reply.first(IaPd)
    assert ia is not None and pd is not None
    address = str(ia.addresses[0].address)
    page = (await operator.get("/leases")).json()["items"]
    by_type = {item["ia_type"]: item for item in page}
    assert set(by_type) == {"na", "pd"}
    na = by_type["na"]
    assert na["ip"] == address and na["duid"] == client_duid(1).text and na["iaid"] == 1
    assert (na["prefix_length"], na["preferred_lifetime"], na["valid_lifetime"]) == (128, 2500, 4000)
    assert na["giaddr"] == "2001:db8:77:1::1" and na["state"] == "active"
    assert by_type["pd"]["prefix_length"] == 56
    assert by_type["pd"]["ip"] == str(pd.prefixes[0].network.network_address)
    found = (await operator.get("/leases", params={"ip": address})).json()["items"]
    assert [item["lease_id"] for item in found] == [na["lease_id"]]

    released = await operator.post(f"/leases/{na['lease_id']}/release")
    assert released.status_code == 200, released.text
    assert released.json()["state"] == "released"
    # The client's Renew: this server no longer holds that binding (NoBinding, RFC 8415
    # §18.3.4), whichever process took the force-release.
    renew = await relay6.exchange(message(p.RENEW, 0x11, client_duid(1),
                                          server=_server_duid(appliance), na=[address]))
    assert renew is not None
    renewed = renew.first(IaNa)
    assert renewed is not None and renewed.status is not None
    assert renewed.status.status == p.STATUS_NO_BINDING


async def test_metrics_count_dhcp6(appliance: runtime.Running, relay6: Relay6,
                                   viewer: httpx.AsyncClient) -> None:
    await _bind(relay6, appliance, 3, 0x30)
    await relay6.send_raw(b"\x0c\x00")
    assert await relay6.silence(0x31)  # the bad datagram had its turn meanwhile
    text = (await viewer.get("/metrics")).text
    assert 'ipamd_dhcp6_messages_received_total{type="solicit"} 1.0' in text
    assert 'ipamd_dhcp6_messages_sent_total{type="reply"} 1.0' in text
    assert 'ipamd_dhcp6_drops_total{reason="too_short"} 1.0' in text
    assert 'ipamd_dhcp6_lease_transitions_total{event="granted"} 2.0' in text


async def test_history_of_v6_bindings_names_the_ia(
        appliance: runtime.Running, relay6: Relay6, viewer: httpx.AsyncClient) -> None:
    """/history?duid= and ?ip= (an address, or one inside a delegated prefix) show the IAID,
    the IA type and the prefix length; the CSV carries them too."""
    reply = await _bind(relay6, appliance, 3, 0x30)
    ia, pd = reply.first(IaNa), reply.first(IaPd)
    assert ia is not None and pd is not None
    address, prefix = ia.addresses[0].address, pd.prefixes[0].network
    found = await viewer.get("/history", params={"duid": client_duid(3).text})
    assert found.status_code == 200, found.text
    rows = {item["ia_type"]: item for item in found.json()["items"]}
    assert set(rows) == {"na", "pd"}
    assert (rows["na"]["ip"], rows["na"]["iaid"], rows["na"]["prefix_length"]) == \
        (str(address), 1, 128)
    assert (rows["pd"]["ip"], rows["pd"]["iaid"], rows["pd"]["prefix_length"]) == \
        (str(prefix.network_address), 1, prefix.prefixlen)
    assert rows["na"]["duid"] == rows["pd"]["duid"] == client_duid(3).text

    inside = str(prefix.network_address + 0x1234)
    for ip, ia_type in ((str(address), "na"), (inside, "pd"),
                        (str(prefix.network_address), "pd")):
        items = (await viewer.get("/history", params={"ip": ip})).json()["items"]
        assert [(item["ia_type"], item["state"]) for item in items] == [(ia_type, "active")], ip
    outside = str(prefix.network_address + (1 << (128 - prefix.prefixlen)))
    assert (await viewer.get("/history", params={"ip": outside})).json()["items"] == []

    csv = await viewer.get("/history", params={"duid": client_duid(3).text, "format": "csv"})
    header, *lines = csv.text.strip().split("\r\n")
    assert header.endswith(",iaid,ia_type,prefix_length")
    assert sorted(line.rsplit(",", 3)[1:] for line in lines) == \
        [["1", "na", "128"], ["1", "pd", str(prefix.prefixlen)]]


async def test_delegation_pool_with_a_live_prefix_is_not_deleted(
        appliance: runtime.Running, relay6: Relay6, seeded: dict[str, Any],
        operator: httpx.AsyncClient) -> None:
    """DELETE /pd-pools/{id} while a delegated prefix of it is live: 409, as a subnet's
    delete with a live lease (docs/api-ipam.md); once released, the pool goes."""
    await _bind(relay6, appliance, 5, 0x50)
    pool = f"/pd-pools/{seeded['pd_pool_id']}"
    refused = await operator.delete(pool)
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "conflict"
    assert error["message"] == ("the delegation pool 2001:db8:4400::/48 still has 1 live lease; "
                                "delete them first")
    assert (await operator.get(pool)).status_code == 200
    page = (await operator.get("/leases", params={"state": "active"})).json()["items"]
    (pd,) = [item for item in page if item["ia_type"] == "pd"]
    released = await operator.post(f"/leases/{pd['lease_id']}/release")
    assert released.status_code == 200, released.text
    deleted = await operator.delete(pool)
    assert deleted.status_code == 204, deleted.text
    assert (await operator.get(pool)).status_code == 404
