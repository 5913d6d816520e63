"""The ping check over real sockets (docs/api-ipam.md, "Ping check").

The pinger's ICMP socket, of either kind, against hosts in a namespace the test makes; then
the DHCP server in a namespace serving a directly attached segment whose client namespace
also holds a pool address (a host IPAM does not know): that address is held as a conflict
and another offered, and other clients' exchanges go on while a probe waits. Needs root and
network namespaces (marked ``netns``; skipped otherwise).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio

from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import DhcpMessage, parse
from ipamd.dhcp.pingcheck import ANSWERED, PING_CONFLICT_KEY, SILENT, PingGate, Probe
from ipamd.dhcp.pinger import Pinger
from ipamd.runtime.dhcp_servers import dhcp_server
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import seed_subnet
from tests.support import netns
from tests.unit.dhcp import packets
from tests.unit.dhcp.packets import ip, mac_bytes

pytestmark = pytest.mark.netns

NETWORK = "10.77.215.0/24"
SERVER_IF, CLIENT_IF = "10.77.215.1/24", "10.77.215.50/24"
POOL = ("10.77.215.100", "10.77.215.110")
RESERVED = "10.77.215.20"


@pytest.fixture
def lab() -> Iterator[netns.Lab]:
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with netns.lab() as made:
        yield made


# ---------------------------------------------------------------------- the pinger alone


@pytest.mark.parametrize(("groups", "kind"), [("0 2147483647", "dgram"), ("1 0", "raw")])
async def test_the_pinger_tells_an_answering_host_from_a_silent_address(
    lab: netns.Lab, groups: str, kind: str,
) -> None:
    """The unprivileged socket where net.ipv4.ping_group_range admits the group, else raw."""
    here, there = lab.namespace("pg"), lab.namespace("ph")
    lab.sysctl(here, "net.ipv4.ping_group_range", groups)
    lab.veth("p", here, there, "10.77.216.1/24", "10.77.216.2/24")
    ended: dict[int, int] = {}
    gate = PingGate(3600, 16)
    pinger = Pinger(gate, lambda tx, probe, result: ended.__setitem__(probe.ip, result))
    with netns.inside(here):
        assert pinger.open()
    assert pinger.kind == kind
    subnet = uuid.uuid4()
    async with trio.open_nursery() as nursery:
        await nursery.start(pinger.run)
        for target in ("10.77.216.2", "10.77.216.3"):  # a host; nobody
            gate.begin(subnet, ip(target))
            pinger.start(target, Probe(subnet, ip(target), ip("10.77.216.1"), 1.0))
        with trio.fail_after(10):
            while len(ended) < 2:
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    assert ended == {ip("10.77.216.2"): ANSWERED, ip("10.77.216.3"): SILENT}
    assert not gate.pending and gate.outcomes["sent"] == 2


# ---------------------------------------------------------------------- the server


@pytest.fixture
async def segment(lab: netns.Lab, db: Database, dsn: str, nursery: trio.Nursery,
                  request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    """The server in one namespace on a veth to the clients' namespace; ``request.param``:
    the subnet's ping_timeout_ms and whether the client namespace holds the pool's first
    address."""
    timeout_ms, squatted = request.param
    srv, cli = lab.namespace("srv"), lab.namespace("cli")
    pair = lab.veth("seg", srv, cli, SERVER_IF, CLIENT_IF)
    if squatted:
        lab.address(cli, pair.b, f"{POOL[0]}/32")

    async def seed(conn: Any) -> Any:
        made = await seed_subnet(conn, NETWORK, gateway="10.77.215.1", pools=[POOL],
                                 ping_check=True, ping_timeout_ms=timeout_ms)
        await conn.execute("INSERT INTO reservations (subnet_id, ip, mac) VALUES ($1, $2, $3)",
                           made["subnet_id"], RESERVED, "02:00:00:00:00:09")
        return made

    made = await db.transaction(seed)
    config = make_config(dsn, dhcp={"enabled": True, "listen": [], "interfaces": [pair.a]})
    server = dhcp_server(AppState(config=config, db=db))
    scope, done = trio.CancelScope(), trio.Event()

    async def serve(*, task_status: trio.TaskStatus[None]) -> None:
        try:
            with scope:
                await server.run(task_status=task_status)
        finally:
            done.set()

    with netns.inside(srv):  # the server's sockets, the ICMP one too, in its namespace
        server._open_sockets()
        assert server.pinger.open()
    server._open_sockets = lambda: None  # type: ignore[method-assign]
    await nursery.start(serve)
    with netns.inside(cli):
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        client.setsockopt(socket.SOL_SOCKET, 25, pair.b.encode())  # SO_BINDTODEVICE
        client.bind(("0.0.0.0", 68))
    try:
        yield {"server": server, "client": Clients(trio.socket.from_stdlib_socket(client)),
               "subnet_id": made["subnet_id"], "db": db}
    finally:
        scope.cancel()
        await done.wait()
        client.close()


class Clients:
    """Several clients on one socket: replies kept by xid."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.replies: dict[int, DhcpMessage] = {}

    async def send(self, msg: DhcpMessage) -> None:
        await self.sock.sendto(msg.to_bytes(), ("255.255.255.255", 67))

    async def reply(self, xid: int, timeout: float = 10) -> DhcpMessage:
        with trio.fail_after(timeout):
            while xid not in self.replies:
                data, _source = await self.sock.recvfrom(4096)
                got = parse(data)
                self.replies[got.xid] = got
        return self.replies.pop(xid)

    async def exchange(self, msg: DhcpMessage) -> DhcpMessage:
        await self.send(msg)
        return await self.reply(msg.xid)


