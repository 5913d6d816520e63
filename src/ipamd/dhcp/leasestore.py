"""The lease store: every lease state change goes through this module, whoever asks.

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
import uuid
from collections.abc import Callable
from enum import IntEnum
from functools import cache
from operator import attrgetter
from typing import Any

import asyncpg

from ipamd.core.lease_events import JOURNAL_CHANNEL, event_ctes


class OpKind(IntEnum):
    """What an ``Op`` asks of the store (not a DHCP message type: see options.OFFER/ACK)."""

    INSERT = 1  # a new lease: active (the Ack of an Offer) or declined (an Offer declined)
    ACK = 3  # the client's active lease at that address renewed (or an older offered row)
    RELEASE = 4  # active -> released (client Release)
    DECLINE = 5  # offered/active -> declined for the probation period


_ZERO = "'0.0.0.0'::inet"


class Op:
    """One DHCP transaction's database work and, after commit, its outcome."""

    __slots__ = (
        "circuit_id",
        "client_id",
        "client_key",
        "duid",
        "event",
        "expires",
        "fqdn",
        "giaddr",
        "hostname",
        "ip",
        "kind",
        "lease_id",
        "mac",
        "ok",
        "refreshed",
        "remote_id",
        "seconds",
        "state",
        "subnet_id",
        "supersede",
        "superseded",
    )

    def __init__(
        self, kind: OpKind, subnet_id: uuid.UUID, ip: int | None, client_key: bytes, seconds: int,
        *, mac: str | None = None, client_id: bytes | None = None, duid: str | None = None,
        hostname: str | None = None, fqdn: str | None = None, circuit_id: bytes | None = None,
        remote_id: bytes | None = None, giaddr: int | None = None,
        supersede: bool = False, lease_id: uuid.UUID | None = None, state: str = "active",
    ) -> None:
        self.kind = kind
        self.subnet_id = subnet_id
        self.ip = ip
        self.client_key = client_key
        self.seconds = seconds
        self.mac = mac
        self.client_id = client_id
        self.duid = duid
        self.hostname = hostname
        self.fqdn = fqdn
        self.circuit_id = circuit_id
        self.remote_id = remote_id
        self.giaddr = giaddr
        self.supersede = supersede
        self.lease_id = lease_id
        self.state = state
        # Outcome.
        self.ok = False
        self.expires = 0.0
        self.event: str | None = None
        # The client's previous lease ended by ``supersede``: (lease_id, was it active).
        self.superseded: tuple[uuid.UUID, bool] | None = None
        # Live leases that refused an insert: (lease_id, subnet_id, ip, state, key, expires).
        self.refreshed: list[tuple[Any, ...]] = []

    def reset(self) -> None:
        """Forget a rolled-back outcome."""
        self.ok = False
        self.expires = 0.0
        self.event = None
        self.superseded = None
        self.refreshed = []
        self.lease_id = None

    def __repr__(self) -> str:
        return f"Op(kind={self.kind}, ip={self.ip}, ok={self.ok}, event={self.event})"


_LEASE_COLUMNS = ("lease_id, subnet_id, ip, state, mac, client_id, duid, hostname, fqdn, "
                  "circuit_id, remote_id, giaddr, starts_at, expires_at")


