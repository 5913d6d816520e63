"""The lease store: every lease state change goes through it, whoever asks.

It is this module (DHCPv6 bindings, below) and two beside it, whose names it gives:
``leasestore4`` (DHCPv4 group commit) and ``leasetable`` (``OpKind``, the expiry
worker's and the API's ends of leases). Callers use ``leasestore`` alone.

* the DHCP server's committer: ``commit`` grants (at the Ack), renews, releases and
  declines a whole batch of transactions in one ``unnest`` statement. An Offer writes
  nothing: the address is held in the offering node's memory (``leasecache.OfferHolds``);
* the expiry worker: ``expire_batch`` (active/declined → expired; lapsed ``offered`` rows,
  which earlier versions wrote for Offers, deleted);
* the API: ``force_release`` (an operator ends a live lease); ``drop_ended`` when a subnet
  with no live lease left is deleted.

Asyncio side, called through the bridge (one crossing per unit). Every change writes its
``lease_journal`` row in the same statement (``core.lease_events``); its history row and its
outbox event are derived from the journal afterwards, many changes at a time, so a DHCP
Ack waits for its own commit only. The unique indexes on live leases judge every new lease:
a refused insert is reported back with the rows that refused it, so the caller can pick
again. A batch's grants hold their subnets FOR KEY SHARE until they commit (leases have no
foreign key: one check per statement, not per row), so a subnet being deleted refuses them.
"""

from __future__ import annotations

import ipaddress
import os
import time
import uuid
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any

import asyncpg

from ipamd.core.lease_events import event_ctes
from ipamd.dhcp.leasestore4 import WARM_SHAPES, Op, commit, load_live, warm
from ipamd.dhcp.leasetable import (
    LEASE_COLUMNS,
    OpKind,
    drop_ended,
    expire_batch,
    force_release,
)

__all__ = [
    "LEASE_COLUMNS",
    "WARM_SHAPES",
    "Op",
    "OpKind",
    "commit",
    "drop_ended",
    "expire_batch",
    "force_release",
    "load_live",
    "warm",
]


# --------------------------------------------------------------------------- DHCPv6 bindings
# The DHCPv6 server's bindings are leases of the same table, states, journal and expiry
# (migration 0017): one row per binding of a client's IA, an address (IA_NA, length 128)
# or a delegated prefix (IA_PD, ``ip`` its first address). The DHCPv6 committer writes a
# batch of messages' changes in one transaction: the client's other binding of an IA being
# granted anew is released first (a reservation appeared: ``_SUPERSEDE6``), then one
# statement ends, renews and inserts, each change with its journal row. Addresses go as
# ``inet`` (an int8 cannot hold 128 bits). Inserts go trusting, then careful, as DHCPv4's
# (leasestore4._main says why).

IA_NA = "na"
IA_PD = "pd"
_V6_KEY = b"\x06"


def client_key6(duid: bytes, iaid: int, ia_type: str) -> bytes:
    """The ``client_key`` of a DHCPv6 binding: one live binding per IA per subnet
    (leases_live_client), so a DUID's IA_NA and IA_PD, and IAs of other IAIDs, coexist."""
    return _V6_KEY + (b"n" if ia_type == IA_NA else b"p") + iaid.to_bytes(4, "big") + duid


