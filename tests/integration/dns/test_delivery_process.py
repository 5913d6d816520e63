"""DNS updates are delivered by a child process of the appliance (ipamd/child): started at
the first queued update, holding back while the DHCP server runs at its ceiling and catching
up after, restarted when it dies, gone when the appliance stops, its counters in /metrics.
(In a storm the lease journal's deriver holds the lease events back as well; a history
question derives them regardless, which is how the storm's updates reach the outbox here.)

Against a real BIND 9. The one stand-in: the DHCP server's "at its ceiling" figure is dialled
by the test (a storm cannot be made to order here; bench/bench_dns.py makes real ones)."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from ipamd.workers import lease_journal
from tests.integration.dhcp.harness import Relay
from tests.integration.dns.ddns import (
    WAIT,
    ZONE,
    appliance_config,
    bind_serving,
    ddns_subnet,
    dig,
    lease,
)
from tests.integration.ipam.helpers import created
from tests.support.bind import KEY_NAME, Bind

SECRET_ENV = "IPAMD_TEST_TSIG_CHILD"


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Bind]:
    with bind_serving(tmp_path, SECRET_ENV) as server:
        yield server


@pytest.fixture
def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    return appliance_config(relay_sock, dns_storm_updates_per_second=0)


class Storm:
    """Stands in for the committer's figure: saturated while ``on``, flat otherwise.

    It starts far above the real figure: a signal's first look after the swap compares it
    with its previous look, which may be seconds old (the deriver looks only when it has
    rows), and must already see a storm. Starting at 0, the share of busy time it saw could
    fall below the ceiling's threshold when the test's setup ran slowly, and the deriver
    took the storm's first lease in.
    """

    def __init__(self) -> None:
        self.on = True
        self.total = 1e6
        self.last = trio.current_time()

    def saturated_seconds(self) -> float:
        now = trio.current_time()
        if self.on:
            self.total += now - self.last
        self.last = now
        return self.total


async def _setup(admin: httpx.AsyncClient, operator: httpx.AsyncClient, bind: Bind) -> None:
    server = created(await admin.post("/dns-servers", json={
        "name": "bind", "adapter": "bind_tsig", "address": "127.0.0.1", "port": bind.port,
        "tsig_key_name": KEY_NAME, "secret_ref": f"env:{SECRET_ENV}"}))
    await ddns_subnet(operator, server["id"], "bind_tsig")


async def _child_pid(appliance: runtime.Running, other_than: int | None = None) -> int:
    with trio.fail_after(WAIT):
        while True:
            report = appliance.state.children.get(runtime.DNS_DELIVERY)
            if report is not None and report.pid != other_than:
                return report.pid
            await trio.sleep(0.1)


async def _states(viewer: httpx.AsyncClient) -> list[str]:
    rows = (await viewer.get("/outbox", params={"kind": "dns"})).json()["items"]
    return [r["state"] for r in rows]


async def test_updates_wait_out_a_storm_then_follow(appliance, relay_sock, operator, viewer,
                                                    admin, bind: Bind) -> None:
    storm = Storm()
    appliance.state.dhcp.saturated_seconds = storm.saturated_seconds  # type: ignore[union-attr]
    await _setup(admin, operator, bind)
    # The storm signals are rates between two looks, and a look before the DHCP server was
    # up, or none, gives no rate: wake the deriver once so that it has looked at this storm
    # before the leases come (else, on a slow start, the first lease's look is its first).
    appliance.state.lease_journal.written()
    await trio.sleep(4 * lease_journal.GATHER_SECONDS)
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        # The storm does not slow the leases; their DNS changes wait.
        ips = [await lease(relay, n, f"storm-{n}") for n in range(3)]
        # The lease journal's deriver holds their events back first (docs/history.md)...
        await trio.sleep(1.0)  # twenty of its gathers
        assert "ipamd_lease_journal_rows 3.0" in (await viewer.get("/metrics")).text
        # ...but a history question derives before it reads: it sees the storm's lease, and
        # the DNS changes are queued for the delivery process, which holds them back.
        history = await viewer.get("/history", params={"ip": ips[0]})
        assert [i["ip"] for i in history.json()["items"]] == [ips[0]]
        assert "ipamd_lease_journal_rows 0.0" in (await viewer.get("/metrics")).text
        pid = await _child_pid(appliance)
        assert pid != os.getpid()
        await trio.sleep(2.0)
        assert "delivered" not in await _states(viewer)
        assert bind.dig(f"storm-0.{ZONE}", "A") == []
        # Over: every change is delivered.
        storm.on = False
        for n, ip in enumerate(ips):
            await dig(bind, f"storm-{n}.{ZONE}", "A", [ip])
        with trio.fail_after(WAIT):
            while await _states(viewer) != ["delivered"] * 3:
                await trio.sleep(0.1)
        # The child's deliveries count in the node's metrics (its report comes every 5 s).
        with trio.fail_after(WAIT):
            while 'ipamd_outbox_delivery_duration_seconds_count{kind="dns"} 3.0' not in (
                    await viewer.get("/metrics")).text:
                await trio.sleep(0.5)
        nursery.cancel_scope.cancel()


async def test_the_process_comes_back_after_it_dies_and_goes_with_the_appliance(
        appliance, relay_sock, operator, admin, bind: Bind) -> None:
    await _setup(admin, operator, bind)
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), appliance.state.dhcp.addresses[0])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        ip = await lease(relay, 10, "first")
        await dig(bind, f"first.{ZONE}", "A", [ip])
        first = await _child_pid(appliance)
        os.kill(first, signal.SIGKILL)
        # Killed: the next update starts another one, and it is delivered.
        ip = await lease(relay, 11, "second")
        second = await _child_pid(appliance, other_than=first)
        await dig(bind, f"second.{ZONE}", "A", [ip])
        nursery.cancel_scope.cancel()
    appliance.stop.set()
    with trio.fail_after(WAIT):
        while _alive(second):
            await trio.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