# Every kind of change of a batch in one statement: one round trip and, outside a
# transaction, one commit (one WAL flush) for the lot. The CTEs touch disjoint leases
# (one op per client per batch, new rows only for new addresses), so they need not see
# each other's effects. Outcome rows: (kind, i, lease_id, event, expires, and for inserts
# the row's ip, client_key and subnet_id, by which it is matched to its op).
#
# The statement holds only the parts the batch needs (``_main_sql``): a batch of renewals
# has no insert, a batch of grants no update. Executing a part with no rows still costs its
# plan nodes and its statement triggers (about half of the statement at light load,
# measured), and each shape is prepared once per connection. A part's rows come from its
# parameters: one array per column (``unnest``) for a batch, or plain values for a lone
# change — at light load nearly every batch is one op. Interleaved lone commits, 1-2 ms
# apart, took ~10 % less wall per grant and ~35 % less per renewal in the one-row form.
_END = """end_r AS (
    {rows}
), ended AS (
    -- Release: the client's active lease. Decline: its offered or active lease.
    UPDATE leases l SET state = r.new_state, updated_at = now(),
        expires_at = CASE WHEN r.new_state = 'declined'
                          THEN now() + make_interval(secs => r.seconds) ELSE now() END,
        sweep_at = CASE WHEN r.new_state = 'declined'
                        THEN now() + make_interval(secs => r.seconds) ELSE now() END
    FROM end_r r
    WHERE l.subnet_id = r.subnet_id AND l.ip = ZERO + r.ip AND l.client_key = r.client_key
      AND (l.state = 'active' OR (l.state = 'offered' AND r.new_state = 'declined'))
    RETURNING r.i, l.*, r.new_state AS event
)"""
_ACK = """ack_r AS (
    {rows}
), acked AS (
    -- ``old`` is the row as it was before this statement: offered means a grant.
    -- sweep_at stays (unless the lease got shorter), so that a renewal is a heap-only
    -- update: no index entry rewritten (migration 0014).
    UPDATE leases l SET
        state = 'active',
        starts_at = CASE WHEN old.state = 'offered' THEN now() ELSE l.starts_at END,
        expires_at = now() + make_interval(secs => r.seconds),
        sweep_at = least(l.sweep_at, now() + make_interval(secs => r.seconds)),
        hostname = coalesce(r.hostname, l.hostname), fqdn = coalesce(r.fqdn, l.fqdn),
        circuit_id = r.circuit_id, remote_id = r.remote_id, giaddr = ZERO + r.giaddr,
        mac = coalesce(r.mac::macaddr, l.mac), client_id = coalesce(r.client_id, l.client_id),
        duid = coalesce(r.duid, l.duid), updated_at = now()
    FROM ack_r r, leases old
    WHERE l.subnet_id = r.subnet_id AND l.ip = ZERO + r.ip AND l.client_key = r.client_key
      AND l.state IN ('offered', 'active') AND old.lease_id = l.lease_id
    RETURNING r.i, l.*,
        CASE WHEN old.state = 'offered' THEN 'granted' ELSE 'renewed' END AS event
)"""
_INSERT = """ins_r AS (
    {rows}
), ins_subnets AS (
    -- The batch's subnets, held against deletion until this commits: what a foreign key
    -- would check for every row, once per subnet (migration 0013). A lease of a subnet
    -- deleted meanwhile is refused like any other.
    -- (From the parameter, not from ins_r: a second reader would make ins_r materialised.)
    SELECT id FROM subnets WHERE id = {subnets} FOR KEY SHARE
), inserted AS (
    -- The unique indexes on live leases judge. Trusting (see _main): a refused row fails
    -- the statement. Careful: it is simply not returned. (An Offer wrote nothing: another
    -- node may have granted the address since.)
    INSERT INTO leases (subnet_id, ip, state, client_key, mac, client_id, duid, hostname, fqdn,
                        circuit_id, remote_id, giaddr, starts_at, expires_at, sweep_at)
    SELECT subnet_id, ZERO + ip, state, client_key, mac::macaddr, client_id, duid,
           hostname, fqdn, circuit_id, remote_id, ZERO + giaddr, now(),
           now() + make_interval(secs => seconds), now() + make_interval(secs => seconds)
    FROM ins_r WHERE subnet_id = ANY (ARRAY(SELECT id FROM ins_subnets))  -- no join: a filter
    ORDER BY subnet_id, ip
    {conflict}
    RETURNING *, CASE WHEN state = 'active' THEN 'granted' ELSE 'declined' END AS event
)"""
# Inserted rows are matched to their ops by (subnet, address, client) in Python: joining
# them back to ins_r in SQL is a nested loop over two CTEs, quadratic in the batch.
_OUTCOMES = {
    "ended": f"SELECT {OpKind.RELEASE:d} AS kind, i, lease_id, event, "
             "date_part('epoch', expires_at) AS expires, NULL::int8 AS ip, "
             "NULL::bytea AS client_key, NULL::uuid AS subnet_id FROM ended",
    "acked": f"SELECT {OpKind.ACK:d}, i, lease_id, event, date_part('epoch', expires_at), "
             "NULL::int8, NULL::bytea, NULL::uuid FROM acked",
    "inserted": f"SELECT {OpKind.INSERT:d}, NULL::int4, lease_id, event, "
                "date_part('epoch', expires_at), ip - ZERO, client_key, subnet_id FROM inserted",
}
# A part's row columns (after ``i``, the op's index in the batch) with their types; the Op
# attribute of each is its name, except the ends' ``new_state`` (see _getter).
_END_COLUMNS = (("subnet_id", "uuid"), ("ip", "int8"), ("client_key", "bytea"),
                ("new_state", "text"), ("seconds", "int4"))
