"""Delegation pools (RFC 8415 IA_PD): a prefix of an IPv6 subnet's tenant cut into delegated
prefixes of one length, with excludes and DUID reservations of delegated prefixes.

A pool ``2001:db8:100::/40`` with ``delegated_length`` 56 holds 2^16 delegated prefixes. An
exclude is a CIDR inside the pool no shorter than the pool and no longer than a delegated
prefix (it covers 2^(delegated_length - its length) of them); a reservation is one delegated
prefix (length = delegated_length) for one DUID. Sizes are counted by arithmetic, never by
listing prefixes (docs/api-ipam.md, "Delegation pools").
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict, invalid
from ipamd.core.rows import fetch_one
from ipamd.ipam import license, subnets
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.occupancy import LIVE_SQL
from ipamd.ipam.ranges import count_out
from ipamd.ipam.rows import inside_message, one, set_clause, tenant_for_create

Network = ipaddress.IPv6Network


def delegated_count(prefix: Network, length: int) -> int:
    """How many delegated prefixes of ``length`` the CIDR ``prefix`` holds."""
    return 1 << (length - prefix.prefixlen)


# --- the pools -----------------------------------------------------------------------------

POOL_COLUMNS = ("id, tenant_id, subnet_id, name, prefix, delegated_length, created_at, "
                "updated_at")
POOL_UPDATABLE = ("name", "prefix", "delegated_length")


def pool_public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    prefix = row["prefix"]
    return {
        "id": row["id"],
        "tenant_id": row["tenant_id"],
        "subnet_id": row["subnet_id"],
        "name": row["name"],
        "prefix": str(prefix),
        "delegated_length": row["delegated_length"],
        "size": count_out(delegated_count(prefix, row["delegated_length"]), 6),
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def _length_rules(prefix: Network, length: int) -> None:
    if prefix.version != 6:
        raise invalid("prefix", f"{prefix} is not IPv6: prefix delegation is DHCPv6 (IA_PD)")
    if not prefix.prefixlen < length <= 128:
        raise invalid("delegated_length", f"must be longer than the pool's /{prefix.prefixlen} "
                      "and at most 128 (e.g. 56 to cut a /48 into 256 /56s)")


async def _pool_plan(conn: asyncpg.Connection, subnet: asyncpg.Record, p: dict[str, Any],
                     own: uuid.UUID | None) -> None:
    """The pool against the plan: inside a prefix of the tenant, apart from its subnets
    (a delegated prefix is routed to the requesting router, not on a link) and from its
    other delegation pools."""
    prefix: Network = p["prefix"]
    tenant = subnet["tenant_id"]
    # FOR SHARE: a concurrent delete of that prefix waits, then sees this pool
    # (only_holder below).
    holder = await conn.fetchval(
        "SELECT id FROM prefixes WHERE tenant_id = $1 AND cidr >>= $2 LIMIT 1 FOR SHARE",
        tenant, prefix)
    if holder is None:
        raise invalid("prefix", f"{prefix} lies in none of the tenant's prefixes; create the "
                      "prefix (/prefixes) first")
    link = await conn.fetchrow(
        "SELECT id, cidr FROM subnets WHERE tenant_id = $1 AND cidr && $2 LIMIT 1",
        tenant, prefix)
    if link is not None:
        raise conflict(f"prefix: {prefix} overlaps the subnet {link['cidr']} (id {link['id']}); "
                       "delegated prefixes are routed to a requesting router, not on a link")
    other = await conn.fetchrow(
        """SELECT id, name, prefix FROM pd_pools
           WHERE tenant_id = $1 AND prefix && $2 AND id IS DISTINCT FROM $3 LIMIT 1""",
        tenant, prefix, own)
    if other is not None:
        raise conflict(f"prefix: {prefix} overlaps the delegation pool {other['name']!r} "
                       f"({other['prefix']}, id {other['id']})")


async def only_holder(conn: asyncpg.Connection, prefix: asyncpg.Record,
                      becomes: ipaddress.IPv4Network | Network | None) -> asyncpg.Record | None:
    """A delegation pool that ``prefix`` (a prefixes row) alone holds among its tenant's
    prefixes, and that it would no longer hold as ``becomes`` (None: deleted)."""
    return await conn.fetchrow(
        """SELECT d.id, d.name, d.prefix FROM pd_pools d
           WHERE d.tenant_id = $1 AND d.prefix <<= $2
             AND ($3::cidr IS NULL OR NOT d.prefix <<= $3)
             AND NOT EXISTS (SELECT 1 FROM prefixes p WHERE p.tenant_id = $1 AND p.id <> $4
                                                        AND p.cidr >>= d.prefix)
           ORDER BY d.prefix LIMIT 1""",
        prefix["tenant_id"], prefix["cidr"], becomes, prefix["id"])


async def _pool_children_fit(conn: asyncpg.Connection, pool_id: uuid.UUID,
                             p: dict[str, Any]) -> None:
    """After a PATCH of prefix or delegated_length, every exclude and reservation still fits."""
    row = await conn.fetchrow(
        """(SELECT 'exclude' AS kind, prefix FROM pd_excludes
             WHERE pd_pool_id = $1 AND NOT (prefix <<= $2 AND masklen(prefix) > masklen($2)
                                            AND masklen(prefix) <= $3) LIMIT 1)
           UNION ALL
           (SELECT 'reservation', prefix FROM pd_reservations
             WHERE pd_pool_id = $1 AND NOT (prefix <<= $2 AND masklen(prefix) = $3) LIMIT 1)
           LIMIT 1""",
        pool_id, p["prefix"], p["delegated_length"])
    if row is not None:
        raise conflict(f"prefix/delegated_length: the {row['kind']} {row['prefix']} would not "
                       f"fit a pool {p['prefix']} of /{p['delegated_length']} prefixes")


async def _subnet_for_pool(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> asyncpg.Record:
    subnet = await subnets.lock(conn, subnet_id)
    if subnet["cidr"].version != 6:
        raise conflict(f"the subnet {subnet['cidr']} is IPv4: delegation pools (DHCPv6 IA_PD) "
                       "belong to IPv6 subnets")
    if not subnet["dhcp_enabled"]:
        raise conflict(f"the subnet {subnet['cidr']} has dhcp_enabled=false: a subnet without "
                       "DHCP delegates no prefixes")
    return subnet


@guarded
async def create_pool(conn: asyncpg.Connection, actor: str, subnet_id: uuid.UUID,
                      fields: dict[str, Any]) -> dict[str, Any]:
    subnet = await _subnet_for_pool(conn, subnet_id)
    await tenant_for_create(conn, fields.get("tenant_id"), subnet["tenant_id"])
    p = {name: fields[name] for name in POOL_UPDATABLE}
    _length_rules(p["prefix"], p["delegated_length"])
    await _pool_plan(conn, subnet, p, None)
    row = await fetch_one(
        conn,
        f"""INSERT INTO pd_pools (tenant_id, subnet_id, name, prefix, delegated_length)
            VALUES ($1, $2, $3, $4, $5) RETURNING {POOL_COLUMNS}""",
        subnet["tenant_id"], subnet_id, p["name"], p["prefix"], p["delegated_length"])
    out = pool_public(row)
    await audit.record(conn, actor, "create", "pd_pool", row["id"], None, out)
    return out


async def get_pool(conn: asyncpg.Connection, pool_id: uuid.UUID) -> dict[str, Any]:
    return pool_public(await one(conn, f"SELECT {POOL_COLUMNS} FROM pd_pools WHERE id = $1",
                                 pool_id, "delegation pool"))


async def list_pools(conn: asyncpg.Connection, subnet_id: uuid.UUID, after: uuid.UUID | None,
                     limit: int) -> list[dict[str, Any]] | None:
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM subnets WHERE id = $1)",
                               subnet_id):
        return None
    rows = await conn.fetch(
        f"""SELECT {POOL_COLUMNS} FROM pd_pools
            WHERE subnet_id = $1 AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3""",
        subnet_id, after, limit + 1)
    return [pool_public(r) for r in rows]


async def _lock_pool(conn: asyncpg.Connection, pool_id: uuid.UUID) -> tuple[asyncpg.Record,
                                                                           asyncpg.Record]:
    """(locked subnet, locked pool): the subnet first, as every change of its children."""
    subnet_id = await conn.fetchval("SELECT subnet_id FROM pd_pools WHERE id = $1", pool_id)
    if subnet_id is None:
        await get_pool(conn, pool_id)  # raises the 404
    subnet = await subnets.lock(conn, subnet_id)
    pool = await one(conn, f"SELECT {POOL_COLUMNS} FROM pd_pools WHERE id = $1 FOR UPDATE",
                     pool_id, "delegation pool")
    return subnet, pool


@guarded
async def update_pool(conn: asyncpg.Connection, actor: str, pool_id: uuid.UUID,
                      changes: dict[str, Any]) -> dict[str, Any]:
    subnet, current = await _lock_pool(conn, pool_id)
    before = pool_public(current)
    if not changes:
        return before
    p = {name: current[name] for name in POOL_UPDATABLE} | changes
    _length_rules(p["prefix"], p["delegated_length"])
    if "prefix" in changes:
        await _pool_plan(conn, subnet, p, pool_id)
    if "prefix" in changes or "delegated_length" in changes:
        await _pool_children_fit(conn, pool_id, p)
    clause, values = set_clause(changes, POOL_UPDATABLE)
    row = await fetch_one(
        conn,
        f"UPDATE pd_pools SET {clause} WHERE id = $1 RETURNING {POOL_COLUMNS}", pool_id, *values)
    after = pool_public(row)
    await audit.record(conn, actor, "update", "pd_pool", pool_id, before, after)
    return after


@guarded
async def delete_pool(conn: asyncpg.Connection, actor: str, pool_id: uuid.UUID) -> None:
    subnet, current = await _lock_pool(conn, pool_id)
    # FOR UPDATE, as a subnet's delete: a DHCPv6 grant holds its subnet FOR KEY SHARE until it
    # commits (migration 0013), so a delegated prefix granted meanwhile is counted below.
    await conn.execute("SELECT 1 FROM subnets WHERE id = $1 FOR UPDATE", subnet["id"])
    counts = await fetch_one(
        conn,
        f"""SELECT (SELECT count(*) FROM pd_excludes WHERE pd_pool_id = $1) AS exclude,
                  (SELECT count(*) FROM pd_reservations WHERE pd_pool_id = $1) AS reservation,
                  (SELECT count(*) FROM leases
                    WHERE subnet_id = $2 AND ia_type = 'pd' AND ip <<= $3::cidr
                      AND {LIVE_SQL}) AS "live lease"
        """,
        pool_id, subnet["id"], current["prefix"])
    if any(counts.values()):
        raise conflict(f"the delegation pool {current['prefix']} still has "
                       f"{inside_message(dict(counts))}; delete them first")
    await conn.execute("DELETE FROM pd_pools WHERE id = $1", pool_id)
    await audit.record(conn, actor, "delete", "pd_pool", pool_id, pool_public(current), None)


# --- excludes and reservations of delegated prefixes ---------------------------------------

@dataclass(frozen=True)
class Child:
    """A pool's child kind: how it is stored, shown and audited (names come from code)."""

    noun: str  # the audit object_type and the 404's wording
    table: str
    columns: str
    updatable: tuple[str, ...]


