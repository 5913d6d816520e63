"""The receive loop reads the kernel's arrival time: packets that sat in the socket queue
past dhcp.stale_wait_ms are dropped unparsed, fresh ones are handled (loopback only)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import trio

from ipamd.dhcp import options as o
from ipamd.dhcp.server import DhcpServer
from ipamd.dhcp.sockets import ancillary, open_listen
from tests.unit.dhcp.envs import RELAY
from tests.unit.dhcp.packets import mac_bytes, request
from tests.unit.dhcp.test_server_packets import make_server

ALONE = "127.81.0.1"


async def _until_the_kernel_stamps_arrivals(client: socket.socket, ep: Any) -> None:
    """Linux turns arrival stamps on for the whole stack in deferred work when the first
    socket asks (and off when the last one closes): datagrams queued before that get no
    stamp and are stamped when read — as if fresh. In a long suite the race was lost now
    and then (this test failed so in CI). Probe until a queued datagram keeps its age."""
    for _ in range(50):
        client.sendto(b"probe", (ALONE, ep.port))
        await trio.sleep(0.05)
        _data, ancdata, _flags, _addr = ep.sock.recvmsg(4096, 256)
        _local, arrived = ancillary(ancdata)
        if arrived and time.time() - arrived >= 0.04:
            return
    raise AssertionError("the kernel never stamped a datagram's arrival")


async def _read_until(server: DhcpServer, ep: object, done: Callable[[], bool]) -> None:
    """Run the receive loop until ``done()`` (bounded: 30 s)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server._receive, ep)
        with trio.move_on_after(30):
            while not done():
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    # (It failed once in a full CI run and never alone: say what the loop saw.)
    assert done(), (f"after 30 s: drops {dict(server.counters.drops)}, received "
                    f"{dict(server.counters.received)}, queue_age {ep.queue_age}")  # type: ignore[attr-defined]


async def test_packets_that_waited_too_long_in_the_socket_are_dropped_unparsed() -> None:
    server, _ = make_server()
    # An address of its own: the counts below must see only this test's datagrams, not a
    # late retransmission from an earlier test to a reused 127.0.0.1 port (it flaked so).
    ep = open_listen(f"{ALONE}:0", False)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        await _until_the_kernel_stamps_arrivals(client, ep)
        for n in range(20):
            client.sendto(request(o.DISCOVER, mac_bytes(n), giaddr=RELAY).to_bytes(),
                          (ALONE, ep.port))
        await trio.sleep(0.5)  # nobody reads meanwhile
        server.dispatch.stale_seconds = 0.2
        # Until all are dropped and the socket was found empty (the sampled age resets).
        await _read_until(server, ep, lambda: server.counters.drops["stale"] == 20
                          and ep.queue_age == 0.0)
        assert server.counters.received[o.DISCOVER] == 0
        # A fresh packet is handled (from loopback, not a trusted relay: counted as such).
        server.dispatch.stale_seconds = 30.0
        client.sendto(request(o.DISCOVER, mac_bytes(99), giaddr=RELAY).to_bytes(),
                      (ALONE, ep.port))
        await _read_until(server, ep, lambda: server.counters.received[o.DISCOVER] == 1)
        assert server.counters.drops["untrusted_relay"] == 1
        assert server.counters.drops["stale"] == 20
    finally:
        client.close()
        ep.sock.close()
