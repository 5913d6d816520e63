"""The history fold's fast path (a statement of new grants only: one insert) writes exactly
the intervals the full fold writes. Each batch goes once to a subnet where it takes the fast
path and once, with an ignored extra event (a release of a lease with nothing open), to a
subnet where it takes the full fold; the two sets of intervals must match row for row."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from typing import Any

from ipamd.db.bridge import Database
from tests.integration.dhcp.harness import seed_subnet

_INSERT = """
INSERT INTO lease_events (id, at, lease_id, event, subnet_id, ip, mac, client_id, duid,
                          hostname, fqdn, circuit_id, remote_id, giaddr, expires_at)
SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::uuid[], $4::text[], $5::uuid[],
                     $6::inet[], $7::macaddr[], $8::bytea[], $9::text[], $10::text[], $11::text[],
                     $12::bytea[], $13::bytea[], $14::inet[], $15::timestamptz[])
"""
_INTERVALS = """
SELECT host(ip) AS ip, mac::text, client_id, duid, hostname, fqdn, circuit_id, remote_id,
       host(giaddr) AS giaddr, from_at, to_at, state, expires_at, declined_at, map_head
FROM lease_intervals WHERE subnet_id = $1 ORDER BY id
"""


def _event(n: int, lease: uuid.UUID, subnet: uuid.UUID, at: dt.datetime, rnd: random.Random,
           event: str = "granted") -> tuple[Any, ...]:
    return (uuid.UUID(int=n), at, lease, event, subnet, f"127.77.{rnd.randint(1, 200)}.7",
            rnd.choice([None, f"02:00:00:00:{rnd.randint(0, 99):02d}:01"]),
            rnd.choice([None, b"\x01\x02\x03"]), rnd.choice([None, "00:01-0A.bc"]),
            rnd.choice([None, "pc", 'he said "hi"']), rnd.choice([None, "pc.example."]),
            rnd.choice([None, b"eth0"]), rnd.choice([None, b"r1"]), "127.77.0.1",
            at + dt.timedelta(hours=1))


async def test_new_grants_fast_path_matches_the_full_fold(db: Database) -> None:
    async def run(conn: Any) -> tuple[list[Any], list[Any]]:
        fast = (await seed_subnet(conn, "127.77.0.0/16"))["subnet_id"]
        full = (await seed_subnet(conn, "127.78.0.0/16"))["subnet_id"]
        rnd = random.Random(4)
        start = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
        n = 0
        for batch in range(40):
            at = start + dt.timedelta(seconds=batch)
            seeds = [rnd.random() for _ in range(rnd.choice([1, 2, 7]))]
            for subnet in (fast, full):
                rows = []
                for k, seed in enumerate(seeds):
                    n += 1
                    # Lease ids sort alike in both subnets, so the fold orders them alike.
                    lease = uuid.UUID(int=(batch * 100 + k) * 2 + (subnet == full))
                    rows.append(_event(n, lease, subnet, at, random.Random(seed)))
                if subnet == full:
                    n += 1
                    rows.append(_event(n, uuid.uuid4(), full, at, rnd, "released"))
                await conn.execute(_INSERT, *[list(c) for c in zip(*rows, strict=True)])
        return ([dict(r) for r in await conn.fetch(_INTERVALS, fast)],
                [dict(r) for r in await conn.fetch(_INTERVALS, full)])

    fast_rows, full_rows = await db.transaction(run)
    assert len(fast_rows) == len(full_rows) > 40
    for a, b in zip(fast_rows, full_rows, strict=True):
        assert a == b
    assert all(r["state"] == "active" and r["to_at"] is None for r in fast_rows)
    assert {r["duid"] for r in fast_rows} == {None, "00010abc"}
