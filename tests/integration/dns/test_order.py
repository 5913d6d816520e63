"""Rows of one lease delivered out of order (a retry outliving the next change): each applies
only while it still says what the lease is — checked against a real BIND 9."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipamd.dns.bind_tsig import BindTsig
from ipamd.dns.delivery import DnsDeliverer
from ipamd.outbox.backoff import Backoff
from ipamd.outbox.queue import Job
from ipamd.state import AppState
from tests.conftest import make_config
from tests.integration.dhcp.harness import seed_subnet
from tests.integration.dns.ddns import bind_serving
from tests.integration.ipam.helpers import insert_lease
from tests.support.bind import KEY_NAME, Bind

ZONE, REVERSE = "lan.example", "77.127.in-addr.arpa"
SECRET_ENV = "IPAMD_TEST_TSIG_ORDER"


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Bind]:
    with bind_serving(tmp_path, SECRET_ENV) as server:
        yield server


async def _seed(conn, port: int) -> tuple[uuid.UUID, uuid.UUID]:  # type: ignore[no-untyped-def]
    server = await conn.fetchval(
        """INSERT INTO dns_servers (name, adapter, address, port, tsig_key_name, secret_ref)
           VALUES ('bind', 'bind_tsig', '127.0.0.1', $1, $2, $3) RETURNING id""",
        port, KEY_NAME, f"env:{SECRET_ENV}")
    subnet = (await seed_subnet(conn))["subnet_id"]
    return server, subnet


def _job(server: uuid.UUID, lease_id: uuid.UUID, op: str, ip: str) -> Job:
    dns = {"source": "lease", "server_id": str(server), "op": op, "name": f"pc.{ZONE}",
           "ip": ip, "zone": ZONE, "reverse_zone": REVERSE, "ttl": 60}
    payload = {"lease_id": str(lease_id), "mac": "02:00:00:00:00:07", "client_id": None}
    return Job(id=uuid.uuid4(), kind="dns", topic=f"lease.{op}", event_id=uuid.uuid4(),
               attempt=1, claim=uuid.uuid4(), body=json.dumps(payload), webhook_id=None,
               target=f"pc.{ZONE}", url=None, secret_ref=None, previous_secret_ref=None,
               webhook_state="ok", dns=dns)


async def test_stale_rows_do_not_undo_newer_ones(db, dsn, bind: Bind) -> None:
    server, subnet = await db.transaction(_seed, bind.port)
    state = AppState(config=make_config(dsn), db=db)
    deliver = DnsDeliverer(state, {"bind_tsig": BindTsig()}, Backoff.from_config(
        state.config.outbox)).deliver
    lease = await db.run(insert_lease, subnet, "127.77.0.7", "active", "02:00:00:00:00:07")

    # A remove retried after the lease became active again: not applied.
    added = await deliver(_job(server, lease, "add", "127.77.0.7"))
    assert added.ok and bind.dig(f"pc.{ZONE}") == ["127.77.0.7"]
    stale_remove = await deliver(_job(server, lease, "remove", "127.77.0.7"))
    assert stale_remove.ok and stale_remove.response.startswith("superseded")
    assert bind.dig(f"pc.{ZONE}") == ["127.77.0.7"]

    # The lease released: the remove applies, and a late add is not applied.
    await db.run(lambda c: c.execute("UPDATE leases SET state = 'released' WHERE lease_id = $1",
                                      lease))
    removed = await deliver(_job(server, lease, "remove", "127.77.0.7"))
    assert removed.ok and not removed.response.startswith("superseded")
    assert bind.dig(f"pc.{ZONE}") == []
    late_add = await deliver(_job(server, lease, "add", "127.77.0.7"))
    assert late_add.ok and late_add.response.startswith("superseded")
    assert bind.dig(f"pc.{ZONE}") == []
