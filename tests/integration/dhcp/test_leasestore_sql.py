"""The batch SQL against real Postgres: unique indexes as judge, events in the same statement,
supersede, fallback inserts, and the expiry worker's batch."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ipamd.db.bridge import Database
from ipamd.dhcp import leasestore
from ipamd.dhcp.leasestore import Op, OpKind, expire_batch
from tests.integration.dhcp.harness import seed_subnet
from tests.unit.dhcp.packets import ip

PAYLOAD_FIELDS = {"lease_id", "ip", "subnet_id", "hostname", "fqdn", "state", "mac", "client_id",
                  "circuit_id", "remote_id", "giaddr", "starts_at", "expires_at"}


@pytest.fixture
async def subnet(db: Database) -> uuid.UUID:
    async def seed(conn) -> Any:
        return (await seed_subnet(conn, pools=[("127.77.1.10", "127.77.1.50")]))["subnet_id"]

    return await db.transaction(seed)


def _op(kind: int, subnet: uuid.UUID, address: str | None, key: bytes, seconds: int = 60,
        **extra: Any) -> Op:
    return Op(kind, subnet, None if address is None else ip(address), key, seconds,
              mac=key[-6:].hex() if len(key) >= 6 else None, **extra)


async def _commit(db: Database, *ops: Op) -> list[Op]:
    await db.run(leasestore.commit, list(ops))
    return list(ops)


async def _q(db: Database, sql: str, *args: Any) -> list[dict[str, Any]]:
    async def read(conn) -> Any:
        return [dict(r) for r in await conn.fetch(sql, *args)]

    return await db.run(read)


async def test_offer_then_ack_then_renew_write_events(db: Database, subnet: uuid.UUID) -> None:
    key = b"\x01\x02\x00\x00\x00\x00\x01"
    (offer,) = await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.10", key, 30,
                                     hostname="pc1", circuit_id=b"c1", giaddr=ip("127.77.0.1")))
    assert offer.ok and offer.event is None and offer.lease_id is not None
    assert await _q(db, "SELECT * FROM lease_events") == []  # an offer is not a lease event
    (ack,) = await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.10", key, 3600,
                                   giaddr=ip("127.77.0.1"), remote_id=b"r1"))
    assert ack.ok and ack.event == "granted" and ack.lease_id == offer.lease_id
    assert ack.expires - offer.expires > 3000
    (renew,) = await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.10", key, 3600))
    assert renew.ok and renew.event == "renewed" and renew.lease_id == offer.lease_id
    (row,) = await _q(db, "SELECT state, hostname, starts_at < updated_at AS kept_start "
                          "FROM leases")
    assert row == {"state": "active", "hostname": "pc1", "kept_start": True}
    events = await _q(db, "SELECT topic, payload FROM events WHERE topic LIKE 'lease.%' "
                          "ORDER BY id")
    assert [e["topic"] for e in events] == ["lease.granted", "lease.renewed"]
    granted = events[0]["payload"]
    assert set(granted) == PAYLOAD_FIELDS
    assert granted["ip"] == "127.77.1.10" and granted["state"] == "active"
    assert granted["mac"] == "02:00:00:00:00:01" and granted["hostname"] == "pc1"
    assert granted["remote_id"] == "72:31" and granted["giaddr"] == "127.77.0.1"
    assert granted["expires_at"].endswith("Z")
    history = await _q(db, "SELECT event, host(ip) AS ip FROM lease_events ORDER BY id")
    assert history == [{"event": "granted", "ip": "127.77.1.10"},
                       {"event": "renewed", "ip": "127.77.1.10"}]


async def test_unique_indexes_refuse_and_report_the_blocker(db: Database,
                                                            subnet: uuid.UUID) -> None:
    a, b = b"client-a", b"client-b"
    (first,) = await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.20", a))
    same_ip, same_client, fine = await _commit(
        db,
        _op(OpKind.OFFER, subnet, "127.77.1.20", b),  # the address is taken
        _op(OpKind.OFFER, subnet, "127.77.1.21", a),  # the client already has one
        _op(OpKind.OFFER, subnet, "127.77.1.22", b"client-c"),
    )
    assert fine.ok and not same_ip.ok and not same_client.ok
    assert [r[0] for r in same_ip.refreshed] == [first.lease_id]
    assert [(r[0], r[2], r[4]) for r in same_client.refreshed] == [
        (first.lease_id, ip("127.77.1.20"), a)]
    # Two new requests for one address in one batch: exactly one wins.
    x, y = await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.30", b"x"),
                         _op(OpKind.OFFER, subnet, "127.77.1.30", b"y"))
    assert x.ok != y.ok


async def test_ack_without_lease_is_refused_or_inserted(db: Database, subnet: uuid.UUID) -> None:
    (strict,) = await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.40", b"k1", 600))
    assert not strict.ok and strict.refreshed == []
    (lenient,) = await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.40", b"k1", 600,
                                       may_insert=True))
    assert lenient.ok and lenient.event == "granted"
    (taken,) = await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.40", b"k2", 600,
                                     may_insert=True))
    assert not taken.ok and taken.refreshed[0][4] == b"k1"


async def test_release_decline_and_hold(db: Database, subnet: uuid.UUID) -> None:
    await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.11", b"r"),
                  _op(OpKind.OFFER, subnet, "127.77.1.12", b"d"))
    (early,) = await _commit(db, _op(OpKind.RELEASE, subnet, "127.77.1.11", b"r"))
    assert not early.ok  # an Offer is not released by the client
    lease_id = (await _q(db, "SELECT lease_id FROM leases WHERE client_key = 'd'"))[0]["lease_id"]
    (hold,) = await _commit(db, Op(OpKind.HOLD, subnet, ip("127.77.1.12"), b"d", 300,
                                   lease_id=lease_id))
    assert hold.ok and hold.lease_id == lease_id
    await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.11", b"r", 600))
    released, declined = await _commit(
        db, _op(OpKind.RELEASE, subnet, "127.77.1.11", b"r"),
        _op(OpKind.DECLINE, subnet, "127.77.1.12", b"d", 7200))
    assert released.ok and released.event == "released"
    assert declined.ok and declined.event == "declined"
    rows = await _q(db, "SELECT client_key, state, expires_at > now() + interval '1 hour' AS q "
                        "FROM leases ORDER BY client_key")
    assert rows == [{"client_key": b"d", "state": "declined", "q": True},
                    {"client_key": b"r", "state": "released", "q": False}]
    # The declined address stays held: nobody gets it during probation.
    (blocked,) = await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.12", b"n"))
    assert not blocked.ok and blocked.refreshed[0][3] == "declined"
    topics = [r["topic"] for r in await _q(db, "SELECT topic FROM events ORDER BY id")
              if r["topic"].startswith("lease.")]
    # The last two were one batch: one statement, in no particular order.
    assert topics[0] == "lease.granted"
    assert sorted(topics[1:]) == ["lease.declined", "lease.released"]


async def test_supersede_ends_the_clients_other_lease(db: Database, subnet: uuid.UUID) -> None:
    await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.13", b"s"))
    await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.13", b"s", 600))
    (moved,) = await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.14", b"s",
                                     supersede=True))
    assert moved.ok and moved.superseded is not None and moved.superseded[1] is True
    (again,) = await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.15", b"s",
                                     supersede=True))
    assert again.ok and again.superseded == (moved.lease_id, False)  # offer only: deleted
    rows = await _q(db, "SELECT host(ip) AS ip, state FROM leases ORDER BY ip")
    assert rows == [{"ip": "127.77.1.13", "state": "released"},
                    {"ip": "127.77.1.15", "state": "offered"}]


async def test_expiry_batch(db: Database, subnet: uuid.UUID) -> None:
    await _commit(db, _op(OpKind.OFFER, subnet, "127.77.1.16", b"o"),
                  _op(OpKind.OFFER, subnet, "127.77.1.17", b"a"),
                  _op(OpKind.OFFER, subnet, "127.77.1.18", b"d"),
                  _op(OpKind.OFFER, subnet, "127.77.1.19", b"future"))
    await _commit(db, _op(OpKind.ACK, subnet, "127.77.1.17", b"a", 600))
    await _commit(db, _op(OpKind.DECLINE, subnet, "127.77.1.18", b"d", 600))

    async def age(conn) -> None:
        await conn.execute("UPDATE leases SET expires_at = now() - interval '1 second' "
                           "WHERE client_key <> 'future'")

    await db.run(age)
    ended = await db.transaction(expire_batch, 100)
    assert sorted(e[2] or "-" for e in ended) == ["-", "expired", "expired"]
    rows = await _q(db, "SELECT client_key, state FROM leases ORDER BY client_key")
    assert rows == [{"client_key": b"a", "state": "expired"},
                    {"client_key": b"d", "state": "expired"},
                    {"client_key": b"future", "state": "offered"}]
    assert await db.transaction(expire_batch, 100) == []
    topics = [r["topic"] for r in await _q(db, "SELECT topic FROM events ORDER BY id")
              if r["topic"].startswith("lease.")]
    assert topics.count("lease.expired") == 2
