"""A directly attached segment served on a named interface: broadcast in, broadcast out.

Two namespaces joined by a veth pair inside 10.77.0.0/16; the server's socket is bound
to its end of the pair (SO_BINDTODEVICE) and the subnet is found from that interface's
address. Needs root and network namespaces (marked ``netns``; skipped otherwise).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import DhcpMessage, parse
from ipamd.runtime.dhcp_servers import dhcp_server
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import seed_subnet
from tests.support import netns
from tests.unit.dhcp.packets import mac_bytes, request

pytestmark = pytest.mark.netns

NETWORK = "10.77.213.0/24"
SERVER_IF = "10.77.213.1/24"
CLIENT_IF = "10.77.213.50/24"


@pytest.fixture
def lab() -> Iterator[netns.Lab]:
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with netns.lab() as made:
        yield made


@pytest.fixture
async def segment(lab: netns.Lab, db: Database, dsn: str,
                  nursery: trio.Nursery) -> AsyncIterator[dict[str, Any]]:
    srv, cli = lab.namespace("srv"), lab.namespace("cli")
    pair = lab.veth("seg", srv, cli, SERVER_IF, CLIENT_IF)

    async def seed(conn) -> Any:
        return await seed_subnet(conn, NETWORK, gateway="10.77.213.1",
                                 pools=[("10.77.213.100", "10.77.213.110")])

    await db.transaction(seed)
    config = make_config(dsn, dhcp={"enabled": True, "listen": [], "interfaces": [pair.a]})
    server = dhcp_server(AppState(config=config, db=db))
    scope = trio.CancelScope()
    done = trio.Event()

    async def serve(*, task_status: trio.TaskStatus[None]) -> None:
        try:
            with scope:
                await server.run(task_status=task_status)
        finally:
            done.set()

    with netns.inside(srv):  # the server's sockets (and interface lookup) in its namespace
        server._open_sockets()
    server._open_sockets = lambda: None  # type: ignore[method-assign]
    await nursery.start(serve)
    with netns.inside(cli):
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        client.setsockopt(socket.SOL_SOCKET, 25, pair.b.encode())  # SO_BINDTODEVICE
        client.bind(("0.0.0.0", 68))
    try:
        yield {"server": server, "client": trio.socket.from_stdlib_socket(client)}
    finally:
        scope.cancel()
        await done.wait()
        client.close()


async def _exchange(sock: Any, msg: DhcpMessage) -> DhcpMessage:
    await sock.sendto(msg.to_bytes(), ("255.255.255.255", 67))
    with trio.fail_after(5):
        while True:
            data, _source = await sock.recvfrom(4096)
            reply = parse(data)
            if reply.xid == msg.xid:
                return reply


async def test_directly_attached_client_gets_a_lease(segment: dict[str, Any]) -> None:
    sock, server = segment["client"], segment["server"]
    mac = mac_bytes(7)
    offer = await _exchange(sock, request(o.DISCOVER, mac, flags=o.FLAG_BROADCAST))
    assert offer.message_type == o.OFFER and offer.giaddr == 0
    assert o.ip_to_str(offer.yiaddr).startswith("10.77.213.1")
    assert offer.options[o.SERVER_ID] == bytes((10, 77, 213, 1))  # the interface's address
    ack = await _exchange(sock, request(o.REQUEST, mac, requested=o.ip_to_str(offer.yiaddr),
                                        server_id="10.77.213.1"))
    assert ack.message_type == o.ACK and ack.yiaddr == offer.yiaddr
    assert server.counters.sent[o.ACK] == 1
