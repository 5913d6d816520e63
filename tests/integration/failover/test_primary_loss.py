"""docs/scale-out.md: the appliance on a set of database hosts survives the loss of its primary.

The real runtime (API, DHCP, outbox, workers) runs on a multi-host DSN whose first host
does not exist (as a dead primary would be) and whose second is the suite's Postgres, with
``target_session_attrs=read-write``. Restarting that Postgres under relayed DORA load must
bring DHCP back within 5 s with no process restart, re-establish both LISTEN connections
(the DHCP plan's and the outbox's), and lose no Ack. While no database answers, DHCP Acks
nothing and counts the refusals, and the API answers 503 with Retry-After.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import trio

from ipamd import runtime
from ipamd.db.bridge import Database, DatabaseRefused
from ipamd.dhcp import options as o
from ipamd.outbox import webhooks
from tests.conftest import make_config
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, relay_socket, seed_subnet
from tests.integration.dhcp.load import DoraLoad, active_leases, lost
from tests.integration.outbox.conftest import SECRET_ENV, emit, fast_outbox
from tests.support.postgres import PgServer
from tests.unit.dhcp.packets import mac_bytes, request

CLIENTS = 4
RECOVERY_SECONDS = 5.0  # the bound: served again within 5 s of the restart


def multi_host(dsn: str) -> str:
    """The suite's DSN as a two-host DSN: a host that is gone first, then the real one."""
    base, _, query = dsn.partition("?")
    head, _, database = base.rpartition("/")
    user = head.split("://", 1)[1].split("@", 1)[0]
    real = head.split("@", 1)[1]
    socket_dir, _, port = real.rpartition(":")
    hosts = f"{quote('/nonexistent-ipamd-primary', safe='')},{socket_dir}"
    extra = f"&{query}" if query else ""
    return (f"postgresql://{user}@/{database}?host={hosts}&port={port},{port}"
            f"&target_session_attrs=read-write{extra}")


@pytest.fixture
def relay_sock() -> Iterator[socket.socket]:
    sock = relay_socket()
    yield sock
    sock.close()


@pytest.fixture
async def node(
    nursery: trio.Nursery, db: Database, dsn: str, relay_sock: socket.socket, ca_file: str,
    hosts_file: Path, receiver: Any,
) -> AsyncIterator[tuple[runtime.Running, Relay]]:
    await db.transaction(lambda conn: seed_subnet(conn, pools=[("127.77.1.1", "127.77.60.254")]))
    await db.transaction(webhooks.create, "test", {
        "name": "audit", "url": receiver.url(host="hook.test"),
        "secret_ref": f"env:{SECRET_ENV}", "topics": ["ipam.audit"],
    })
    # A poll interval far beyond the test's bounds: a prompt delivery can only come
    # from the LISTEN connection.
    config = make_config(
        multi_host(dsn), dhcp=dhcp_section(relay_sock.getsockname()[1]),
        outbox=fast_outbox(ca_file, hosts_file, poll_interval_seconds=120),
    )
    running: runtime.Running = await nursery.start(
        lambda task_status: runtime.run(config, handle_signals=False, task_status=task_status)
    )
    assert running.state.dhcp is not None
    relay = Relay(trio.socket.from_stdlib_socket(relay_sock), running.state.dhcp.addresses[0])
    relay_scope = trio.CancelScope()

    async def relay_run() -> None:
        with relay_scope:
            await relay.run()

    nursery.start_soon(relay_run)
    try:
        yield running, relay
    finally:
        relay_scope.cancel()
        running.stop.set()


async def _listeners(conn: Any) -> set[str]:
    rows = await conn.fetch(
        """SELECT query FROM pg_stat_activity
           WHERE application_name = 'ipamd-listen' AND datname = current_database()""")
    return {r["query"] for r in rows}


async def wait_listening(db: Database, timeout: float = 10.0) -> None:
    want = {'LISTEN "ipamd_dhcp_plan"', 'LISTEN "ipamd_outbox"'}
    with trio.fail_after(timeout):
        while not want <= await db.run(_listeners):
            await trio.sleep(0.05)


async def test_postgres_restart_under_load_served_again_and_listening_again(
    node: tuple[runtime.Running, Relay], db: Database, pg: PgServer, receiver: Any,
) -> None:
    running, relay = node
    load = DoraLoad([relay])
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(CLIENTS):
            nursery.start_soon(load.client, 0, stop)
        await load.until(20, 30)
        await wait_listening(db)
        before = len(await receiver.wait_for(1))  # the webhook's own creation, audited

        await trio.to_thread.run_sync(pg.restart)
        back = trio.current_time()
        # Served again: an Ack to an exchange begun after the database was back.
        await load.until(1, RECOVERY_SECONDS, since=back)
        await load.until(30, 30, since=back)

        # Both LISTEN connections are re-established (on the new server process) ...
        await wait_listening(db)
        # ... and work: a plan change reaches the DHCP server ...
        async def reserve(conn: Any) -> int:
            await conn.execute(
                """INSERT INTO reservations (subnet_id, ip, mac)
                   SELECT id, '127.77.99.9', '02:aa:00:00:00:09' FROM subnets""")
            return await conn.fetchval("SELECT last_value FROM dhcp_plan_version")

        version = await db.transaction(reserve)
        with trio.fail_after(10):
            while running.state.dhcp.plans.current.version < version:  # type: ignore[union-attr]
                await trio.sleep(0.05)
        offer = await relay.exchange(
            request(o.DISCOVER, bytes.fromhex("02aa00000009"), giaddr=RELAY_IP), 2.0)
        assert offer is not None and o.ip_to_str(offer.yiaddr) == "127.77.99.9"
        # ... and an event is delivered at once (the poll interval is 120 s).
        await emit(db, ("ipam.audit", {"action": "after-restart"}))
        got = await receiver.wait_for(before + 1, timeout=10)
        assert "after-restart" in json.dumps(got[-1].json())
        stop.set()

    stored = await db.run(active_leases)
    assert not lost(load, stored), lost(load, stored)[:5]
    assert not load.double_acked()