@pytest.mark.parametrize("segment", [(300, True)], indirect=True)
async def test_an_address_that_answers_is_held_as_a_conflict_and_another_offered(
    segment: dict[str, Any],
) -> None:
    clients, server = segment["client"], segment["server"]
    offer = await clients.exchange(packets.request(o.DISCOVER, mac_bytes(1), flags=o.FLAG_BROADCAST))
    assert offer.message_type == o.OFFER
    assert o.ip_to_str(offer.yiaddr) == "10.77.215.101", o.ip_to_str(offer.yiaddr)
    row = await segment["db"].run(lambda conn: conn.fetchrow(
        "SELECT state, client_key, mac, expires_at - now() AS left FROM leases "
        "WHERE subnet_id = $1 AND ip = $2", segment["subnet_id"], POOL[0]))
    assert row is not None and row["state"] == "declined", row
    assert bytes(row["client_key"]) == PING_CONFLICT_KEY and row["mac"] is None
    assert row["left"].total_seconds() > 3600  # dhcp.decline_probation_seconds (a day)
    counters = server.counters
    assert counters.pings["answered"] == 1 and counters.pings["silent"] == 1
    assert counters.ping_conflicts[str(segment["subnet_id"])] == 1
    assert counters.leases["declined"] == 1
    # The next client is not offered the conflict either (held), nor probed for it again.
    other = await clients.exchange(packets.request(o.DISCOVER, mac_bytes(2), flags=o.FLAG_BROADCAST))
    assert o.ip_to_str(other.yiaddr) == "10.77.215.102"
    assert counters.pings["answered"] == 1


@pytest.mark.parametrize("segment", [(5000, False)], indirect=True)
async def test_other_exchanges_go_on_while_a_probe_waits(segment: dict[str, Any]) -> None:
    clients, server = segment["client"], segment["server"]
    waiting = packets.request(o.DISCOVER, mac_bytes(3), flags=o.FLAG_BROADCAST)
    await clients.send(waiting)
    with trio.fail_after(10):
        while len(server.pinger) < 1:
            await trio.sleep(0.01)
    # Its retransmission meanwhile starts no second probe.
    await clients.send(waiting)
    with trio.fail_after(10):
        while server.counters.drops["ping_pending"] < 1:
            await trio.sleep(0.01)
    # A client that needs no probe (its reservation) completes a DORA meanwhile.
    mac = bytes.fromhex("020000000009")
    offer = await clients.exchange(packets.request(o.DISCOVER, mac, flags=o.FLAG_BROADCAST))
    assert o.ip_to_str(offer.yiaddr) == RESERVED
    ack = await clients.exchange(packets.request(
        o.REQUEST, mac, flags=o.FLAG_BROADCAST, requested=RESERVED,
        server_id=socket.inet_ntoa(offer.options[o.SERVER_ID])))
    assert ack.message_type == o.ACK and o.ip_to_str(ack.yiaddr) == RESERVED
    assert len(server.pinger) == 1 and waiting.xid not in clients.replies  # still waiting
    assert server.counters.pings["sent"] == 1
    # The silent address is offered once its probe ends.
    late = await clients.reply(waiting.xid, timeout=15)
    assert late.message_type == o.OFFER and o.ip_to_str(late.yiaddr) == POOL[0]
    assert server.counters.pings["silent"] == 1 and len(server.pinger) == 0