_ACK_COLUMNS = (("subnet_id", "uuid"), ("ip", "int8"), ("client_key", "bytea"),
                ("seconds", "int4"), ("hostname", "text"), ("fqdn", "text"),
                ("circuit_id", "bytea"), ("remote_id", "bytea"), ("giaddr", "int8"),
                ("mac", "text"), ("client_id", "bytea"), ("duid", "text"))
_INSERT_COLUMNS = (("subnet_id", "uuid"), ("ip", "int8"), ("client_key", "bytea"),
                   ("state", "text"), ("seconds", "int4"), ("hostname", "text"),
                   ("fqdn", "text"), ("circuit_id", "bytea"), ("remote_id", "bytea"),
                   ("giaddr", "int8"), ("mac", "text"), ("client_id", "bytea"),
                   ("duid", "text"))
# (CTE text, its row columns, its output CTE) per part, in statement order.
_PARTS = ((_END, _END_COLUMNS, "ended"), (_ACK, _ACK_COLUMNS, "acked"),
          (_INSERT, _INSERT_COLUMNS, "inserted"))


def _rows_sql(columns: tuple[tuple[str, str], ...], first: int, lone: bool) -> str:
    """A part's rows from parameters ``$first``…: arrays for ``unnest``, or one row."""
    typed = (("i", "int4"), *columns)
    if lone:
        return "SELECT " + ", ".join(f"${first + k}::{kind} AS {name}"
                                     for k, (name, kind) in enumerate(typed))
    return ("SELECT * FROM unnest(" + ", ".join(f"${first + k}::{kind}[]"
                                                for k, (_, kind) in enumerate(typed))
            + ") AS r(" + ", ".join(name for name, _ in typed) + ")")


@cache
def _main_sql(present: tuple[bool, bool, bool], lone: bool = False, careful: bool = True) -> str:
    """The statement for the parts present (ends, acks, inserts), with the journal rows of
    the leases it changes (every change is an event). ``lone``: one op, in one part.
    ``careful``: an insert a unique index refuses is skipped (``ON CONFLICT DO NOTHING``);
    else it fails the statement (see _main)."""
    ctes: list[str] = []
    outputs: list[str] = []
    param = 1
    for (text, columns, output), wanted in zip(_PARTS, present, strict=True):
        if not wanted:
            continue
        # The part's subnet_id parameter (after ``i``), for the insert's subnet lock.
        subnets = f"${param + 1}::uuid" if lone else f"ANY(${param + 1}::uuid[])"
        ctes.append(text.format(rows=_rows_sql(columns, param, lone), subnets=subnets,
                                conflict="ON CONFLICT DO NOTHING" if careful else ""))
        param += len(columns) + 1
        outputs.append(output)
    sql = "WITH " + ",\n".join(ctes)
    sql += ", changed AS (\n" + "\n    UNION ALL ".join(
        f"SELECT {_LEASE_COLUMNS}, event FROM {o}" for o in outputs) + "\n)"
    sql += event_ctes("changed", "event")
    sql += "\n" + "\nUNION ALL ".join(_OUTCOMES[o] for o in outputs)
    return sql.replace("ZERO", _ZERO)