EXCLUDE = Child("pd_exclude", "pd_excludes",
                "id, pd_pool_id, prefix, created_at, updated_at", ("prefix",))
RESERVATION = Child("pd_reservation", "pd_reservations",
                    "id, pd_pool_id, prefix, duid, hostname, created_at, updated_at",
                    ("prefix", "duid", "hostname"))


def child_public(kind: Child, pool: asyncpg.Record, row: asyncpg.Record) -> dict[str, Any]:
    out = {"id": row["id"], "pd_pool_id": row["pd_pool_id"], "subnet_id": pool["subnet_id"],
           "tenant_id": pool["tenant_id"], "prefix": str(row["prefix"])}
    if kind is RESERVATION:
        out |= {"duid": row["duid"], "hostname": row["hostname"]}
    else:
        out["size"] = count_out(delegated_count(row["prefix"], pool["delegated_length"]), 6)
    return out | {"created_at": row["created_at"], "updated_at": row["updated_at"]}


def _inside_rules(pool: asyncpg.Record, prefix: Network, *, exact: bool) -> None:
    """``prefix`` is inside the pool: one delegated prefix (``exact``), or for an exclude a
    run of them (no shorter than the pool, no longer than a delegated prefix)."""
    parent: Network = pool["prefix"]
    length = pool["delegated_length"]
    if prefix.version != 6 or not prefix.subnet_of(parent):
        raise invalid("prefix", f"{prefix} is outside the delegation pool {parent}")
    if exact and prefix.prefixlen != length:
        raise invalid("prefix", f"a reservation is one delegated prefix: a /{length} of "
                      f"{parent}, not a /{prefix.prefixlen}")
    if not exact and not parent.prefixlen < prefix.prefixlen <= length:
        raise invalid("prefix", f"an exclude of {parent} is a /{parent.prefixlen + 1} to "
                      f"/{length}, not a /{prefix.prefixlen}")