class Op6:
    """One binding's change (a ``dhcp6.engine.LeaseChange`` with what the relays told)."""

    __slots__ = ("client_key", "duid", "event", "expires", "fqdn", "giaddr", "ia_type", "iaid",
                 "ip", "kind", "lease_id", "mac", "ok", "preferred", "prefix_length",
                 "remote_id", "seconds", "subnet_id", "subscriber_id", "supersede", "valid")

    def __init__(
        self, kind: OpKind, subnet_id: uuid.UUID, ip: ipaddress.IPv6Address, prefix_length: int,
        duid: bytes,
        iaid: int, ia_type: str, *, preferred: int = 0, valid: int = 0, seconds: int = 0,
        giaddr: str | None = None, remote_id: bytes | None = None,
        subscriber_id: bytes | None = None, mac: str | None = None, supersede: bool = False,
        fqdn: str | None = None,
    ) -> None:
        self.kind = kind
        self.fqdn = fqdn  # the name this server registers in DNS (RFC 4704), IA_NA only
        # A grant for an IA that may hold another binding (the server's cache says so):
        # that one is released first (_SUPERSEDE6); else the insert alone suffices.
        self.supersede = supersede
        self.subnet_id = subnet_id
        self.ip = ip
        self.prefix_length = prefix_length
        self.client_key = client_key6(duid, iaid, ia_type)
        self.duid = duid.hex(":")
        self.iaid = iaid
        self.ia_type = ia_type
        self.preferred = preferred
        self.valid = valid
        self.seconds = seconds  # a Decline's probation
        self.giaddr = giaddr
        self.remote_id = remote_id
        self.subscriber_id = subscriber_id
        self.mac = mac
        self.ok = False
        self.lease_id: uuid.UUID | None = None
        self.event: str | None = None
        self.expires = 0.0

    @property
    def duid_raw(self) -> bytes:
        return self.client_key[6:]  # after client_key6's type octets and IAID

    def reset(self) -> None:
        self.ok = False
        self.lease_id = None
        self.event = None
        self.expires = 0.0

    def __repr__(self) -> str:
        return f"Op6(kind={self.kind}, ip={self.ip}/{self.prefix_length}, ok={self.ok})"


class Ops6:
    """One DHCPv6 message's changes: the committer's unit (its reply waits for all)."""

    __slots__ = ("ops",)

    def __init__(self, ops: list[Op6]) -> None:
        self.ops = ops

    @property
    def ok(self) -> bool:
        return all(op.ok for op in self.ops)

    def reset(self) -> None:
        for op in self.ops:
            op.reset()


# Addresses go as text (eight hex groups, _v6_arrays), cast here: the driver's inet encoder
# takes an IPv6Address through ipaddress.ip_address (two str() and a failed IPv4 parse), the
# cast in the server is C. The commit's Python CPU per grant: 48 -> 13 µs (bench_dhcp6_engine).
# An op's index in the batch is the row's ordinality (counted by the server, not sent). A
# new lease's id comes with it (_v7_ids), not from the column's default (see there).
_V6_ROWS = """r AS (
    SELECT i - 1 AS i, kind, subnet_id, ip::inet AS ip, prefix_length, client_key, duid, iaid,
           ia_type, preferred, valid, seconds, giaddr::inet AS giaddr, remote_id,
           subscriber_id, mac, supersede, fqdn, new_id
    FROM unnest($1::int2[], $2::uuid[], $3::text[], $4::int2[],
                $5::bytea[], $6::text[], $7::int8[], $8::text[], $9::int4[],
                $10::int4[], $11::int4[], $12::text[], $13::bytea[], $14::bytea[],
                $15::text[], $16::bool[], $17::text[], $18::uuid[]) WITH ORDINALITY
        AS u(kind, subnet_id, ip, prefix_length, client_key, duid, iaid, ia_type,
             preferred, valid, seconds, giaddr, remote_id, subscriber_id, mac, supersede, fqdn,
             new_id, i)
)"""
_V6_FIELDS = ("kind", "subnet_id", "ip", "prefix_length", "client_key", "duid", "iaid",
              "ia_type", "preferred", "valid", "seconds", "giaddr", "remote_id",
              "subscriber_id", "mac", "supersede", "fqdn")

_SUPERSEDE6 = f"""
WITH {_V6_ROWS}, ended AS (
    UPDATE leases l SET state = 'released', expires_at = now(), sweep_at = now(),
        updated_at = now()
    FROM r
    WHERE r.kind = {OpKind.INSERT:d} AND r.supersede AND l.subnet_id = r.subnet_id
      AND l.client_key = r.client_key AND l.state = 'active' AND l.ip <> r.ip
    RETURNING l.*, 'released'::text AS event
){event_ctes("ended", "event")}
SELECT count(*) FROM ended
"""

