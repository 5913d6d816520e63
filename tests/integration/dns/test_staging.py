"""Lease DNS changes leave a DHCP commit as one staged entry per statement (migration 0008);
the delivery process's claim turns entries into kind=dns rows, in its own transaction, each
change once. A NOTIFY goes out only for the first entry staged, not for every commit.
Since 0010 the commit stages every named lease change without looking at its subnet (while
any subnet sends updates at all); the expansion keeps only those of such subnets, in zone."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest
import trio

from ipamd.dns.delivery import expand_staged
from tests.integration.dhcp.harness import seed_subnet

ZONE = "lan.example"


async def _seed(conn: asyncpg.Connection) -> uuid.UUID:
    server = await conn.fetchval(
        """INSERT INTO dns_servers (name, adapter, address, port, tsig_key_name, secret_ref)
           VALUES ('bind', 'bind_tsig', '127.0.0.1', 53, 'k', 'env:X') RETURNING id""")
    await conn.execute("INSERT INTO dns_zones (name, server_id, default_ttl) VALUES ($1, $2, 300)",
                       ZONE, server)
    subnet = (await seed_subnet(conn, ddns_adapter="bind_tsig", ddns_server_id=server,
                                ddns_zone=ZONE))["subnet_id"]
    plain = (await seed_subnet(conn, "127.78.0.0/16", gateway="127.78.0.1"))["subnet_id"]
    return subnet, plain  # type: ignore[return-value]


async def _grant(conn: asyncpg.Connection, subnet: uuid.UUID, names: list[str]) -> None:
    """One statement's lease events, as the lease store writes them (one commit batch)."""
    await conn.execute(
        """INSERT INTO events (topic, payload)
           SELECT 'lease.granted', jsonb_build_object(
               'lease_id', gen_random_uuid(), 'subnet_id', $1::text, 'ip', '127.77.0.' || n.i,
               'fqdn', n.name, 'mac', '02:00:00:00:00:01')
           FROM unnest($2::text[]) WITH ORDINALITY AS n(name, i)""",
        str(subnet), names)


async def _counts(conn: asyncpg.Connection) -> dict[str, Any]:
    return dict(await conn.fetchrow(
        """SELECT (SELECT count(*) FROM dns_staged) AS staged,
                  (SELECT count(*) FROM outbox WHERE kind = 'dns') AS rows,
                  (SELECT count(DISTINCT event_id) FROM outbox WHERE kind = 'dns') AS events"""))


async def _expand(conn: asyncpg.Connection, most: int) -> int:
    async with conn.transaction():
        return await expand_staged(conn, most)


async def test_one_entry_per_statement_each_change_expanded_once(db) -> None:
    subnet, plain = await db.transaction(_seed)
    notified: list[str] = []
    listener = await db.listen("ipamd_outbox")

    async def hear() -> None:
        async for payload in listener:
            notified.append(payload)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(hear)
        await db.transaction(_grant, subnet, [f"a{i}.{ZONE}" for i in range(3)])
        await db.transaction(_grant, subnet, [f"b{i}.{ZONE}" for i in range(2)])
        await db.transaction(_grant, plain, [f"c.{ZONE}"])  # no dynamic DNS there
        await db.transaction(_grant, subnet, ["outside.other.zone"])  # not in the zone
        await db.transaction(_grant, subnet, [])  # a statement without events: nothing staged
        assert await db.run(_counts) == {"staged": 4, "rows": 0, "events": 0}
        await trio.sleep(0.3)
        assert notified == ["dns"]  # the first entry only

        # Entries are taken oldest first, whole, and gone with their rows made; the changes
        # of a subnet without dynamic DNS, or named outside its zone, make no row.
        assert await db.run(_expand, 1) == 3
        assert await db.run(_counts) == {"staged": 3, "rows": 3, "events": 3}
        assert await db.run(_expand, 20) == 2
        assert await db.run(_counts) == {"staged": 0, "rows": 5, "events": 5}
        assert await db.run(_expand, 20) == 0
        rows = await db.run(lambda c: c.fetch(
            "SELECT target, dns FROM outbox WHERE kind = 'dns' ORDER BY target"))
        assert [r["target"] for r in rows] == [f"a0.{ZONE}", f"a1.{ZONE}", f"a2.{ZONE}",
                                               f"b0.{ZONE}", f"b1.{ZONE}"]
        assert rows[0]["dns"]["op"] == "add" and rows[0]["dns"]["ttl"] == 300

        # Staged again after the table emptied: notified again (the expansions that made
        # rows notified too, for the claimers).
        await trio.sleep(0.3)
        assert notified == ["dns"] * 3
        await db.transaction(_grant, subnet, [f"d.{ZONE}"])
        with trio.fail_after(5):
            while len(notified) < 4:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    await listener.release()  # type: ignore[attr-defined]


async def test_an_expansion_rolled_back_keeps_its_entries(db) -> None:
    subnet, _plain = await db.transaction(_seed)
    await db.transaction(_grant, subnet, [f"x.{ZONE}"])

    async def expand_then_fail(conn: asyncpg.Connection) -> None:
        await expand_staged(conn, 20)
        raise RuntimeError("the claim failed after the expansion")

    with pytest.raises(RuntimeError):
        await db.transaction(expand_then_fail)
    assert await db.run(_counts) == {"staged": 1, "rows": 0, "events": 0}


async def test_nothing_is_staged_while_no_subnet_sends_dns_updates(db) -> None:
    async def seed_plain(conn: asyncpg.Connection) -> uuid.UUID:
        return (await seed_subnet(conn, "127.78.0.0/16", gateway="127.78.0.1"))["subnet_id"]

    plain = await db.transaction(seed_plain)
    await db.transaction(_grant, plain, [f"c.{ZONE}"])  # a client's option 81 name
    assert await db.run(_counts) == {"staged": 0, "rows": 0, "events": 0}
