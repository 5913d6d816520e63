"""GET /search: typed results from every table that can hold what the string means.

Ranking (lower is better), then type, then id — the keyset the cursor walks:

    0    reservation/assignment at the address, with the MAC or DUID; exact CIDR
    10   live lease at the address / with the MAC or DUID
    20   exact host name (reservation, assignment); 25 for a live lease
    30   host name prefix (reservation, assignment); 35 for a live lease
    +40  ended leases (released, expired) after live ones
    100+ prefixes and subnets that contain the CIDR or address, most specific first
    300+ prefixes and subnets inside the CIDR, largest first

Each branch is ordered and limited on its own (index scans, top-N), then merged.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.ipam import assignments, prefixes, reservations, subnets
from ipamd.ipam.occupancy import LIVE_SQL
from ipamd.ipam.search_terms import Terms

KINDS = ("reservation", "assignment", "lease", "subnet", "prefix")
KIND = {name: index for index, name in enumerate(KINDS)}

LEASE_COLUMNS = (
    "lease_id, subnet_id, ip, state, mac::text AS mac, duid, hostname, fqdn, starts_at, "
    "expires_at"
)

_BITS = "CASE family(cidr) WHEN 4 THEN 32 ELSE 128 END"
_LEASE_AGE = f"CASE WHEN {LIVE_SQL} THEN 0 ELSE 40 END"


def lease_public(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "lease_id": row["lease_id"],
        "subnet_id": row["subnet_id"],
        "ip": str(row["ip"]),
        "state": row["state"],
        "mac": row["mac"],
        "duid": row["duid"],
        "hostname": row["hostname"],
        "fqdn": row["fqdn"],
        "starts_at": row["starts_at"],
        "expires_at": row["expires_at"],
    }


class _Query:
    """Collects branches and their numbered parameters."""

    def __init__(self) -> None:
        self.params: list[Any] = []
        self.branches: list[str] = []

    def param(self, value: Any) -> str:
        self.params.append(value)
        return f"${len(self.params)}"

    def add(self, kind: str, score: str, match: str, table: str, ident: str, where: str) -> None:
        self.branches.append(
            f"SELECT {score} AS score, {KIND[kind]} AS kind, {ident} AS id, "
            f"{match} AS match FROM {table} WHERE {where}"
        )


def _branches(t: Terms) -> _Query:
    q = _Query()
    if t.network is not None:
        n = q.param(t.network)
        score = (f"CASE WHEN cidr = {n} THEN 0 WHEN cidr >> {n} THEN 100 + ({_BITS} - "
                 f"masklen(cidr)) ELSE 300 + masklen(cidr) END")
        match = f"CASE WHEN cidr = {n} THEN 'exact' WHEN cidr >> {n} THEN 'contains' " \
                f"ELSE 'within' END"
        where = f"(cidr >>= {n} OR cidr << {n})"
        q.add("prefix", score, match, "prefixes", "id", where)
        q.add("subnet", score, match, "subnets", "id", where)
    if t.address is not None:
        a = q.param(t.address)
        q.add("reservation", "0", "'address'", "reservations", "id", f"ip = {a}")
        q.add("assignment", "0", "'address'", "assignments", "id", f"ip = {a}")
        q.add("lease", f"10 + {_LEASE_AGE}", "'address'", "leases", "lease_id", f"ip = {a}")
        q.add("subnet", f"100 + ({_BITS} - masklen(cidr))", "'contains'", "subnets", "id",
              f"cidr >>= {a}")
        q.add("prefix", f"100 + ({_BITS} - masklen(cidr))", "'contains'", "prefixes", "id",
              f"cidr >>= {a}")
    if t.mac is not None:
        m = q.param(t.mac)
        q.add("reservation", "0", "'mac'", "reservations", "id", f"mac = {m}::macaddr")
        q.add("lease", f"10 + {_LEASE_AGE}", "'mac'", "leases", "lease_id",
              f"mac = {m}::macaddr")
    if t.duid is not None:
        d = q.param(t.duid_forms)
        q.add("reservation", "0", "'duid'", "reservations", "id", f"duid = ANY({d}::text[])")
        q.add("lease", f"10 + {_LEASE_AGE}", "'duid'", "leases", "lease_id",
              f"duid = ANY({d}::text[])")
    if t.hostname is not None:
        low, high = q.param(t.hostname), q.param(t.hostname_upper)

        def starts(column: str) -> str:
            return (f"(lower({column}) COLLATE \"C\" >= {low} AND "
                    f"lower({column}) COLLATE \"C\" < {high})")

        exact = f"CASE WHEN lower(hostname) = {low} THEN 20 ELSE 30 END"
        named = f"CASE WHEN lower(hostname) = {low} THEN 'hostname' ELSE 'hostname_prefix' END"
        q.add("reservation", exact, named, "reservations", "id", starts("hostname"))
        q.add("assignment", exact, named, "assignments", "id", starts("hostname"))
        lease_exact = f"lower(hostname) = {low} OR lower(fqdn) = {low}"
        q.add("lease", f"CASE WHEN {lease_exact} THEN 25 ELSE 35 END + {_LEASE_AGE}",
              f"CASE WHEN {lease_exact} THEN 'hostname' ELSE 'hostname_prefix' END",
              "leases", "lease_id", f"({starts('hostname')} OR {starts('fqdn')})")
    return q


async def _objects(conn: asyncpg.Connection, kind: str, ids: list[uuid.UUID]) -> dict[Any, Any]:
    if kind == "reservation":
        rows = await conn.fetch(
            f"SELECT {reservations.COLUMNS} FROM {reservations.FROM} WHERE r.id = ANY($1)", ids)
        return {r["id"]: reservations.public(r) for r in rows}
    if kind == "assignment":
        rows = await conn.fetch(
            f"SELECT {assignments.COLUMNS} FROM {assignments.FROM} WHERE a.id = ANY($1)", ids)
        return {r["id"]: assignments.public(r) for r in rows}
    if kind == "lease":
        rows = await conn.fetch(
            f"SELECT {LEASE_COLUMNS} FROM leases WHERE lease_id = ANY($1)", ids)
        return {r["lease_id"]: lease_public(r) for r in rows}
    if kind == "subnet":
        rows = await conn.fetch(f"SELECT {subnets.COLUMNS} FROM subnets WHERE id = ANY($1)", ids)
        return {r["id"]: subnets.public(r) for r in rows}
    rows = await conn.fetch(f"SELECT {prefixes.COLUMNS} FROM prefixes WHERE id = ANY($1)", ids)
    return {r["id"]: prefixes.public(r) for r in rows}


def _summary(kind: str, obj: dict[str, Any]) -> str:
    if kind in ("prefix", "subnet"):
        extra = obj.get("name") or obj.get("description") or ""
        return f"{kind} {obj['cidr']}" + (f" {extra}" if extra else "")
    if kind == "lease":
        who = obj["mac"] or obj["duid"] or ""
        return " ".join(x for x in ("lease", obj["ip"], obj["state"], who,
                                    obj["hostname"] or "") if x)
    who = obj.get("mac") or obj.get("duid") or ""
    return " ".join(x for x in (kind, obj["ip"], who, obj.get("hostname") or "") if x)


async def run(
    conn: asyncpg.Connection, terms: Terms, after: list[Any] | None, limit: int
) -> list[dict[str, Any]]:
    """Up to limit+1 ranked hits after the cursor (score, kind, id)."""
    q = _branches(terms)
    if not q.branches:
        return []
    keyset = "TRUE"
    if after is not None:
        s, k, i = q.param(after[0]), q.param(after[1]), q.param(after[2])
        keyset = f"(score, kind, id) > ({s}::int, {k}::int, {i}::uuid)"
    n = q.param(limit + 1)
    parts = [
        f"(SELECT * FROM ({branch}) b WHERE {keyset} ORDER BY score, kind, id LIMIT {n})"
        for branch in q.branches
    ]
    rows = await conn.fetch(
        f"SELECT score, kind, id, match FROM ({' UNION ALL '.join(parts)}) hits"
        f" ORDER BY score, kind, id LIMIT {n}",
        *q.params,
    )
    by_kind: dict[str, list[uuid.UUID]] = {}
    for row in rows:
        by_kind.setdefault(KINDS[row["kind"]], []).append(row["id"])
    objects = {kind: await _objects(conn, kind, ids) for kind, ids in by_kind.items()}
    hits = []
    for row in rows:
        kind = KINDS[row["kind"]]
        obj = objects[kind].get(row["id"])
        if obj is None:
            continue  # deleted between the two statements
        hits.append({
            "type": kind, "id": row["id"], "match": row["match"], "rank": row["score"],
            "summary": _summary(kind, obj), "object": obj,
            "_key": [row["score"], row["kind"], row["id"]],
        })
    return hits