# One statement per batch, of the parts its ops need (as _main_sql for DHCPv4: a part with
# no rows still costs its plan nodes; a batch of 64 grants: ~150-195 µs of backend CPU per
# grant with every part, ~83 with the insert alone, bench/bench_dhcp6_engine.py --commit).
_HELD6 = """held AS (
    -- The batch's subnets, held against deletion until this commits (as _INSERT does).
    SELECT id FROM subnets WHERE id = ANY($2::uuid[]) FOR KEY SHARE
)"""
_ENDED6 = f"""ended AS (
    UPDATE leases l SET state = r.new_state, updated_at = now(),
        expires_at = CASE WHEN r.new_state = 'declined'
                          THEN now() + make_interval(secs => r.seconds) ELSE now() END,
        sweep_at = CASE WHEN r.new_state = 'declined'
                        THEN now() + make_interval(secs => r.seconds) ELSE now() END
    FROM (SELECT *, CASE WHEN kind = {OpKind.RELEASE:d} THEN 'released' ELSE 'declined' END
                        AS new_state
          FROM r WHERE kind IN ({OpKind.RELEASE:d}, {OpKind.DECLINE:d})) r
    WHERE l.subnet_id = r.subnet_id AND l.ip = r.ip AND l.client_key = r.client_key
      AND l.state = 'active'
    RETURNING r.i, l.*, r.new_state AS event
)"""
_RENEWED6 = f"""renewed AS (
    UPDATE leases l SET
        expires_at = now() + make_interval(secs => r.valid),
        sweep_at = least(l.sweep_at, now() + make_interval(secs => r.valid)),
        preferred_lifetime = r.preferred, valid_lifetime = r.valid, giaddr = r.giaddr,
        remote_id = r.remote_id, subscriber_id = r.subscriber_id,
        mac = coalesce(r.mac::macaddr, l.mac), fqdn = coalesce(r.fqdn, l.fqdn),
        updated_at = now()
    FROM r
    WHERE r.kind = {OpKind.ACK:d} AND l.subnet_id = r.subnet_id AND l.ip = r.ip
      AND l.client_key = r.client_key AND l.state = 'active'
    RETURNING r.i, l.*, 'renewed'::text AS event
)"""
_INSERTED6 = f"""inserted AS (
    INSERT INTO leases (lease_id, subnet_id, ip, state, client_key, mac, duid, remote_id,
                        subscriber_id, giaddr, iaid, ia_type, prefix_length,
                        preferred_lifetime, valid_lifetime, fqdn, starts_at, expires_at,
                        sweep_at)
    SELECT new_id, subnet_id, ip, 'active', client_key, mac::macaddr, duid, remote_id,
           subscriber_id, giaddr, iaid, ia_type, prefix_length, preferred, valid, fqdn, now(),
           now() + make_interval(secs => valid), now() + make_interval(secs => valid)
    FROM r WHERE kind = {OpKind.INSERT:d} AND subnet_id = ANY (ARRAY(SELECT id FROM held))
    ORDER BY subnet_id, ip
    {{conflict}}
    RETURNING {LEASE_COLUMNS}, client_key, 'granted'::text AS event
)"""
# Inserted rows are matched to their ops in Python (commit6), by what they inserted.
_OUTCOMES6 = {
    "ended": "SELECT i, lease_id, event, date_part('epoch', expires_at) AS expires, "
             "NULL::text AS ip, NULL::bytea AS client_key, NULL::uuid AS subnet_id FROM ended",
    "renewed": "SELECT i, lease_id, event, date_part('epoch', expires_at), NULL, NULL, NULL "
               "FROM renewed",
    "inserted": "SELECT NULL, lease_id, event, date_part('epoch', expires_at), host(ip), "
                "client_key, subnet_id FROM inserted",
}


@cache
def _commit6_sql(ends: bool, renews: bool, inserts: bool, careful: bool = True) -> str:
    """The batch's statement: its parts (ends, renewals, inserts) and their journal rows.
    ``careful``: an insert a unique index refuses is skipped, else it fails the statement."""
    parts = [_V6_ROWS]
    outputs = []
    inserted = _INSERTED6.format(conflict="ON CONFLICT DO NOTHING" if careful else "")
    for wanted, cte, output in ((ends, _ENDED6, "ended"), (renews, _RENEWED6, "renewed"),
                                (inserts, inserted, "inserted")):
        if wanted:
            parts += [_HELD6, cte] if output == "inserted" else [cte]
            outputs.append(output)
    sql = "WITH " + ", ".join(parts)
    if len(outputs) == 1:  # the journal reads its one part directly: a scan fewer
        sql += event_ctes(outputs[0], "event")
    else:
        sql += ", changed AS (\n    " + "\n    UNION ALL ".join(
            f"SELECT {LEASE_COLUMNS}, event FROM {o}" for o in outputs) + "\n)"
        sql += event_ctes("changed", "event")
    return sql + "\n" + "\nUNION ALL ".join(_OUTCOMES6[o] for o in outputs)