# Before a new lease for a client whose address changed (a reservation appeared, its
# address left the pools): end the client's other live lease. An ``offered`` row (written
# by an earlier version) is deleted — it never was a lease, so it leaves no history.
_SUPERSEDE = f"""
WITH r AS (
    SELECT * FROM unnest($1::int4[], $2::uuid[], $3::int8[], $4::bytea[])
        AS r(i, subnet_id, ip, client_key)
), gone AS (
    DELETE FROM leases l USING r
    WHERE l.subnet_id = r.subnet_id AND l.client_key = r.client_key
      AND l.state = 'offered' AND l.ip <> {_ZERO} + r.ip
    RETURNING r.i, l.lease_id
), ended AS (
    UPDATE leases l SET state = 'released', expires_at = now(), sweep_at = now(),
        updated_at = now()
    FROM r
    WHERE l.subnet_id = r.subnet_id AND l.client_key = r.client_key
      AND l.state = 'active' AND l.ip <> {_ZERO} + r.ip
    RETURNING r.i, l.*, 'released'::text AS event
){event_ctes("ended", "event")}
SELECT i, lease_id, true AS was_active FROM ended
UNION ALL SELECT i, lease_id, false FROM gone
"""

# The live leases standing in the way of refused inserts (same address or same client):
# two lookups, each on its unique index (one condition with OR could use neither).
_BLOCKERS = f"""
WITH r AS (
    SELECT * FROM unnest($1::int4[], $2::uuid[], $3::int8[], $4::bytea[])
        AS r(i, subnet_id, ip, client_key)
)
SELECT r.i, l.lease_id, l.subnet_id, l.ip - {_ZERO} AS ip, l.state, l.client_key,
       date_part('epoch', l.expires_at) AS expires
FROM r JOIN leases l ON l.subnet_id = r.subnet_id AND l.ip = {_ZERO} + r.ip
    AND l.state IN ('offered', 'active', 'declined')
UNION
SELECT r.i, l.lease_id, l.subnet_id, l.ip - {_ZERO}, l.state, l.client_key,
       date_part('epoch', l.expires_at)
FROM r JOIN leases l ON l.subnet_id = r.subnet_id AND l.client_key = r.client_key
    AND l.state IN ('offered', 'active')
"""


def _end_state(op: Op) -> str:
    return "released" if op.kind == OpKind.RELEASE else "declined"


def _getter(name: str) -> Callable[[Op], Any]:
    return _end_state if name == "new_state" else attrgetter(name)


def _columns(ops: list[tuple[int, Op]], names: tuple[str, ...]) -> list[list[Any]]:
    """One array per field (plus the op's index first), for ``unnest``."""
    out: list[list[Any]] = [[i for i, _ in ops]]
    for name in names:
        get = _getter(name)
        out.append([get(op) for _, op in ops])
    return out


_END_FIELDS = tuple(name for name, _ in _END_COLUMNS)
_ACK_FIELDS = tuple(name for name, _ in _ACK_COLUMNS)
_INSERT_FIELDS = tuple(name for name, _ in _INSERT_COLUMNS)


