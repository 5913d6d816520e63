"""Upgrade from the previous schema with data in it: a database migrated to N-1, filled as
that version wrote it (plan rows and audit, webhooks, leases granted and released by the DHCP
server) → the current appliance starts on it: migration N runs once, everything is still
there (history backfilled), DHCP serves on. A newer schema is refused and left untouched."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd.config import parse
from ipamd.core import audit
from ipamd.db import migrate
from ipamd.db.bridge import run_once
from ipamd.dhcp import options as o
from tests.integration import appliance_data as data
from tests.integration.dhcp.harness import Relay, relay_socket, seed_subnet
from tests.support import postgres
from tests.support.ports import free_port
from tests.unit.dhcp.packets import mac_bytes

pytestmark = pytest.mark.slow
VERSIONS = [m.version for m in migrate.available()]
PREVIOUS = VERSIONS[-2]  # numbers may have gaps
# Every table the previous version wrote, compared row for row across the upgrade.
TABLES = ("prefixes", "subnets", "pools", "reservations", "webhooks", "audit_log", "events",
          "outbox", "leases", "lease_events", "lease_intervals")


@pytest.fixture
async def empty_dsn(pg: postgres.PgServer, aio: Any) -> Any:
    async with data.empty_database(pg) as dsn:
        yield dsn


async def _fill_plan(conn: Any) -> dict[str, Any]:
    """What the previous version's API wrote: rows plus their audit entries and events."""
    ids = await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.40")], lease_time=600)
    reservation = await conn.fetchrow(
        """INSERT INTO reservations (subnet_id, ip, mac, hostname)
           VALUES ($1, '127.77.2.5', '02:00:00:00:00:09', 'printer-1') RETURNING *""",
        ids["subnet_id"])
    hook = await conn.fetchrow(
        """INSERT INTO webhooks (name, url, secret_ref, topics)
           VALUES ('siem', 'https://hooks.example.com/ipamd', 'env:HOOK_SECRET',
                   '{lease.granted,ipam.audit}') RETURNING *""")
    await audit.record(conn, "token:old", "create", "reservation", reservation["id"], None,
                       dict(reservation))
    await audit.record(conn, "token:old", "create", "webhook", hook["id"], None, dict(hook))
    return ids


# How version 10 (the schema before the lease journal, migration 11) wrote a lease change:
# the lease row, its lease_events row and its events row in one statement. The current
# DHCP server writes journal rows instead, so it cannot stand in for that version here.
_PREVIOUS_EVENT_ROWS = """
, le AS (
    INSERT INTO lease_events (lease_id, event, subnet_id, ip, mac, client_id, duid, hostname,
                              fqdn, circuit_id, remote_id, giaddr, expires_at)
    SELECT lease_id, event, subnet_id, ip, mac, client_id, duid, hostname, fqdn, circuit_id,
           remote_id, giaddr, expires_at FROM l
), ev AS (
    INSERT INTO events (topic, payload)
    SELECT 'lease.' || event, lease_event_payload(lease_id, ip, subnet_id, hostname, fqdn, state,
           mac, client_id, circuit_id, remote_id, giaddr, starts_at, expires_at) FROM l
)
SELECT lease_id FROM l"""


async def _previous_grant(conn: Any, subnet_id: Any, address: str, n: int) -> None:
    mac = mac_bytes(n)
    await conn.execute(
        """WITH l AS (
               INSERT INTO leases (subnet_id, ip, state, client_key, mac, circuit_id, remote_id,
                                   giaddr, starts_at, expires_at)
               VALUES ($1, $2::inet, 'active', $3, $4::macaddr, $5, 'sw1', '127.77.0.1', now(),
                       now() + interval '10 minutes')
               RETURNING *, 'granted'::text AS event)""" + _PREVIOUS_EVENT_ROWS,
        subnet_id, address, b"\x01" + mac, mac.hex(":"), b"ge-0/0/%d" % n)


async def _previous_release(conn: Any, address: str) -> None:
    await conn.execute(
        """WITH l AS (
               UPDATE leases SET state = 'released', expires_at = now(), updated_at = now()
               WHERE ip = $1::inet AND state = 'active'
               RETURNING *, 'released'::text AS event)""" + _PREVIOUS_EVENT_ROWS, address)


async def _rows(conn: Any) -> dict[str, list[Any]]:
    out = {}
    for table in TABLES:  # fixed names, not input
        out[table] = [dict(r) for r in await conn.fetch(f"SELECT * FROM {table} ORDER BY 1")]
    return out


async def _schema(conn: Any) -> list[Any]:
    """The database's shape and the migrations' rows: equal means untouched."""
    tables = await conn.fetch(
        """SELECT c.relname, c.relkind, c.reltuples, obj_description(c.oid)
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' ORDER BY 1""")
    applied = await conn.fetch("SELECT * FROM schema_migrations ORDER BY version")
    return [tuple(r) for r in tables] + [tuple(r) for r in applied]


