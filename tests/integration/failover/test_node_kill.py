"""docs/scale-out.md: kill -9 one appliance node under load; the other keeps serving.

Two real `ipamd run` processes (node-a, node-b: their own config file, DHCP port and API
port on loopback) share the suite's database. Relayed DORA load goes to both while the
webhook receiver (real HTTPS) hangs, so deliveries pile up and node A holds claimed outbox
rows. Node A is then killed with SIGKILL: no clean stop, its claims are not handed back.
Node B keeps Acking; the rows node A held come back when their claim times out and node B
delivers them. Every Ack any client got is an active lease at the end (lost = 0) and no
address was Acked to two clients (double = 0).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import ipamd
from ipamd.db.bridge import Database
from ipamd.outbox import webhooks
from tests.integration.dhcp.harness import Relay, dhcp_section, relay_socket, seed_subnet
from tests.integration.dhcp.load import DoraLoad, active_leases, lost
from tests.integration.outbox.conftest import SECRET_ENV, fast_outbox
from tests.support.ports import free_port
from tests.support.receiver import Reply

CLIENTS_PER_NODE = 3
CLAIM_TIMEOUT = 5.0  # a dead node's claims come back after this
REQUEST_TIMEOUT = 3.0


@pytest.fixture
def relay_socks() -> Iterator[list[socket.socket]]:
    socks = [relay_socket(), relay_socket()]
    yield socks
    for sock in socks:
        sock.close()


def _toml(value: Any) -> str:
    return json.dumps(value)  # strings, numbers, booleans and lists of them: TOML too


def _write_config(path: Path, dsn: str, name: str, dhcp_port: int, api_port: int,
                  relay_port: int, outbox: dict[str, Any]) -> None:
    dhcp = dhcp_section(relay_port, listen=[f"127.0.0.1:{dhcp_port}"])
    lines = [
        f"state_dir = {_toml(str(path.parent / name))}",
        f"node_name = {_toml(name)}",
        "[database]", f"dsn = {_toml(dsn)}", "pool_min = 1", "pool_max = 6",
        "[api]", "public_enabled = false", f"loopback_listen = {_toml(f'127.0.0.1:{api_port}')}",
        "graceful_timeout_seconds = 0.5",
        "[dhcp]", *(f"{k} = {_toml(v)}" for k, v in dhcp.items()),
        "[logging]", "access_log = false",
        "[outbox]", *(f"{k} = {_toml(v)}" for k, v in outbox.items()),
    ]
    path.write_text("\n".join(lines) + "\n")


def _environment(secret: bytes) -> dict[str, str]:
    """The test's environment, with this checkout's sources first (without an editable
    install the child would not find them; with one this changes nothing)."""
    src = str(Path(ipamd.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": src + (os.pathsep + path if path else ""),
            SECRET_ENV: secret.decode()}


class Proc:
    """One `ipamd run` process and its log."""

    def __init__(self, name: str, config: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log_path = config.with_suffix(".log")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "ipamd", "--config", str(config), "run"],
            stdout=self._log, stderr=subprocess.STDOUT, env=env,
        )

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def check_alive(self) -> None:
        assert self.popen.poll() is None, f"{self.name} exited:\n{self.log_tail()}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not ended in 10 s; always reaped."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        self._log.close()


async def _claimed_by(conn: Any, name: str) -> list[Any]:
    return [r["id"] for r in await conn.fetch(
        "SELECT id FROM outbox WHERE claimed_by LIKE $1 || ':%' AND state <> 'delivered'",
        name)]


async def _not_delivered(conn: Any) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, count(*) AS n FROM outbox "
                            "WHERE state <> 'delivered' GROUP BY state")
    return {r["state"]: r["n"] for r in rows}


async def _delivered_by(conn: Any, ids: list[Any]) -> dict[str, str]:
    """Each row's state and the node that recorded its successful attempt."""
    rows = await conn.fetch(
        """SELECT o.id::text AS id, o.state,
                  (SELECT a.node FROM outbox_attempts a
                   WHERE a.outbox_id = o.id AND a.status BETWEEN 200 AND 299
                   ORDER BY a.at DESC LIMIT 1) AS node
           FROM outbox o WHERE o.id = ANY($1::uuid[])""", ids)
    return {r["id"]: f"{r['state']}:{(r['node'] or '').split(':')[0]}" for r in rows}