# Columns that only one kind of op reads: sent only when an op of that kind is in the batch
# (a Decline's probation, _ENDED6; a superseding grant, _SUPERSEDE6), else NULL.
_ONLY_FOR: dict[str, Callable[[Op6], bool]] = {
    "seconds": lambda op: op.kind == OpKind.DECLINE,
    "supersede": attrgetter("supersede"),
}


# A new lease's id, made here rather than by the column's default (uuid_generate_v7, 0001):
# the default draws its random part through OpenSSL once a row and goes through hex text
# and numeric arithmetic, ~20,000 of a DHCPv6 grant's ~150,000 backend instructions
# (callgrind); here one os.urandom per batch and a string slice an op. Same form: RFC 9562
# §5.7, 48-bit Unix milliseconds, version 7, 74 random bits, variant 10.
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def _v7_ids(count: int) -> list[str]:
    """``count`` new UUIDv7s as 32 hex digits (what uuid's input reads)."""
    ms = f"{time.time_ns() // 1_000_000:012x}"
    h = os.urandom(10 * count).hex()  # 20 hex digits an id: 3 + 1 (the variant's two bits) + 15
    return [f"{ms}7{h[k:k + 3]}{_VARIANT[h[k + 3]]}{h[k + 4:k + 19]}"
            for k in range(0, 20 * count, 20)]


def _v6_arrays(ops: list[Op6]) -> list[list[Any] | None]:
    """One array per field for ``unnest``, then the new leases' ids; a field no op of the
    batch has (no relay sent option 38, say) goes as NULL, which unnest pads: asyncpg need
    not look at each element."""
    out: list[list[Any] | None] = []
    for name in _V6_FIELDS:
        if name == "kind":
            out.append([int(op.kind) for op in ops])
        elif name == "ip":
            out.append([op.ip.packed.hex(":", 2) for op in ops])  # eight hex groups
        elif name in _ONLY_FOR and not any(map(_ONLY_FOR[name], ops)):
            out.append(None)
        else:
            column = [getattr(op, name) for op in ops]
            out.append(None if column.count(None) == len(column) else column)
    inserts = any(op.kind == OpKind.INSERT for op in ops)
    out.append(_v7_ids(len(ops)) if inserts else None)  # one for every op: unnest's rows align
    return out


def _inserted_op(ops: list[Op6], candidates: list[int], ip: str) -> int:
    """Which op an inserted row answers: the one of its subnet and client key; of several
    (one IA asked twice in a batch), the last at its address (str() only then: it is slow)."""
    if len(candidates) == 1:
        return candidates[0]
    return max(i for i in candidates if str(ops[i].ip) == ip)


async def _run6(conn: asyncpg.Connection, ops: list[Op6], args: list[Any],
                trusting: bool) -> list[asyncpg.Record]:
    """The batch's statement (after _SUPERSEDE6 when an op asks for it), its outcome rows."""
    kinds = {op.kind for op in ops}
    shape = (bool(kinds & {OpKind.RELEASE, OpKind.DECLINE}), OpKind.ACK in kinds,
             OpKind.INSERT in kinds)
    if any(op.supersede for op in ops):  # rare: two statements, one transaction, careful
        async with conn.transaction():
            await conn.fetchval(_SUPERSEDE6, *args)
            rows: list[asyncpg.Record] = await conn.fetch(_commit6_sql(*shape), *args)
            return rows
    # One statement, its own transaction: one round trip for the batch.
    if trusting and shape[2]:
        try:
            rows = await conn.fetch(_commit6_sql(*shape, careful=False), *args)
            return rows
        except asyncpg.UniqueViolationError:  # nothing of the statement was written
            pass
    rows = await conn.fetch(_commit6_sql(*shape), *args)
    return rows


