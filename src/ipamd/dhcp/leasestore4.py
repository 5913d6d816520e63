"""DHCPv4 leases in group commit: the DHCP server's committer's batch in one statement.

``commit`` grants (at the Ack), renews, releases and declines a whole batch of transactions
in one ``unnest`` statement. An Offer writes nothing: the address is held in the offering
node's memory (``leasecache.OfferHolds``). Part of the lease store: ``leasestore`` is its one
name (docs/DEVELOPING.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any

import asyncpg

from ipamd.core.lease_events import event_ctes
from ipamd.dhcp.leasetable import LEASE_COLUMNS, ZERO, OpKind


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
        f"SELECT {LEASE_COLUMNS}, event FROM {o}" for o in outputs) + "\n)"
    sql += event_ctes("changed", "event")
    sql += "\n" + "\nUNION ALL ".join(_OUTCOMES[o] for o in outputs)
    return sql.replace("ZERO", ZERO)


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
      AND l.state = 'offered' AND l.ip <> {ZERO} + r.ip
    RETURNING r.i, l.lease_id
), ended AS (
    UPDATE leases l SET state = 'released', expires_at = now(), sweep_at = now(),
        updated_at = now()
    FROM r
    WHERE l.subnet_id = r.subnet_id AND l.client_key = r.client_key
      AND l.state = 'active' AND l.ip <> {ZERO} + r.ip
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
SELECT r.i, l.lease_id, l.subnet_id, l.ip - {ZERO} AS ip, l.state, l.client_key,
       date_part('epoch', l.expires_at) AS expires
FROM r JOIN leases l ON l.subnet_id = r.subnet_id AND l.ip = {ZERO} + r.ip
    AND l.state IN ('offered', 'active', 'declined')
UNION
SELECT r.i, l.lease_id, l.subnet_id, l.ip - {ZERO}, l.state, l.client_key,
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
        f"""SELECT lease_id, subnet_id, ip - {ZERO} AS ip, state, client_key,
                   date_part('epoch', expires_at) AS expires
            FROM leases WHERE state IN ('offered', 'active', 'declined') AND family(ip) = 4"""
    )
    return [tuple(r) for r in rows]