async def test_kill_9_one_node_under_load_the_other_serves_and_delivers_its_claims(
    nursery: trio.Nursery, db: Database, dsn: str, relay_socks: list[socket.socket],
    receiver: Any, ca_file: str, hosts_file: Path, hook_secret: bytes, tmp_path: Path,
) -> None:
    await db.transaction(lambda conn: seed_subnet(conn, pools=[("127.77.1.1", "127.77.60.254")]))
    await db.transaction(webhooks.create, "test", {
        "name": "leases", "url": receiver.url(host="hook.test"),
        "secret_ref": f"env:{SECRET_ENV}", "topics": ["lease.granted"],
    })
    # Deliveries hang from the start: every node claims rows and holds them.
    receiver.default = Reply(hang=True)
    outbox = fast_outbox(ca_file, hosts_file, max_attempts=50,
                         request_timeout_seconds=REQUEST_TIMEOUT,
                         claim_timeout_seconds=CLAIM_TIMEOUT)
    env = _environment(hook_secret)
    procs: list[Proc] = []
    relays: list[Relay] = []
    try:
        for name, sock in zip(("node-a", "node-b"), relay_socks, strict=True):
            dhcp_port = free_port(socket.SOCK_DGRAM)
            config = tmp_path / f"{name}.toml"
            _write_config(config, dsn, name, dhcp_port, free_port(), sock.getsockname()[1],
                          outbox)
            procs.append(Proc(name, config, env))
            relay = Relay(trio.socket.from_stdlib_socket(sock), ("127.0.0.1", dhcp_port))
            nursery.start_soon(relay.run)
            relays.append(relay)
        node_a, node_b = procs

        load = DoraLoad(relays)
        stop = trio.Event()
        async with trio.open_nursery() as clients:
            for index in range(2 * CLIENTS_PER_NODE):
                clients.start_soon(load.client, index % 2, stop)
            # Both processes serve (start-up included: the clients retry until they answer).
            with trio.fail_after(30):
                while min(sum(1 for a in load.acks if a.node == n) for n in (0, 1)) < 15:
                    node_a.check_alive()
                    node_b.check_alive()
                    await trio.sleep(0.05)
            # Freeze node A (SIGSTOP) while it holds claims, so what it holds is known
            # exactly, then kill it: it never records or hands these rows back.
            with trio.fail_after(15):
                while True:
                    os.kill(node_a.popen.pid, signal.SIGSTOP)
                    if orphans := await db.run(_claimed_by, "node-a"):
                        break
                    os.kill(node_a.popen.pid, signal.SIGCONT)
                    await trio.sleep(0.1)
            os.kill(node_a.popen.pid, signal.SIGKILL)
            gone = trio.current_time()
            await trio.to_thread.run_sync(lambda: node_a.popen.wait(timeout=10))
            assert node_a.popen.returncode == -signal.SIGKILL

            # Node B keeps serving: exchanges begun after the kill are Acked.
            first = await load.until(1, 15, since=gone)
            await load.until(20, 20, since=gone)
            assert not [a for a in load.acks_since(gone) if a.node == 0]
            node_b.check_alive()
            receiver.default = Reply()
            receiver.release()
            stop.set()

        # The dead node's rows come back after the claim timeout and node B delivers them.
        with trio.move_on_after(CLAIM_TIMEOUT + 25):
            while await db.run(_not_delivered):
                receiver.release()
                await trio.sleep(0.2)
        assert not await db.run(_not_delivered)
        states = await db.run(_delivered_by, orphans)
        assert set(states.values()) == {"delivered:node-b"}, states
        received = {r.delivery for r in receiver.received}
        assert {str(i) for i in orphans} <= received
        node_b.check_alive()
    finally:
        for proc in procs:
            proc.stop()

    stored = await db.run(active_leases)
    assert not lost(load, stored), lost(load, stored)[:5]
    assert not load.double_acked(), load.double_acked()
    assert len({a.ip for a in load.acks}) == len(load.acks)
    print(f"\nnode kill: acks={len(load.acks)} after_kill={len(load.acks_since(gone))} "
          f"orphans={len(orphans)} first_survivor_ack_s={first - gone:.3f} "
          f"lost={len(lost(load, stored))} double={len(load.double_acked())}")
