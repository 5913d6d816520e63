"""DDNS for DHCPv6 through the outbox against a real BIND 9 (RFC 2136 + TSIG): a grant with a
Client FQDN option → AAAA, ip6.arpa PTR and a DHCID made from the DUID (RFC 4701 §3.3, type
2); another DUID asking for the same name gets its address, not the name (RFC 4703); a
Release removes the records. A dual-stack client (RFC 4361, one DUID) against BIND and a
real PowerDNS: A and AAAA under one name and one DHCID, kept until the last address goes."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
from collections.abc import Iterator
from ipaddress import IPv6Address
from pathlib import Path
from typing import Any

import dns.name
import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.core import dnswire
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.options import ClientFqdn, IaNa
from tests.integration.dhcp.harness import RELAY_IP, Relay
from tests.integration.dhcp6.harness import (
    Relay6,
    client_duid,
    dhcp6_section,
    message,
    relay_socket,
    seed_v6,
)
from tests.integration.dns.ddns import (
    REVERSE,
    ZONE,
    appliance_config,
    ddns_subnet,
    dig,
    dns_row,
)
from tests.integration.ipam.helpers import created
from tests.support.bind import KEY_NAME, Bind, need_bind
from tests.support.pdns import PowerDns, need_pdns
from tests.support.waiting import until
from tests.unit.dhcp.packets import mac_bytes, request

SECRET_ENV, PDNS_KEY_ENV = "IPAMD_TEST_TSIG6", "IPAMD_TEST_PDNS6_KEY"
REVERSE6 = "1.0.0.0.7.7.0.0.8.b.d.0.1.0.0.2.ip6.arpa"  # 2001:db8:77:1::/64


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_v6(conn)

    return await db.transaction(seed)


@pytest.fixture
async def config_overrides(seeded: dict[str, Any],
                           relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    # DHCPv4 too, behind its loopback relay: a dual-stack client's A and AAAA.
    return {**appliance_config(relay_sock), "dhcp6": dhcp6_section()}


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Bind]:
    need_bind()
    server = Bind(tmp_path / "bind", [ZONE, REVERSE, REVERSE6])
    server.start()
    os.environ[SECRET_ENV] = server.secret
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pdns(tmp_path: Path) -> Iterator[PowerDns]:
    need_pdns()
    server = PowerDns(tmp_path / "pdns")
    server.start()
    for zone in (ZONE, REVERSE, REVERSE6):
        server.create_zone(zone)
    os.environ[PDNS_KEY_ENV] = server.key
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def relay6(appliance: runtime.Running, nursery: trio.Nursery) -> Relay6:
    server = appliance.state.dhcp6
    assert server is not None
    found = Relay6(trio.socket.from_stdlib_socket(relay_socket()), server.addresses[0])
    nursery.start_soon(found.run)
    return found


def _fqdn_solicit(xid: int, n: int, name: str) -> Message:
    base = message(p.SOLICIT, xid, client_duid(n), rapid=True, oro=(23, 39))
    fqdn = ClientFqdn(p.FQDN_S, dnswire.labels_of(name), False)
    return Message(base.msg_type, base.transaction_id, [*base.options, fqdn])


def _address(reply: Message | None) -> IPv6Address:
    assert reply is not None and reply.msg_type == p.REPLY
    ia = reply.first(IaNa)
    assert ia is not None and ia.addresses, reply
    return ia.addresses[0].address


async def _bind_server(admin: httpx.AsyncClient, bind: Bind) -> dict[str, Any]:
    return created(await admin.post("/dns-servers", json={
        "name": "bind", "adapter": "bind_tsig", "address": "127.0.0.1", "port": bind.port,
        "tsig_key_name": KEY_NAME, "secret_ref": f"env:{SECRET_ENV}"}))


async def _v6_ddns(appliance: runtime.Running, operator: httpx.AsyncClient,
                   seeded: dict[str, Any], server: dict[str, Any], zones: tuple[str, ...]) -> None:
    for zone in zones:
        created(await operator.post("/dns-zones", json={"name": zone, "server_id": server["id"]}))
    patched = await operator.patch(f"/subnets/{seeded['subnet_id']}", json={
        "ddns_adapter": server["adapter"], "ddns_server_id": server["id"], "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE6, "ddns_ttl": 120})
    assert patched.status_code == 200, patched.text
    dhcp6 = appliance.state.dhcp6
    assert dhcp6 is not None

    async def ddns_link() -> bool:
        link = dhcp6.plans.current.plan.link_for(IPv6Address("2001:db8:77:1::1"))
        return link is not None and link.ddns_zone == ZONE

    await until(ddns_link, "the DHCPv6 plan took the subnet's DDNS zone")


async def test_v6_ddns_against_bind(appliance: runtime.Running, relay6: Relay6,
                                    operator: httpx.AsyncClient, viewer: httpx.AsyncClient,
                                    admin: httpx.AsyncClient, seeded: dict[str, Any],
                                    bind: Bind) -> None:
    server = await _bind_server(admin, bind)
    await _v6_ddns(appliance, operator, seeded, server, (ZONE, REVERSE6))
    dhcp6 = appliance.state.dhcp6
    assert dhcp6 is not None
    name = f"laptop.{ZONE}"
    address = _address(await relay6.exchange(_fqdn_solicit(0x70, 7, "laptop")))
    row = await dns_row(viewer, "lease.granted", name, {"delivered"})
    assert row["dns"]["ip"] == str(address)
    await dig(bind, name, "AAAA", [str(address)])
    await dig(bind, address.reverse_pointer, "PTR", [f"{name}."])
    # RFC 4701 §3.3: identifier type 2 (the DUID), digest type 1, SHA-256(DUID || name wire).
    wire = dns.name.from_text(name).canonicalize().to_wire()
    digest = hashlib.sha256(client_duid(7).raw + wire).digest()
    assert bind.dig(name, "DHCID") == [base64.b64encode(b"\x00\x02\x01" + digest).decode()]

    # Another DUID asking for the name gets an address, not the name (RFC 4703 §5.3.2).
    other = _address(await relay6.exchange(_fqdn_solicit(0x71, 8, "laptop")))
    refused = await dns_row(viewer, "lease.granted", name, {"failed"})
    assert refused["last_error"].startswith("YXDOMAIN"), refused
    assert other != address and bind.dig(name, "AAAA") == [str(address)]

    release = message(p.RELEASE, 0x72, client_duid(7), server=dhcp6.server_duid,
                      na=[str(address)])
    assert (await relay6.exchange(release)) is not None
    await dns_row(viewer, "lease.released", name, {"delivered"})
    await dig(bind, name, "AAAA", [])
    await dig(bind, address.reverse_pointer, "PTR", [])


async def _v4_exchange(relay: Relay, mtype: int, extra: dict[int, bytes], xid: int | None = None,
                       **fields: Any) -> Any:
    return await relay.exchange(request(mtype, mac_bytes(900_009), xid=xid, giaddr=RELAY_IP,
                                        extra=extra, **fields), timeout=0.5)


async def _dual_stack(appliance: runtime.Running, relay6: Relay6, relay_sock: socket.socket,
                      operator: httpx.AsyncClient, viewer: httpx.AsyncClient,
                      seeded: dict[str, Any], server: dict[str, Any], dns: Any) -> None:
    """An RFC 4361 DHCPv4 client and the DHCPv6 client of the same DUID are one DHCID
    (RFC 4701 §3.3): its AAAA joins its A under one name, and releasing one address keeps the
    DHCID for the other (RFC 4703 §5.5); the last release removes it."""
    await ddns_subnet(operator, server["id"], server["adapter"])  # ZONE, REVERSE, a v4 subnet
    await _v6_ddns(appliance, operator, seeded, server, (REVERSE6,))
    dhcp6 = appliance.state.dhcp6
    assert dhcp6 is not None
    duid = client_duid(9)
    extra = {o.HOSTNAME: b"dual", o.CLIENT_ID: b"\xff" + (1).to_bytes(4, "big") + duid.raw}
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        offer = None
        for _ in range(20):  # the DHCPv4 plan reloads on NOTIFY after the API's changes
            offer = await _v4_exchange(relay, o.DISCOVER, extra)
            if offer is not None:
                break
        assert offer is not None and offer.message_type == o.OFFER
        ip4 = o.ip_to_str(offer.yiaddr)
        ack = await _v4_exchange(relay, o.REQUEST, extra, xid=offer.xid,
                                 server_id="127.0.0.1", requested=ip4)
        assert ack is not None and ack.message_type == o.ACK
        name = f"dual.{ZONE}"
        await dig(dns, name, "A", [ip4])

        address = _address(await relay6.exchange(_fqdn_solicit(0x80, 9, "dual")))
        await dig(dns, name, "AAAA", [str(address)])
        await dig(dns, address.reverse_pointer, "PTR", [f"{name}."])
        assert dns.dig(name, "A") == [ip4] and len(dns.dig(name, "DHCID")) == 1

        release = message(p.RELEASE, 0x81, duid, server=dhcp6.server_duid, na=[str(address)])
        assert (await relay6.exchange(release)) is not None
        await dns_row(viewer, "lease.released", name, {"delivered"})
        await dig(dns, name, "AAAA", [])
        await dig(dns, address.reverse_pointer, "PTR", [])
        assert dns.dig(name, "A") == [ip4] and len(dns.dig(name, "DHCID")) == 1

        await relay.send(request(o.RELEASE, mac_bytes(900_009), giaddr=RELAY_IP, ciaddr=ip4,
                                 server_id="127.0.0.1", extra=extra))
        await dig(dns, name, "A", [])
        await dig(dns, name, "DHCID", [])
        nursery.cancel_scope.cancel()


async def test_a_dual_stack_client_keeps_its_dhcid_until_its_last_address_goes(
        appliance: runtime.Running, relay6: Relay6, relay_sock: socket.socket,
        operator: httpx.AsyncClient, viewer: httpx.AsyncClient, admin: httpx.AsyncClient,
        seeded: dict[str, Any], bind: Bind) -> None:
    server = await _bind_server(admin, bind)
    await _dual_stack(appliance, relay6, relay_sock, operator, viewer, seeded, server, bind)


async def test_dual_stack_against_powerdns(
        appliance: runtime.Running, relay6: Relay6, relay_sock: socket.socket,
        operator: httpx.AsyncClient, viewer: httpx.AsyncClient, admin: httpx.AsyncClient,
        seeded: dict[str, Any], pdns: PowerDns) -> None:
    """The same through PowerDNS's HTTP API (powerdns_http): AAAA, ip6.arpa PTR, one DHCID."""
    server = created(await admin.post("/dns-servers", json={
        "name": "pdns", "adapter": "powerdns_http", "api_url": pdns.api,
        "secret_ref": f"env:{PDNS_KEY_ENV}"}))
    await _dual_stack(appliance, relay6, relay_sock, operator, viewer, seeded, server, pdns)