async def test_no_database_no_ack_refusals_counted_api_503(
    node: tuple[runtime.Running, Relay], db: Database, pg: PgServer, admin: Any,
) -> None:
    running, relay = node
    # Warm up: the token is known, a lease is served.
    assert (await admin.get("/tenants")).status_code == 200
    load = DoraLoad([relay])
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(load.client, 0, stop)
        await load.until(3, 30)
        stop.set()
    counters = running.state.dhcp.counters_snapshot()  # type: ignore[union-attr]
    refused_before = counters["drops"].get("db_error", 0)

    await trio.to_thread.run_sync(pg.stop_server)
    try:
        # A Request for a fresh client: the server cannot commit it, so it must not Ack.
        mac = mac_bytes(990_001)
        answer = await relay.exchange(
            request(o.REQUEST, mac, giaddr=RELAY_IP, server_id="127.0.0.1",
                    requested="127.77.50.50"), 3.0)
        assert answer is None or answer.message_type != o.ACK
        reply = await admin.get("/tenants")
        assert reply.status_code == 503, reply.text
        assert reply.json()["error"]["code"] == "unavailable"
        assert int(reply.headers["Retry-After"]) >= 1
        counters = running.state.dhcp.counters_snapshot()  # type: ignore[union-attr]
        assert counters["drops"].get("db_error", 0) > refused_before, counters["drops"]
    finally:
        await trio.to_thread.run_sync(pg.start_server)
    with trio.fail_after(30):
        while (await admin.get("/tenants")).status_code != 200:
            await trio.sleep(0.1)


async def test_refused_credentials_fail_fast_naming_the_dsn(
    pg: PgServer, dsn: str, tmp_path: Path,
) -> None:
    """A wrong password (and a missing database) fail at once, not after the connect
    timeout, and the message names database.dsn without the password."""
    hba = pg.cluster.data_dir / "pg_hba.conf"
    original = hba.read_text()

    async def role(conn: Any) -> None:
        await conn.execute("DROP ROLE IF EXISTS ipamd_pw_test")
        await conn.execute("CREATE ROLE ipamd_pw_test LOGIN PASSWORD 'right-secret'")
        await conn.execute("GRANT CONNECT ON DATABASE postgres TO ipamd_pw_test")

    from ipamd.db.bridge import run_once

    await run_once(pg.dsn("postgres"), role)
    # Password authentication for this one role only; everyone else keeps trust.
    hba.write_text("local all ipamd_pw_test scram-sha-256\n" + original)
    await run_once(pg.dsn("postgres"), lambda conn: conn.execute("SELECT pg_reload_conf()"))
    try:
        socket_dir = str(pg.cluster.socket_dir)
        port = pg.cluster.port

        def dsn_for(user: str, password: str, database: str) -> str:
            return (f"postgresql://{user}:{password}@/{database}"
                    f"?host={quote(socket_dir, safe='')}&port={port}")

        # The right password works (the test can tell the two apart).
        good = await Database.connect(dsn_for("ipamd_pw_test", "right-secret", "postgres"),
                                      min_size=1, max_size=1, timeout=10)
        await good.close()
        with trio.fail_after(10):  # the connect timeout below is 60 s
            with pytest.raises(DatabaseRefused):
                await Database.connect(dsn_for("ipamd_pw_test", "wrong-secret", "postgres"),
                                       timeout=60)
            with pytest.raises(DatabaseRefused):
                await Database.connect(dsn_for("ipamd_pw_test", "right-secret", "no_such_db"),
                                       timeout=60)

        # The command line: exit 4 at once with a message naming database.dsn, no password.
        config = tmp_path / "ipamd.toml"
        config.write_text(
            f'state_dir = "{tmp_path}"\n[database]\n'
            f'dsn = "{dsn_for("ipamd_pw_test", "wrong-secret", "postgres")}"\n'
            "connect_timeout_seconds = 60\n[dhcp]\nenabled = false\n"
            '[api]\npublic_enabled = false\nloopback_listen = "127.0.0.1:0"\n'
        )
        done = await trio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "ipamd", "--config", str(config), "run"],
            capture_output=True, text=True, timeout=30,
        ))
        assert done.returncode == 4, done.stderr
        assert "database.dsn" in done.stderr and "InvalidPasswordError" in done.stderr
        assert "wrong-secret" not in done.stderr + done.stdout
    finally:
        hba.write_text(original)
        await run_once(pg.dsn("postgres"), lambda conn: conn.execute("SELECT pg_reload_conf()"))