async def _exclude_rules(conn: asyncpg.Connection, pool: asyncpg.Record, x: dict[str, Any],
                         own: uuid.UUID | None) -> None:
    _inside_rules(pool, x["prefix"], exact=False)
    other = await conn.fetchrow(
        """SELECT id, prefix FROM pd_excludes
           WHERE pd_pool_id = $1 AND prefix && $2 AND id IS DISTINCT FROM $3 LIMIT 1""",
        pool["id"], x["prefix"], own)
    if other is not None:
        raise conflict(f"prefix: {x['prefix']} overlaps the exclude {other['prefix']} "
                       f"(id {other['id']})")
    held = await conn.fetchrow(
        "SELECT id, prefix FROM pd_reservations WHERE pd_pool_id = $1 AND prefix <<= $2 "
        "ORDER BY prefix LIMIT 1", pool["id"], x["prefix"])
    if held is not None:
        raise conflict(f"prefix: {x['prefix']} contains the reservation {held['prefix']} "
                       f"(id {held['id']}); a reserved prefix cannot be excluded")


async def _reservation_rules(conn: asyncpg.Connection, pool: asyncpg.Record, r: dict[str, Any],
                             own: uuid.UUID | None) -> None:
    _inside_rules(pool, r["prefix"], exact=True)
    excluded = await conn.fetchrow(
        "SELECT id, prefix FROM pd_excludes WHERE pd_pool_id = $1 AND prefix >>= $2 LIMIT 1",
        pool["id"], r["prefix"])
    if excluded is not None:
        raise conflict(f"prefix: {r['prefix']} lies inside the exclude {excluded['prefix']} "
                       f"(id {excluded['id']})")
    for column in ("prefix", "duid"):
        other = await conn.fetchrow(
            f"""SELECT id, prefix FROM pd_reservations
                WHERE pd_pool_id = $1 AND {column} = $2 AND id IS DISTINCT FROM $3""",
            pool["id"], r[column], own)
        if other is not None:
            raise conflict(f"{column}: {r[column]} already has the reservation {other['id']} "
                           f"({other['prefix']}) in this delegation pool")