async def test_a_new_fqdn_at_renew_moves_the_records(
        appliance: runtime.Running, relay6: Relay6, operator: httpx.AsyncClient,
        viewer: httpx.AsyncClient, admin: httpx.AsyncClient, seeded: dict[str, Any],
        bind: Bind) -> None:
    """A client renewing with another Client FQDN (39): the old name's AAAA and DHCID go, the
    PTR names the new one (RFC 4704 §5: the server updates DNS for the name it now holds)."""
    server = await _bind_server(admin, bind)
    await _v6_ddns(appliance, operator, seeded, server, (ZONE, REVERSE6))
    dhcp6 = appliance.state.dhcp6
    assert dhcp6 is not None
    old, new = f"laptop.{ZONE}", f"tablet.{ZONE}"
    address = _address(await relay6.exchange(_fqdn_solicit(0x80, 9, "laptop")))
    await dns_row(viewer, "lease.granted", old, {"delivered"})
    await dig(bind, old, "AAAA", [str(address)])

    base = message(p.RENEW, 0x81, client_duid(9), server=dhcp6.server_duid, na=[str(address)],
                   oro=(23, 39))
    renew = Message(base.msg_type, base.transaction_id,
                    [*base.options, ClientFqdn(p.FQDN_S, dnswire.labels_of("tablet"), False)])
    assert _address(await relay6.exchange(renew)) == address
    removed = await dns_row(viewer, "lease.renewed", old, {"delivered"})
    assert (removed["dns"]["op"], removed["dns"]["ip"]) == ("remove", str(address)), removed
    added = await dns_row(viewer, "lease.renewed", new, {"delivered"})
    assert added["dns"]["op"] == "add", added
    await dig(bind, new, "AAAA", [str(address)])
    await dig(bind, old, "AAAA", [])
    assert bind.dig(old, "DHCID") == [] and len(bind.dig(new, "DHCID")) == 1
    await dig(bind, address.reverse_pointer, "PTR", [f"{new}."])