async def _main(conn: asyncpg.Connection, ops: list[Op], trusting: bool) -> None:
    """Run the batch's statement.

    ``trusting``: the inserts go without ``ON CONFLICT`` first. The engine picks addresses
    no lease of this node's cache holds, so a refusal means another node (or a lease this
    node did not know) got there first: rare, and then the whole statement fails and runs
    again careful. Speculative insertion costs every row of the careful form a lock, a
    probe of each unique index and a WAL record more: 1.3-3.8 µs of the 26-29 µs of
    PostgreSQL CPU a grant (bench_leasestore, batches of 20; within the noise in the
    server). Must not run inside a transaction (the failed statement would abort it).
    """
    ends: list[tuple[int, Op]] = []
    acks: list[tuple[int, Op]] = []
    inserts: list[tuple[int, Op]] = []
    for i, op in enumerate(ops):
        kind = op.kind
        if kind == OpKind.INSERT:
            inserts.append((i, op))
        elif kind == OpKind.ACK:
            acks.append((i, op))
        else:
            ends.append((i, op))
    args: list[Any] = []
    for part, names in ((ends, _END_FIELDS), (acks, _ACK_FIELDS), (inserts, _INSERT_FIELDS)):
        if part:
            columns = _columns(part, names)
            if len(ops) == 1:  # a lone op: its values themselves (see _rows_sql)
                args += [column[0] for column in columns]
            else:
                # A column with no value in the batch (say, no relay sent option 82) goes as
                # NULL: unnest pads it with NULLs, and asyncpg need not look at each element.
                args += [None if column.count(None) == len(column) else column
                         for column in columns]
    present = (bool(ends), bool(acks), bool(inserts))
    lone = len(ops) == 1
    if trusting and inserts:
        try:
            rows = await conn.fetch(_main_sql(present, lone, careful=False), *args)
        except asyncpg.UniqueViolationError:  # nothing of the statement was written
            rows = await conn.fetch(_main_sql(present, lone), *args)
    else:
        rows = await conn.fetch(_main_sql(present, lone), *args)
    by_key = {(op.subnet_id, op.ip, op.client_key): i for i, op in inserts} if inserts else {}
    for _kind, i, lease_id, event, expires, ip, client_key, subnet_id in rows:
        if i is None:
            i = by_key[(subnet_id, ip, client_key)]
        op = ops[i]
        op.ok = True
        op.expires = expires
        op.lease_id = lease_id
        op.event = event


async def commit(conn: asyncpg.Connection, ops: list[Op], trusting: bool = True) -> bool:
    """Apply a batch; fills each op's outcome. Not inside a transaction: see _main_sql.
    True when a unique index refused an insert of it (the caller may stop ``trusting`` for
    a while: see _main).

    The rare cases take more statements: a supersede runs first, in one transaction with
    the rest (careful: a failed statement would abort it); refused inserts fetch the
    leases that refused them.
    """
    supersedes = [(i, op) for i, op in enumerate(ops) if op.supersede]
    if supersedes:
        async with conn.transaction():
            cols = _columns(supersedes, ("subnet_id", "ip", "client_key"))
            for i, lease_id, was_active in await conn.fetch(_SUPERSEDE, *cols):
                ops[i].superseded = (lease_id, was_active)
            await _main(conn, ops, trusting=False)
    else:
        await _main(conn, ops, trusting)
    refused = [(i, op) for i, op in enumerate(ops) if not op.ok and op.kind == OpKind.INSERT]
    if refused:
        for row in await conn.fetch(_BLOCKERS, *_columns(refused, ("subnet_id", "ip",
                                                                     "client_key"))):
            ops[row["i"]].refreshed.append(
                (row["lease_id"], row["subnet_id"], row["ip"], row["state"],
                 row["client_key"], row["expires"])
            )
    return bool(refused)


# The batch statement's shapes a storm commits: inserts, acks, both (trusting: see _main).
WARM_SHAPES = ((False, False, True), (False, True, False), (False, True, True))


async def warm(conn: asyncpg.Connection) -> None:
    """Run the common batch statements once with no rows (every array NULL: unnest yields
    none, so nothing is written), so that a new commit session has loaded the catalog and
    planned them before its first batch. Else that batch pays for it: ~11 ms for a batch of
    20 grants and ~2 ms for 20 renewals, against ~1.3 and ~0.8 once warm. At the start of a
    storm of 10,000 DORA/s the Requests that queued meanwhile went in as batches of 60-230,
    and their Acks left in bursts that overflowed the client's socket (lab, 2026-11-29)."""
    for present in WARM_SHAPES:
        params = sum(len(columns) + 1
                     for (_text, columns, _output), wanted in zip(_PARTS, present, strict=True)
                     if wanted)
        await conn.fetch(_main_sql(present, careful=False), *([None] * params))