async def test_upgrade_from_previous_schema(empty_dsn: str, nursery: trio.Nursery,
                                            tmp_path: Path) -> None:
    assert await run_once(empty_dsn, migrate.migrate, PREVIOUS) == [v for v in VERSIONS if v <= PREVIOUS]
    ids = await run_once(empty_dsn, _fill_plan)

    # Leases granted and released at the previous schema level, as that version's DHCP
    # server wrote them.
    kept, gone = "127.77.1.10", "127.77.1.11"
    await run_once(empty_dsn, _previous_grant, ids["subnet_id"], kept, 1)
    await run_once(empty_dsn, _previous_grant, ids["subnet_id"], gone, 2)
    await run_once(empty_dsn, _previous_release, gone)
    sock = relay_socket()
    relay = Relay(trio.socket.from_stdlib_socket(sock), ("127.0.0.1", 0))
    nursery.start_soon(relay.run)
    old = await run_once(empty_dsn, _rows)
    old_applied = await run_once(empty_dsn, lambda c: c.fetch("SELECT * FROM schema_migrations"))
    assert len(old["leases"]) == 2 and len(old["audit_log"]) == 2 and old["outbox"]

    # The current appliance starts on that database (the relay now talks to its server).
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "hosts").write_text("127.0.0.1 fine.test\n")
    dhcp_port = free_port()
    running = await data.start(nursery, parse(data.appliance_config(
        empty_dsn, state_dir, sock.getsockname()[1], dhcp_port)))
    relay.server = ("127.0.0.1", dhcp_port)
    try:
        applied = await run_once(empty_dsn, lambda c: c.fetch(
            "SELECT * FROM schema_migrations ORDER BY version"))
        assert [r["version"] for r in applied] == VERSIONS
        assert {tuple(r) for r in old_applied} <= {tuple(r) for r in applied}  # not re-run
        assert await run_once(empty_dsn, migrate.migrate) == []
        upgraded = await run_once(empty_dsn, _rows)
        # Columns migration N added, each filled from what the rows held (this names the
        # latest migration's, so the next one that adds a column must say how it fills it).
        added = {table: set(upgraded[table][0]) - set(old[table][0])
                 for table in TABLES if upgraded[table] and old[table]}
        # 0027 (the lease checks as domains) adds no column.
        assert {table: names for table, names in added.items() if names} == {}
        assert upgraded == old  # everything still there, unchanged

        async with data.client(running) as anon:
            secret = data.ok(await anon.post("/tokens", json={"name": "a", "role": "admin"}))
        async with data.client(running, secret["token"]) as admin:
            leases = data.ok(await admin.get("/leases"), 200)["items"]
            assert {(x["ip"], x["state"]) for x in leases} == {(kept, "active"),
                                                               (gone, "released")}
            history = data.ok(await admin.get("/history", params={"ip": gone}), 200)["items"]
            assert [h["state"] for h in history] == ["released"]  # backfilled by migration N
            assert data.ok(await admin.get(f"/subnets/{ids['subnet_id']}/reservations"),
                           200)["items"][0]["hostname"] == "printer-1"
            assert data.ok(await admin.get("/webhooks"), 200)["items"][0]["name"] == "siem"
            audited = data.ok(await admin.get("/audit"), 200)["items"]
            assert {"reservation", "webhook"} <= {a["object_type"] for a in audited}
            await data.wait_plan(running, str(ids["subnet_id"]))
            assert await data.renew(relay, 1, kept) == o.ACK  # DHCP serves on
            fresh = await data.dora(relay, 3)
            assert fresh not in (kept, "127.77.2.5")
    finally:
        await data.stop(running)
        sock.close()


async def test_newer_schema_is_refused_untouched(empty_dsn: str, tmp_path: Path) -> None:
    await run_once(empty_dsn, migrate.migrate)

    async def from_the_future(conn: Any) -> None:
        await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, 'next')",
                           migrate.latest() + 1)

    await run_once(empty_dsn, from_the_future)
    before = await run_once(empty_dsn, _schema)
    with pytest.raises(migrate.SchemaTooNew, match=f"knows up to {migrate.latest()}"):
        await run_once(empty_dsn, migrate.migrate)
    config = tmp_path / "ipamd.toml"
    config.write_text(f'[database]\ndsn = "{empty_dsn}"\n')
    result = await trio.run_process(
        [sys.executable, "-m", "ipamd", "--config", str(config), "migrate"],
        capture_stdout=True, capture_stderr=True, check=False)
    err = result.stderr.decode()
    assert result.returncode == 6, err
    assert "upgraded by a newer ipamd" in err and "was not changed" in err
    assert "Traceback" not in err
    assert await run_once(empty_dsn, _schema) == before