async def _fetch_child(conn: asyncpg.Connection, kind: Child, child_id: uuid.UUID,
                       lock: bool = False) -> asyncpg.Record:
    tail = " FOR UPDATE" if lock else ""
    return await one(conn, f"SELECT {kind.columns} FROM {kind.table} WHERE id = $1{tail}",
                     child_id, kind.noun.replace("pd_", "delegated prefix "))


async def _checked(conn: asyncpg.Connection, kind: Child, pool: asyncpg.Record,
                   values: dict[str, Any], own: uuid.UUID | None) -> None:
    if kind is EXCLUDE:
        await _exclude_rules(conn, pool, values, own)
    else:
        await _reservation_rules(conn, pool, values, own)


@guarded
async def create_child(conn: asyncpg.Connection, actor: str, grant: license.Entitlement,
                       kind: Child, pool_id: uuid.UUID, fields: dict[str, Any]
                       ) -> dict[str, Any]:
    if kind is RESERVATION:
        await license.lock(conn)  # a reservation is a managed IP (docs/api-ipam.md)
    _subnet, pool = await _lock_pool(conn, pool_id)
    await tenant_for_create(conn, fields.get("tenant_id"), pool["tenant_id"])
    values = {name: fields.get(name) for name in kind.updatable}
    await _checked(conn, kind, pool, values, None)
    if kind is RESERVATION:
        await license.check_room(conn, grant)
    names = ["pd_pool_id", *kind.updatable]
    marks = ", ".join(f"${i}" for i in range(1, len(names) + 1))
    row = await fetch_one(
        conn,
        f"INSERT INTO {kind.table} ({', '.join(names)}) VALUES ({marks}) "
        f"RETURNING {kind.columns}", pool_id, *(values[name] for name in kind.updatable))
    out = child_public(kind, pool, row)
    await audit.record(conn, actor, "create", kind.noun, row["id"], None, out)
    return out