async def commit6(conn: asyncpg.Connection, groups: list[Ops6], trusting: bool = True) -> bool:
    """Apply a batch of DHCPv6 messages' changes in one transaction; fills each op's outcome.
    True when a unique index refused an insert (another node, or a binding this node's
    cache did not know, holds the address or the IA). ``trusting`` is the committer's
    (see leasestore4._main): inserts go without ``ON CONFLICT`` first. Not inside a
    transaction (a refused trusting insert would abort it)."""
    ops = [op for group in groups for op in group.ops]
    if not ops:
        return False
    args = _v6_arrays(ops)
    rows = await _run6(conn, ops, args, trusting)
    inserts: dict[tuple[uuid.UUID, bytes], list[int]] = {}
    for i, op in enumerate(ops):
        if op.kind == OpKind.INSERT:
            inserts.setdefault((op.subnet_id, op.client_key), []).append(i)
    for i, lease_id, event, expires, ip, client_key, subnet_id in rows:
        if i is None:
            i = _inserted_op(ops, inserts[(subnet_id, client_key)], ip)
        op = ops[i]
        op.ok = True
        op.lease_id = lease_id
        op.event = event
        op.expires = expires
    return any(not op.ok for op in ops if op.kind == OpKind.INSERT)


# The shapes a storm of new clients commits: grants (trusting), renewals, both.
WARM_SHAPES6 = ((False, False, True), (False, True, False), (False, True, True))


async def warm6(conn: asyncpg.Connection) -> None:
    """Plan the common batch statements with no rows (every array NULL: nothing is
    written), as ``warm`` does for DHCPv4: else a new session's first batch pays for it."""
    for shape in WARM_SHAPES6:
        await conn.fetch(_commit6_sql(*shape, careful=False),
                         *([None] * (len(_V6_FIELDS) + 1)))


_LIVE6 = """SELECT lease_id, subnet_id, host(ip) AS ip, prefix_length, state, duid, iaid,
                   ia_type, date_part('epoch', expires_at) AS expires
            FROM leases
            WHERE ia_type IS NOT NULL AND state IN ('active', 'declined')"""


async def load_live6(conn: asyncpg.Connection) -> list[tuple[Any, ...]]:
    """Every live DHCPv6 binding as (lease_id, subnet_id, ip, prefix_length, state, duid
    (colon hex), iaid, ia_type, expires)."""
    return [tuple(r) for r in await conn.fetch(_LIVE6)]


# Each half through an index: leases_ip, and leases_live_client (its predicate, offered or
# active, holds for the active rows asked; the subnets are few). No index has the DUID: the
# former ``duid = ANY(…) OR ip = ANY(…)`` read the whole table, ~13 ms a refusal at 15,000
# leases (bench_dhcp6 at 3,000/s), growing with the table.
_SOME6 = (_LIVE6 + " AND ip = ANY($2::inet[])\nUNION\n" + _LIVE6.replace(
    "state IN ('active', 'declined')", "state = 'active'")
    + " AND client_key = ANY($1::bytea[])"
    " AND subnet_id = ANY(ARRAY(SELECT id FROM subnets WHERE family(cidr) = 6))")


async def load_some6(conn: asyncpg.Connection, client_keys: list[bytes],
                     ips: list[ipaddress.IPv6Address]) -> list[tuple[Any, ...]]:
    """The live DHCPv6 bindings at these addresses and the active ones of these IAs
    (``client_key6``, in any subnet), as ``load_live6``: what a DHCPv6 server looks at again
    after the database refused its picture of them."""
    return [tuple(r) for r in await conn.fetch(_SOME6, client_keys, ips)]


async def server_duid6(conn: asyncpg.Connection, candidate: bytes) -> bytes:
    """The appliance's DHCPv6 server DUID: the one stored (migration 0017), else
    ``candidate``, stored now. Two nodes starting at once agree: the first insert wins."""
    await conn.execute(
        "INSERT INTO dhcp6_server (duid) VALUES ($1) ON CONFLICT (singleton) DO NOTHING",
        candidate)
    stored: bytes = await conn.fetchval("SELECT duid FROM dhcp6_server")
    return stored