async def load_live(conn: asyncpg.Connection) -> list[tuple[Any, ...]]:
    """Every live DHCPv4 lease as (lease_id, subnet_id, ip, state, client_key, expires).
    DHCPv6 bindings share the table (migration 0017): an IPv6 address is no int8, and
    ``inet - inet`` of two families is an error, so they are left out here (``load_live6``)."""
    rows = await conn.fetch(
        f"""SELECT lease_id, subnet_id, ip - {_ZERO} AS ip, state, client_key,
                   date_part('epoch', expires_at) AS expires
            FROM leases WHERE state IN ('offered', 'active', 'declined') AND family(ip) = 4"""
    )
    return [tuple(r) for r in rows]


# The expiry worker's change, any node: ``FOR UPDATE SKIP LOCKED`` lets every node run it.
# A lease comes up at its sweep_at (migration 0014): ended if its time is up, else (renewed
# since) it comes up again at its expiry.
_EXPIRE = f"""
WITH due AS (
    SELECT lease_id, state, expires_at <= now() AS over FROM leases
    WHERE state IN ('offered', 'active', 'declined') AND sweep_at <= now()
    ORDER BY sweep_at LIMIT $1
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM leases l USING due
    WHERE l.lease_id = due.lease_id AND due.over AND due.state = 'offered'
    RETURNING l.lease_id, l.subnet_id
), u AS (
    UPDATE leases l SET state = 'expired', updated_at = now()
    FROM due WHERE l.lease_id = due.lease_id AND due.over AND due.state <> 'offered'
    RETURNING l.*, 'expired'::text AS event
), later AS (
    UPDATE leases l SET sweep_at = l.expires_at
    FROM due WHERE l.lease_id = due.lease_id AND NOT due.over
    RETURNING l.lease_id
){event_ctes("u", "event")}
SELECT lease_id, subnet_id, event, true AS ended FROM u
UNION ALL SELECT lease_id, subnet_id, NULL, true FROM gone
UNION ALL SELECT lease_id, NULL, NULL, false FROM later
"""


async def expire_batch(
    conn: asyncpg.Connection, limit: int
) -> tuple[list[tuple[uuid.UUID, uuid.UUID, Any]], int]:
    """One batch, in the caller's transaction: ((lease_id, subnet_id, event or None) per
    lease ended, how many leases came up). Fewer than ``limit`` came up: nothing else is due.

    active -> expired and declined -> expired (probation over), each with its ``expired``
    event; a lapsed ``offered`` row (an Offer hold an earlier version wrote) is deleted: it
    never was a lease, so it leaves no history. A lease renewed since it was last looked at
    comes up again at its expiry.
    """
    rows = await conn.fetch(_EXPIRE, limit)
    return [(r["lease_id"], r["subnet_id"], r["event"]) for r in rows if r["ended"]], len(rows)


# $2: whether this is a lease event. An ``offered`` row (an earlier version's Offer hold)
# was never granted: ending it leaves no history and no lease.released. The API runs it,
# maybe in a worker process: the NOTIFY (sent at commit) wakes the main process's deriver.
_FORCE_RELEASE = f"""
WITH u AS (
    UPDATE leases SET state = 'released', expires_at = least(expires_at, now()),
        sweep_at = least(sweep_at, now()), updated_at = now()
    WHERE lease_id = $1 AND state IN ('offered', 'active', 'declined')
    RETURNING *, CASE WHEN $2 THEN 'released' END AS event
){event_ctes("u", "event")}
SELECT lease_id, pg_notify('{JOURNAL_CHANNEL}', '') FROM u
"""


async def force_release(conn: asyncpg.Connection, lease_id: uuid.UUID, granted: bool) -> None:
    """An operator ends a live lease (the caller holds it FOR UPDATE, in its transaction).

    ``granted``: the lease was more than an Offer hold, so its end is a ``released`` event.
    """
    await conn.fetchval(_FORCE_RELEASE, lease_id, granted)


