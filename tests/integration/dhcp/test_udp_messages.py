"""Message handling over UDP on loopback (relayed): NAK, Decline, Inform, reservations,
classes, vendor options, untrusted relays, and a plan change picked up by NOTIFY."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from ipamd.core import lease_events
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import DEFAULT_TENANT, RELAY_IP, seed_subnet
from tests.unit.dhcp.packets import ip, mac_bytes, relay_info, request

SERVER = "127.0.0.1"
PXE_43 = bytes.fromhex("0601080a04000050584500")


@pytest.fixture
def dhcp_overrides() -> dict[str, Any]:
    return {"decline_probation_seconds": 3600}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn) -> dict[str, Any]:
        gold = await conn.fetchval(
            """INSERT INTO client_classes (tenant_id, name, match, value)
               VALUES ($1, 'voip', 'vendor_class', 'Polycom') RETURNING id""", DEFAULT_TENANT)
        ids = await seed_subnet(
            conn, pools=[("127.77.1.10", "127.77.1.12"), ("127.77.2.10", "127.77.2.11", gold)],
            lease_time=900, next_server="127.77.0.69", boot_file="undionly.kpxe",
        )
        await conn.execute(
            "INSERT INTO reservations (subnet_id, ip, mac, hostname) VALUES ($1, $2, $3, $4)",
            ids["subnet_id"], "127.77.3.3", "02:aa:00:00:00:01", "printer")
        await conn.execute(
            """INSERT INTO dhcp_options (subnet_id, code, payload, vendor_class)
               VALUES ($1, 6, $2, NULL), ($1, 43, $3, 'PXEClient')""",
            ids["subnet_id"], {"addresses": ["127.0.0.53"]}, {"hex": PXE_43.hex(":")})
        return {**ids, "gold": gold}

    return await db.transaction(seed)


async def _dora(relay: Any, mac: bytes, **extra: Any) -> tuple[Any, Any]:
    offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP, **extra))
    assert offer is not None and offer.message_type == o.OFFER
    ack = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, server_id=SERVER,
                                       requested=o.ip_to_str(offer.yiaddr), **extra))
    assert ack is not None
    return offer, ack


async def _rows(db: Database, sql: str, *args: Any) -> list[dict[str, Any]]:
    async def read(conn) -> Any:
        await lease_events.derive_all(conn)  # history rows and events follow the journal
        return [dict(r) for r in await conn.fetch(sql, *args)]

    return await db.run(read)


async def test_renew_of_an_address_never_acknowledged_is_nakked(dhcp: Any) -> None:
    relay = dhcp.relay
    nak = await relay.exchange(request(o.REQUEST, mac_bytes(10), giaddr=RELAY_IP,
                                       ciaddr="127.77.1.11"))
    assert nak is not None and nak.message_type == o.NAK and nak.yiaddr == 0
    init = await relay.exchange(request(o.REQUEST, mac_bytes(10), giaddr=RELAY_IP,
                                        requested="127.77.1.11"))
    assert init is not None and init.message_type == o.NAK
    wrong_net = await relay.exchange(request(o.REQUEST, mac_bytes(10), giaddr=RELAY_IP,
                                             requested="10.1.2.3"))
    assert wrong_net is not None and wrong_net.message_type == o.NAK
    # Someone else's lease: NAK too.
    _, ack = await _dora(relay, mac_bytes(11))
    assert ack.message_type == o.ACK
    steal = await relay.exchange(request(o.REQUEST, mac_bytes(12), giaddr=RELAY_IP,
                                         ciaddr=o.ip_to_str(ack.yiaddr)))
    assert steal is not None and steal.message_type == o.NAK
    assert dhcp.server.counters.sent[o.NAK] == 4


async def test_decline_quarantines_and_emits_lease_declined(dhcp: Any) -> None:
    relay, db = dhcp.relay, dhcp.db
    _, ack = await _dora(relay, mac_bytes(20))
    address = o.ip_to_str(ack.yiaddr)
    decline = request(o.DECLINE, mac_bytes(20), giaddr=RELAY_IP, requested=address,
                      server_id=SERVER)
    await relay.send(decline)
    assert await relay.silence(decline.xid)
    (row,) = await _rows(db, "SELECT state, expires_at - now() > interval '50 minutes' AS long "
                             "FROM leases WHERE ip = $1::inet", address)
    assert row == {"state": "declined", "long": True}
    events = await _rows(db, "SELECT topic, payload FROM events WHERE topic LIKE 'lease.%' "
                             "ORDER BY id")
    assert [e["topic"] for e in events] == ["lease.granted", "lease.declined"]
    assert events[1]["payload"]["ip"] == address and events[1]["payload"]["state"] == "declined"
    # The same client comes back: it gets another address, never the declined one.
    _, again = await _dora(relay, mac_bytes(20))
    assert again.message_type == o.ACK and again.yiaddr != ack.yiaddr


async def test_inform_gets_options_and_no_lease(dhcp: Any) -> None:
    relay, db = dhcp.relay, dhcp.db
    ack = await relay.exchange(request(o.INFORM, mac_bytes(30), giaddr=RELAY_IP,
                                       ciaddr="127.77.9.9", extra={o.PRL: bytes((1, 6))}))
    assert ack is not None and ack.message_type == o.ACK and ack.yiaddr == 0
    assert ack.options[o.DNS] == ip("127.0.0.53").to_bytes(4, "big")
    assert o.LEASE_TIME not in ack.options
    assert await _rows(db, "SELECT 1 FROM leases") == []


async def test_reservation_yields_its_address_and_hostname(dhcp: Any) -> None:
    offer, ack = await _dora(dhcp.relay, bytes.fromhex("02aa00000001"),
                             extra={o.PRL: bytes((1, 3, 12))})
    assert offer.yiaddr == ip("127.77.3.3") and ack.yiaddr == ip("127.77.3.3")
    assert ack.options[o.HOSTNAME] == b"printer"
    # Nobody else is ever offered the reserved address.
    for n in range(40, 43):
        offer = await dhcp.relay.exchange(request(o.DISCOVER, mac_bytes(n), giaddr=RELAY_IP,
                                                  requested="127.77.3.3"))
        assert offer is not None and offer.yiaddr != ip("127.77.3.3")


async def test_client_class_steers_to_its_pool(dhcp: Any) -> None:
    phone = {o.VENDOR_CLASS: b"Polycom-VVX"}
    _, ack = await _dora(dhcp.relay, mac_bytes(50), extra=phone)
    assert ip("127.77.2.10") <= ack.yiaddr <= ip("127.77.2.11")
    plain, _ = await _dora(dhcp.relay, mac_bytes(51))
    assert ip("127.77.1.10") <= plain.yiaddr <= ip("127.77.1.12")


async def test_pxe_client_gets_next_server_boot_file_and_option_43(dhcp: Any) -> None:
    pxe = {o.VENDOR_CLASS: b"PXEClient:Arch:00000:UNDI:002001", o.PRL: bytes((1, 3, 43, 66, 67))}
    offer = await dhcp.relay.exchange(request(o.DISCOVER, mac_bytes(60), giaddr=RELAY_IP,
                                              extra=pxe))
    assert offer is not None
    assert offer.siaddr == ip("127.77.0.69") and offer.file == b"undionly.kpxe"
    assert offer.options[o.VENDOR_SPECIFIC] == PXE_43


async def test_untrusted_relay_gets_nothing_until_trusted(dhcp: Any, nursery: Any) -> None:
    """A relay outside the trusted list is dropped and counted (docs/relays.md)."""
    from tests.integration.dhcp.harness import Relay, relay_socket

    sock = relay_socket("127.78.0.1")
    rogue = Relay(trio.socket.from_stdlib_socket(sock), dhcp.server.addresses[0])
    nursery.start_soon(rogue.run)
    # giaddr inside the served subnet, but the packet comes from 127.78.0.1.
    msg = request(o.DISCOVER, mac_bytes(70), giaddr=RELAY_IP)
    await rogue.send(msg)
    assert await dhcp.relay.silence(msg.xid) and await rogue.silence(msg.xid, 0.1)
    assert dhcp.server.counters.drops["untrusted_relay"] == 1
    assert await _rows(dhcp.db, "SELECT 1 FROM leases") == []

    async def trust(conn) -> None:
        await conn.execute(
            "INSERT INTO settings (key, value) VALUES ('dhcp.trusted_relays', $1)",
            ["127.78.0.1"])

    await dhcp.db.run(trust)
    await dhcp.server.reload_plan()
    await rogue.send(msg)
    offer = await dhcp.relay.reply(msg.xid)  # replies go to giaddr, the real relay
    assert offer is not None and offer.message_type == o.OFFER
    sock.close()


async def test_unknown_link_gets_silence(dhcp: Any) -> None:
    msg = request(o.DISCOVER, mac_bytes(80), giaddr=RELAY_IP,
                  extra={o.RELAY_AGENT: relay_info(link="127.99.0.0")})
    await dhcp.relay.send(msg)
    assert await dhcp.relay.silence(msg.xid)
    assert dhcp.server.counters.drops["no_subnet"] == 1


async def test_plan_changes_arrive_by_notify(dhcp: Any) -> None:
    """A subnet added after start is served once its transaction commits."""
    msg = request(o.DISCOVER, mac_bytes(90), giaddr=RELAY_IP,
                  extra={o.RELAY_AGENT: relay_info(link="127.79.0.0")})
    await dhcp.relay.send(msg)
    assert await dhcp.relay.silence(msg.xid)
    before = dhcp.server.env.plan.version

    async def add(conn) -> None:
        await seed_subnet(conn, "127.79.0.0/24", gateway="127.79.0.1",
                          pools=[("127.79.0.100", "127.79.0.110")])

    await dhcp.db.transaction(add)
    with trio.fail_after(5):
        while dhcp.server.env.plan.version == before:
            await trio.sleep(0.02)
    offer = await dhcp.relay.exchange(request(o.DISCOVER, mac_bytes(90), giaddr=RELAY_IP,
                                              extra={o.RELAY_AGENT: relay_info(
                                                  link="127.79.0.0")}))
    assert offer is not None and ip("127.79.0.100") <= offer.yiaddr <= ip("127.79.0.110")