async def get_child(conn: asyncpg.Connection, kind: Child, child_id: uuid.UUID
                    ) -> dict[str, Any]:
    row = await _fetch_child(conn, kind, child_id)
    pool = await fetch_one(conn, f"SELECT {POOL_COLUMNS} FROM pd_pools WHERE id = $1",
                           row["pd_pool_id"])
    return child_public(kind, pool, row)


async def list_children(conn: asyncpg.Connection, kind: Child, pool_id: uuid.UUID,
                        after: uuid.UUID | None, limit: int) -> list[dict[str, Any]] | None:
    pool = await conn.fetchrow(f"SELECT {POOL_COLUMNS} FROM pd_pools WHERE id = $1", pool_id)
    if pool is None:
        return None
    rows = await conn.fetch(
        f"""SELECT {kind.columns} FROM {kind.table}
            WHERE pd_pool_id = $1 AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3""",
        pool_id, after, limit + 1)
    return [child_public(kind, pool, r) for r in rows]


async def _lock_child(conn: asyncpg.Connection, kind: Child, child_id: uuid.UUID
                      ) -> tuple[asyncpg.Record, asyncpg.Record]:
    """(locked pool, locked child), taking the subnet's and the pool's locks first."""
    pool_id = await conn.fetchval(f"SELECT pd_pool_id FROM {kind.table} WHERE id = $1",
                                  child_id)
    if pool_id is None:
        await _fetch_child(conn, kind, child_id)  # raises the 404
    _subnet, pool = await _lock_pool(conn, pool_id)
    return pool, await _fetch_child(conn, kind, child_id, lock=True)


@guarded
async def update_child(conn: asyncpg.Connection, actor: str, kind: Child, child_id: uuid.UUID,
                       changes: dict[str, Any]) -> dict[str, Any]:
    pool, current = await _lock_child(conn, kind, child_id)
    before = child_public(kind, pool, current)
    if not changes:
        return before
    values = {name: current[name] for name in kind.updatable} | changes
    await _checked(conn, kind, pool, values, child_id)
    clause, args = set_clause(changes, kind.updatable)
    row = await fetch_one(
        conn,
        f"UPDATE {kind.table} SET {clause} WHERE id = $1 RETURNING {kind.columns}",
        child_id, *args)
    after = child_public(kind, pool, row)
    await audit.record(conn, actor, "update", kind.noun, child_id, before, after)
    return after


@guarded
async def delete_child(conn: asyncpg.Connection, actor: str, kind: Child,
                       child_id: uuid.UUID) -> None:
    pool, current = await _lock_child(conn, kind, child_id)
    await conn.execute(f"DELETE FROM {kind.table} WHERE id = $1", child_id)
    before = child_public(kind, pool, current)
    await audit.record(conn, actor, "delete", kind.noun, child_id, before, None)
