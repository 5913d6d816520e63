"""docs/scale-out.md: two appliance nodes active-active on one database.

Two real runtimes (node names node-a and node-b, their own ports) serve one pool; relays
send to both (here: each simulated relay talks to one node, both under load at once).
The database judges every address, so no address is Acked to two clients and every Ack
is an active lease afterwards. A plan change reaches both nodes. Node A is then cancelled
under load, with webhook deliveries it claimed still in flight: node B keeps serving, and
the rows node A had claimed are delivered (by node B).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.outbox import webhooks
from tests.conftest import make_config
from tests.integration.dhcp.harness import Relay, dhcp_section, relay_socket, seed_subnet
from tests.integration.dhcp.load import DoraLoad, active_leases, lost
from tests.integration.outbox.conftest import SECRET_ENV, fast_outbox
from tests.support.receiver import Reply

CLIENTS_PER_NODE = 3


@pytest.fixture
def relay_socks() -> Iterator[list[socket.socket]]:
    socks = [relay_socket(), relay_socket()]
    yield socks
    for sock in socks:
        sock.close()


class Node:
    """One appliance runtime in its own cancel scope (cancelling it is its sudden end)."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.scope = trio.CancelScope()
        self.running: runtime.Running | None = None

    async def run(self, *, task_status: trio.TaskStatus[runtime.Running]) -> None:
        with self.scope:
            await runtime.run(self.config, handle_signals=False, task_status=task_status)


async def _claimed_by(conn: Any, prefix: str) -> list[Any]:
    return [r["id"] for r in await conn.fetch(
        "SELECT id FROM outbox WHERE claimed_by LIKE $1 || ':%'", prefix)]


async def _not_delivered(conn: Any) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, count(*) AS n FROM outbox "
                            "WHERE state <> 'delivered' GROUP BY state")
    return {r["state"]: r["n"] for r in rows}


async def _left(conn: Any) -> list[dict[str, Any]]:
    rows = await conn.fetch("SELECT state, attempts, claimed_by, last_error, next_attempt_at "
                            "FROM outbox WHERE state <> 'delivered' LIMIT 5")
    return [dict(r) for r in rows]


async def _states(conn: Any, ids: list[Any]) -> set[str]:
    rows = await conn.fetch("SELECT DISTINCT state FROM outbox WHERE id = ANY($1::uuid[])", ids)
    return {r["state"] for r in rows}


async def test_two_nodes_one_database_one_ack_per_address_and_survive_a_node(
    nursery: trio.Nursery, db: Database, dsn: str, relay_socks: list[socket.socket],
    receiver: Any, ca_file: str, hosts_file: Path,
) -> None:
    await db.transaction(lambda conn: seed_subnet(conn, pools=[("127.77.1.1", "127.77.60.254")]))
    await db.transaction(webhooks.create, "test", {
        "name": "leases", "url": receiver.url(host="hook.test"),
        "secret_ref": f"env:{SECRET_ENV}", "topics": ["lease.granted"],
    })
    outbox = fast_outbox(ca_file, hosts_file, max_attempts=20, request_timeout_seconds=5.0,
                         claim_timeout_seconds=8.0)
    nodes: list[Node] = []
    relays: list[Relay] = []
    for name, sock in zip(("node-a", "node-b"), relay_socks, strict=True):
        config = make_config(dsn, dhcp=dhcp_section(sock.getsockname()[1]), outbox=outbox)
        node = Node(config.model_copy(update={"node_name": name}))
        node.running = await nursery.start(node.run)
        assert node.running.state.dhcp is not None
        relay = Relay(trio.socket.from_stdlib_socket(sock), node.running.state.dhcp.addresses[0])
        nursery.start_soon(relay.run)
        nodes.append(node)
        relays.append(relay)
    node_a, node_b = nodes
    assert node_a.running and node_b.running
    assert node_a.running.binds != node_b.running.binds

    load = DoraLoad(relays)
    stop = trio.Event()
    try:
        async with trio.open_nursery() as clients:
            for index in range(2 * CLIENTS_PER_NODE):
                clients.start_soon(load.client, index % 2, stop)
            with trio.fail_after(60):
                while min(sum(1 for a in load.acks if a.node == n) for n in (0, 1)) < 15:
                    await trio.sleep(0.05)

            # A plan change reaches both nodes (each LISTENs on its own connection).
            async def reserve(conn: Any) -> int:
                await conn.execute("""INSERT INTO reservations (subnet_id, ip, mac)
                                      SELECT id, '127.77.99.9', '02:aa:00:00:00:09'
                                      FROM subnets""")
                return await conn.fetchval("SELECT last_value FROM dhcp_plan_version")

            version = await db.transaction(reserve)
            with trio.fail_after(10):
                while min(n.running.state.dhcp.plans.current.version  # type: ignore[union-attr]
                          for n in nodes) < version:
                    await trio.sleep(0.05)

            # Deliveries hang: node A's claims are in flight when it dies.
            receiver.default = Reply(hang=True)
            with trio.fail_after(20):
                while not (claimed_a := await db.run(_claimed_by, "node-a")):
                    await trio.sleep(0.05)
            node_a.scope.cancel()
            gone = trio.current_time()
            # Node B keeps serving (its clients' exchanges begun after A's end are Acked).
            with trio.fail_after(20):
                while sum(1 for a in load.acks_since(gone) if a.node == 1) < 20:
                    await trio.sleep(0.05)
            assert not [a for a in load.acks_since(gone) if a.node == 0]
            receiver.default = Reply()
            receiver.release()
            stop.set()
        # Every row node A had claimed is delivered (node B took it over); nothing is left.
        with trio.move_on_after(60):
            while await db.run(_not_delivered):
                receiver.release()
                await trio.sleep(0.2)
        assert not await db.run(_not_delivered), await db.run(_left)
        assert await db.run(_states, claimed_a) == {"delivered"}
    finally:
        stop.set()
        node_b.running.stop.set()

    stored = await db.run(active_leases)
    assert not lost(load, stored), lost(load, stored)[:5]
    assert not load.double_acked(), load.double_acked()
    assert len({a.ip for a in load.acks}) == len(load.acks)
