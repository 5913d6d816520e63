"""Migration 0015 on a database an earlier version filled: every object gains the default
tenant, and what that version wrote naming a secret's location (a DNS server's keytab_path in
audit entries and their ipam.audit events, delivery errors naming a secret file, a variable or
a keytab) no longer does (core/secret_locations)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ipamd.db import migrate
from ipamd.db.bridge import run_once
from tests.integration import appliance_data as data
from tests.support import postgres

DEFAULT_TENANT = "00000000-0000-7000-8000-000000000001"
KEYTAB = "/etc/ipamd/keys/ad.keytab"
HOOK_FILE = "/etc/ipamd/keys/hook secret"  # a space: found by the configured location
ERRORS = {
    f"secret file {HOOK_FILE} does not exist": "secret file (redacted) does not exist",
    "environment variable PDNS_API_KEY is not set on this node":
        "environment variable (redacted) is not set on this node",
    f"SECRET: keytab {KEYTAB} cannot be read: No such file or directory":
        "SECRET: keytab (redacted) cannot be read: No such file or directory",
    f"KERBEROS: Key table file '{KEYTAB}' not found":
        "KERBEROS: Key table file '(redacted)' not found",
    "SECRET: the secret behind file:/etc/ipamd/tsig.key is not base64":
        "SECRET: the secret behind (redacted) is not base64",
    "HTTP 503 Service Unavailable": "HTTP 503 Service Unavailable",
}


@pytest.fixture
async def empty_dsn(pg: postgres.PgServer, aio: Any) -> Any:
    async with data.empty_database(pg) as dsn:
        yield dsn


async def _fill(conn: Any) -> None:
    """As 0014's code wrote them: the keytab in clear in audit entries and events."""
    await conn.execute(
        """INSERT INTO webhooks (name, url, secret_ref) VALUES ('hook', 'https://h.example/',
           $1)""", f"file:{HOOK_FILE}")
    server = await conn.fetchval(
        """INSERT INTO dns_servers (name, adapter, address, krb_principal, keytab_path,
                                    krb_service_host)
           VALUES ('ad', 'ad_gsstsig', '10.77.0.53', 'ipamd@AD.TEST', $1, 'dc.ad.test')
           RETURNING id""", KEYTAB)
    after = json.dumps({"id": str(server), "name": "ad", "secret_ref": None,
                        "keytab_path": KEYTAB})
    await conn.execute(
        """INSERT INTO audit_log (actor, action, object_type, object_id, after)
           VALUES ('token:old', 'create', 'dns_server', $1, $2::text::jsonb)""",
        str(server), after)
    event = await conn.fetchval(
        """INSERT INTO events (topic, payload) VALUES ('ipam.audit', jsonb_build_object(
               'object_type', 'dns_server', 'before', NULL, 'after', $1::text::jsonb))
           RETURNING id""", after)
    for message in ERRORS:
        row = await conn.fetchval(
            """INSERT INTO outbox (kind, event_id, topic, webhook_id, state, last_error)
               SELECT 'webhook', $1, 'ipam.audit', id, 'failed', $2 FROM webhooks
               RETURNING id""", event, message)
        await conn.execute(
            """INSERT INTO outbox_attempts (outbox_id, attempt, at, duration_ms, error)
               VALUES ($1, 1, now(), 1.0, $2)""", row, message)


async def _after(conn: Any) -> dict[str, Any]:
    return {
        "audit": await conn.fetchval("SELECT after::text FROM audit_log"),
        "event": await conn.fetchval("SELECT payload::text FROM events"),
        "errors": [r[0] for r in await conn.fetch(
            "SELECT last_error FROM outbox WHERE state = 'failed'")],
        "attempts": [r[0] for r in await conn.fetch(
            "SELECT a.error FROM outbox_attempts a JOIN outbox o ON o.id = a.outbox_id")],
        "tenants": {r[0] for r in await conn.fetch(
            """SELECT tenant_id::text FROM webhooks UNION SELECT tenant_id::text FROM dns_servers
               UNION SELECT tenant_id::text FROM tokens""")},
    }


async def test_0015_redacts_what_was_written_and_gives_every_object_a_tenant(empty_dsn):
    await run_once(empty_dsn, migrate.migrate, 14)
    await run_once(empty_dsn, _fill)
    assert await run_once(empty_dsn, migrate.migrate, 15) == [15]
    found = await run_once(empty_dsn, _after)
    assert json.loads(found["audit"])["keytab_path"] == "(redacted)"
    assert json.loads(found["audit"])["secret_ref"] is None
    assert json.loads(found["event"])["after"]["keytab_path"] == "(redacted)"
    # Sorted: rows inserted in one millisecond have v7 ids in no promised order.
    assert sorted(found["errors"]) == sorted(found["attempts"]) == sorted(ERRORS.values())
    assert found["tenants"] <= {DEFAULT_TENANT}
