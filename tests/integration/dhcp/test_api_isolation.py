"""No API input can delay DHCP (docs/security.md, "Where the API runs"): the API never runs in the DHCP server's process
(runtime.api_in_main_process), and a relayed client gets its Offer and its Ack within 1 s
while hostile HTTP clients (tests/support/api_attack.py: a header line that never ends, a
pipelining flood and 500 idle connections) hit the API — with one API worker and with two."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, seed_subnet
from tests.support.workers import serving_pid, worker_pids
from tests.unit.dhcp.packets import mac_bytes, request

REPO = Path(__file__).resolve().parents[3]
IDLE = 500
ANSWER_SECONDS = 1.0  # the bound: the only timing here
CLIENTS = 5


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.200")])

    return await db.transaction(seed)


@pytest.fixture(params=[1, 2], ids=["one-api-worker", "two-api-workers"])
def config_overrides(relay_sock: socket.socket, seeded: dict[str, Any],
                     request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "api": {"workers": request.param}}


@pytest.fixture
async def relay(appliance: runtime.Running, relay_sock: socket.socket,
                nursery: trio.Nursery) -> Relay:
    found = Relay(trio.socket.from_stdlib_socket(relay_sock),
                  appliance.state.dhcp.addresses[0])
    nursery.start_soon(found.run)
    return found


class Attack:
    """The attacking process and its latest counters."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.counters: dict[str, int] = {}
        self.reported = trio.Event()

    async def follow(self) -> None:
        assert self.process.stdout is not None
        pending = b""
        while data := await self.process.stdout.receive_some(65536):
            *lines, pending = (pending + data).split(b"\n")
            if lines:
                self.counters = json.loads(lines[-1])
                self.reported.set()
                self.reported = trio.Event()

    async def until(self, ready: Any) -> dict[str, int]:
        """The counters once ``ready(counters)`` holds."""
        with trio.fail_after(120):
            while not (self.counters and ready(self.counters)):
                await self.reported.wait()
        return dict(self.counters)


async def _api_process(appliance: runtime.Running) -> int | None:
    """The process that serves a connection to the API (as the kernel says)."""
    port = int(appliance.url("http").rsplit(":", 1)[1])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 ")
        client_port = stream.socket.getsockname()[1]
        return serving_pid(port, client_port, [os.getpid(), *worker_pids()])


async def _dora(relay: Relay, n: int) -> None:
    mac = mac_bytes(n)
    offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP),
                                 timeout=ANSWER_SECONDS)
    assert offer is not None and offer.message_type == o.OFFER, f"client {n}: no Offer in 1 s"
    ack = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, server_id="127.0.0.1",
                                       requested=o.ip_to_str(offer.yiaddr)),
                               timeout=ANSWER_SECONDS)
    assert ack is not None and ack.message_type == o.ACK, f"client {n}: no Ack in 1 s"


async def test_dhcp_answers_within_a_second_while_the_api_is_attacked(
    appliance: runtime.Running, relay: Relay, nursery: trio.Nursery,
) -> None:
    # The API is served by a worker process, never by the DHCP server's (this one).
    serving = await _api_process(appliance)
    assert serving in worker_pids() and serving != os.getpid(), serving
    port = appliance.url("http").rsplit(":", 1)[1]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.support.api_attack", port, str(IDLE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO)
    attack = Attack(process)
    try:
        nursery.start_soon(attack.follow)
        before = await attack.until(lambda c: c["idle"] >= IDLE and c["answers"] >= 100
                                    and c["header_bytes"] >= 1 << 20)
        for n in range(1, CLIENTS + 1):
            await _dora(relay, n)
        # The attacks were still going on: each makes progress after the clients' answers.
        await attack.until(lambda c: c["idle"] >= IDLE and c["answers"] > before["answers"]
                           and (c["header_bytes"] > before["header_bytes"]
                                or c["header_closed"] > before["header_closed"]))
    finally:
        assert process.stdin is not None
        with trio.CancelScope(shield=True):
            await process.stdin.aclose()
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