async def drop_ended(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> None:
    """A subnet being deleted (no live lease left): its ended leases go, lease_events keeps
    their history, so they must not pin the subnet."""
    await conn.execute("DELETE FROM leases WHERE subnet_id = $1", subnet_id)


# --------------------------------------------------------------------------- DHCPv6 bindings
# The DHCPv6 server's bindings are leases of the same table, states, journal and expiry
# (migration 0017): one row per binding of a client's IA, an address (IA_NA, length 128)
# or a delegated prefix (IA_PD, ``ip`` its first address). The DHCPv6 committer writes a
# batch of messages' changes in one transaction: the client's other binding of an IA being
# granted anew is released first (a reservation appeared: ``_SUPERSEDE6``), then one
# statement ends, renews and inserts, each change with its journal row. Addresses go as
# ``inet`` (an int8 cannot hold 128 bits); v6 traffic is not yet DHCPv4's storm, so the
# statement has one form (careful: ``ON CONFLICT DO NOTHING``), not DHCPv4's variants.

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


# Addresses go as text (_inet_text), cast here: the driver's inet encoder takes an
# IPv6Address through ipaddress.ip_address (two str() and a failed IPv4 parse), the cast in
# the server is C. The commit's Python CPU per grant: 48 -> 13 µs (bench_dhcp6_engine).
_V6_ROWS = """r AS (
    SELECT i, kind, subnet_id, ip::inet AS ip, prefix_length, client_key, duid, iaid, ia_type,
           preferred, valid, seconds, giaddr::inet AS giaddr, remote_id, subscriber_id, mac,
           supersede, fqdn
    FROM unnest($1::int4[], $2::int2[], $3::uuid[], $4::text[], $5::int2[],
                $6::bytea[], $7::text[], $8::int8[], $9::text[], $10::int4[],
                $11::int4[], $12::int4[], $13::text[], $14::bytea[], $15::bytea[],
                $16::text[], $17::bool[], $18::text[])
        AS u(i, kind, subnet_id, ip, prefix_length, client_key, duid, iaid, ia_type,
             preferred, valid, seconds, giaddr, remote_id, subscriber_id, mac, supersede, fqdn)
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
    SELECT id FROM subnets WHERE id = ANY($3::uuid[]) FOR KEY SHARE
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
    INSERT INTO leases (subnet_id, ip, state, client_key, mac, duid, remote_id, subscriber_id,
                        giaddr, iaid, ia_type, prefix_length, preferred_lifetime,
                        valid_lifetime, fqdn, starts_at, expires_at, sweep_at)
    SELECT subnet_id, ip, 'active', client_key, mac::macaddr, duid, remote_id, subscriber_id,
           giaddr, iaid, ia_type, prefix_length, preferred, valid, fqdn, now(),
           now() + make_interval(secs => valid), now() + make_interval(secs => valid)
    FROM r WHERE kind = {OpKind.INSERT:d} AND subnet_id = ANY (ARRAY(SELECT id FROM held))
    ORDER BY subnet_id, ip
    ON CONFLICT DO NOTHING
    RETURNING *, 'granted'::text AS event
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
def _commit6_sql(ends: bool, renews: bool, inserts: bool) -> str:
    """The batch's statement: its parts (ends, renewals, inserts) and their journal rows."""
    parts = [_V6_ROWS]
    outputs = []
    for wanted, cte, output in ((ends, _ENDED6, "ended"), (renews, _RENEWED6, "renewed"),
                                (inserts, _INSERTED6, "inserted")):
        if wanted:
            parts += [_HELD6, cte] if output == "inserted" else [cte]
            outputs.append(output)
    sql = "WITH " + ", ".join(parts) + ", changed AS (\n    " + "\n    UNION ALL ".join(
        f"SELECT {_LEASE_COLUMNS}, event FROM {o}" for o in outputs) + "\n)"
    sql += event_ctes("changed", "event")
    return sql + "\n" + "\nUNION ALL ".join(_OUTCOMES6[o] for o in outputs)


def _inet_text(address: ipaddress.IPv6Address) -> str:
    """An IPv6 address as eight hex groups (what inet's input reads; see _V6_ROWS)."""
    h = address.packed.hex()
    return f"{h[:4]}:{h[4:8]}:{h[8:12]}:{h[12:16]}:{h[16:20]}:{h[20:24]}:{h[24:28]}:{h[28:]}"


def _v6_arrays(ops: list[Op6]) -> list[list[Any]]:
    out: list[list[Any]] = [list(range(len(ops)))]
    for name in _V6_FIELDS:
        get = attrgetter(name)
        if name == "kind":
            out.append([int(op.kind) for op in ops])
        elif name == "ip":
            out.append([_inet_text(op.ip) for op in ops])
        else:
            out.append([get(op) for op in ops])
    return out


def _inserted_op(ops: list[Op6], candidates: list[int], ip: str) -> int:
    """Which op an inserted row answers: the one of its subnet and client key; of several
    (one IA asked twice in a batch), the last at its address (str() only then: it is slow)."""
    if len(candidates) == 1:
        return candidates[0]
    return max(i for i in candidates if str(ops[i].ip) == ip)


async def commit6(conn: asyncpg.Connection, groups: list[Ops6], trusting: bool = True) -> bool:
    """Apply a batch of DHCPv6 messages' changes in one transaction; fills each op's outcome.
    True when a unique index refused an insert (another node, or a binding this node's
    cache did not know, holds the address or the IA). ``trusting`` is the committer's
    (see _main); this form is always careful."""
    ops = [op for group in groups for op in group.ops]
    if not ops:
        return False
    args = _v6_arrays(ops)
    kinds = set(args[1])
    sql = _commit6_sql(bool(kinds & {OpKind.RELEASE, OpKind.DECLINE}), OpKind.ACK in kinds,
                       OpKind.INSERT in kinds)
    if any(op.supersede for op in ops):  # rare: two statements, one transaction
        async with conn.transaction():
            await conn.fetchval(_SUPERSEDE6, *args)
            rows = await conn.fetch(sql, *args)
    else:  # one statement, its own transaction: one round trip for the batch
        rows = await conn.fetch(sql, *args)
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


async def warm6(_conn: asyncpg.Connection) -> None:
    """Nothing to warm: DHCPv6's one statement is planned at its first batch."""


_LIVE6 = """SELECT lease_id, subnet_id, host(ip) AS ip, prefix_length, state, duid, iaid,
                   ia_type, date_part('epoch', expires_at) AS expires
            FROM leases
            WHERE ia_type IS NOT NULL AND state IN ('active', 'declined')"""


async def load_live6(conn: asyncpg.Connection) -> list[tuple[Any, ...]]:
    """Every live DHCPv6 binding as (lease_id, subnet_id, ip, prefix_length, state, duid
    (colon hex), iaid, ia_type, expires)."""
    return [tuple(r) for r in await conn.fetch(_LIVE6)]


async def load_some6(conn: asyncpg.Connection, duids: list[str],
                     ips: list[ipaddress.IPv6Address]) -> list[tuple[Any, ...]]:
    """The live DHCPv6 bindings of these DUIDs or at these addresses (as ``load_live6``):
    what a DHCPv6 server looks at again after the database refused its picture of them."""
    rows = await conn.fetch(_LIVE6 + " AND (duid = ANY($1::text[]) OR ip = ANY($2::inet[]))",
                            duids, ips)
    return [tuple(r) for r in rows]


async def server_duid6(conn: asyncpg.Connection, candidate: bytes) -> bytes:
    """The appliance's DHCPv6 server DUID: the one stored (migration 0017), else
    ``candidate``, stored now. Two nodes starting at once agree: the first insert wins."""
    await conn.execute(
        "INSERT INTO dhcp6_server (duid) VALUES ($1) ON CONFLICT (singleton) DO NOTHING",
        candidate)
    stored: bytes = await conn.fetchval("SELECT duid FROM dhcp6_server")
    return stored
