"""DDNS for DHCPv6 (RFC 4704) through the embedded DNS server of the running appliance: a
grant with a Client FQDN option publishes AAAA + ip6.arpa PTR, its answer says the server
does it (S), and a Release removes both."""

from __future__ import annotations

from ipaddress import IPv6Address
from typing import Any

import dns.message
import dns.query
import dns.rcode
import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.core import dnswire
from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.options import ClientFqdn, IaNa
from tests.integration.dhcp6.harness import (
    Relay6,
    client_duid,
    dhcp6_section,
    message,
    relay_socket,
    seed_v6,
)
from tests.integration.ipam.helpers import created
from tests.support.bind import free_port
from tests.support.waiting import until

DNS_PORT = free_port()
ZONE = "lan6.example"
REVERSE6 = "1.0.0.0.7.7.0.0.8.b.d.0.1.0.0.2.ip6.arpa"  # 2001:db8:77:1::/64
REVERSE4 = "77.127.in-addr.arpa"


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_v6(conn)

    return await db.transaction(seed)


@pytest.fixture
async def config_overrides(seeded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"dhcp6": dhcp6_section(),
            "dns": {"enabled": True, "listen": [f"127.0.0.1:{DNS_PORT}"],
                    "ns_name": "ns1.lan6.example", "hostmaster": "hostmaster.lan6.example",
                    "refresh_seconds": 5.0}}


@pytest.fixture
async def relay6(appliance: runtime.Running, nursery: trio.Nursery) -> Relay6:
    server = appliance.state.dhcp6
    assert server is not None
    found = Relay6(trio.socket.from_stdlib_socket(relay_socket()), server.addresses[0])
    nursery.start_soon(found.run)
    return found


def _query(name: str, rtype: str) -> dns.message.Message:
    return dns.query.udp(dns.message.make_query(name, rtype), "127.0.0.1", port=DNS_PORT,
                         timeout=2)


async def answer(name: str, rtype: str) -> list[str]:
    reply = await trio.to_thread.run_sync(_query, name, rtype)
    return sorted(rdata.to_text() for rrset in reply.answer for rdata in rrset)


async def _ddns_subnet(operator: httpx.AsyncClient, admin: httpx.AsyncClient,
                       subnet_id: str) -> None:
    server = created(await admin.post("/dns-servers", json={"name": "self",
                                                            "adapter": "embedded"}))
    for zone in (ZONE, REVERSE6, REVERSE4):
        created(await operator.post("/dns-zones", json={"name": zone,
                                                        "server_id": server["id"]}))
    ddns = {"ddns_adapter": "embedded", "ddns_server_id": server["id"], "ddns_zone": ZONE}
    # An IPv6 subnet's PTR records live under ip6.arpa: in-addr.arpa is refused.
    wrong = await operator.patch(f"/subnets/{subnet_id}",
                                 json={**ddns, "ddns_reverse_zone": REVERSE4})
    assert wrong.status_code == 422, wrong.text
    assert "ddns_reverse_zone" in wrong.text and "ip6.arpa" in wrong.text
    done = await operator.patch(f"/subnets/{subnet_id}",
                                json={**ddns, "ddns_reverse_zone": REVERSE6})
    assert done.status_code == 200, done.text


def _fqdn_solicit(xid: int, n: int, name: str) -> Message:
    base = message(p.SOLICIT, xid, client_duid(n), rapid=True, oro=(23, 39))
    fqdn = ClientFqdn(p.FQDN_S, dnswire.labels_of(name), False)
    return Message(base.msg_type, base.transaction_id, [*base.options, fqdn])


async def test_a_v6_grant_publishes_aaaa_and_ptr_and_a_release_removes_them(
        appliance: runtime.Running, relay6: Relay6, operator: httpx.AsyncClient,
        admin: httpx.AsyncClient, seeded: dict[str, Any]) -> None:
    await _ddns_subnet(operator, admin, str(seeded["subnet_id"]))
    server = appliance.state.dhcp6
    assert server is not None

    async def ddns_link() -> bool:
        link = server.plans.current.plan.link_for(IPv6Address("2001:db8:77:1::1"))
        return link is not None and link.ddns_zone == ZONE

    await until(ddns_link, "the DHCPv6 plan took the subnet's DDNS zone")
    reply = await relay6.exchange(_fqdn_solicit(0x60, 6, "laptop"))
    assert reply is not None and reply.msg_type == p.REPLY
    said = reply.first(ClientFqdn)
    assert said is not None and said.flags == p.FQDN_S  # the server updates AAAA and PTR
    assert said.name == f"laptop.{ZONE}."
    ia = reply.first(IaNa)
    assert ia is not None and ia.addresses
    address = ia.addresses[0].address
    name = f"laptop.{ZONE}"

    async def published() -> bool:
        return await answer(name, "AAAA") == [str(address)]

    await until(published, "the embedded server answers the client's AAAA")
    assert await answer(address.reverse_pointer, "PTR") == [f"{name}."]
    assert await answer(name, "A") == []  # no IPv4 lease: no A

    release = message(p.RELEASE, 0x61, client_duid(6), server=server.server_duid,
                      na=[str(address)])
    released = await relay6.exchange(release)
    assert released is not None and released.msg_type == p.REPLY

    async def withdrawn() -> bool:
        reply = await trio.to_thread.run_sync(_query, name, "AAAA")
        return reply.rcode() == dns.rcode.NXDOMAIN

    await until(withdrawn, "the released address's AAAA withdrawn")
    assert await answer(address.reverse_pointer, "PTR") == []
