"""A subnet's address map "As of" a moment (GET /subnets/{id}/map; docs/history.md).

The address plan at that moment (pools, excludes, reservations, assignments: the rows of
then, from their audit trail) laid over the occupancy history (``lease_intervals``, read
as history.py reads it). Asyncio side: call through the bridge.
"""

from __future__ import annotations

import bisect
import datetime as dt
import ipaddress
import json
import socket
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import validate
from ipamd.core.errors import not_found
from ipamd.core.lease_events import derive_all
from ipamd.core.rows import fetch_one
from ipamd.ipam.history import EFFECTIVE_TO

# Address states, lowest precedence first: where two apply to one address the later wins.
RANGE_STATES = ("free", "pool", "excluded")
ADDRESS_STATES = ("assigned", "reserved", "declined", "leased")
STATES = RANGE_STATES + ADDRESS_STATES
# A per-address entry is a JSON array in this column order. A /16 can hold tens of thousands
# of leases, so Postgres renders them (lease_intervals.map_head is the entry less its state)
# and hands over one text; Python never touches them one by one.
ADDRESS_COLUMNS = ("ip", "mac", "hostname", "state")


@dataclass
class AddressMap:
    subnet_id: uuid.UUID
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    at: dt.datetime
    ranges: list[tuple[int, int, str]]  # first, last (inclusive), state
    # JSON arrays (ADDRESS_COLUMNS) joined by commas: in no particular order for IPv4 (the
    # whole map), in address order for IPv6 (one page of it)
    addresses: str
    counts: dict[str, int]
    next_after: str | None = None  # IPv6: the page's last address when more follow


@dataclass(frozen=True)
class PlanVersion:
    """An audit entry of a plan object: pool, exclude, reservation or assignment."""

    object_type: str
    object_id: str
    at: dt.datetime
    action: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def plan_at(
    current: Iterable[tuple[str, dict[str, Any]]],
    changes: Iterable[PlanVersion],
    at: dt.datetime,
) -> list[tuple[str, dict[str, Any]]]:
    """The plan objects (type, fields) that existed at ``at``.

    ``changes`` holds, per object, its first audit entry after ``at``: the object then was
    that entry's ``before`` (absent if the entry is its creation). An object unchanged since
    is as it is now (``current``), if it was created by then. So a deleted object is known
    while its deletion is in the audit trail; a change whose entry is past retention is not.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    changed: set[tuple[str, str]] = set()
    for change in changes:
        changed.add((change.object_type, change.object_id))
        fields = None if change.action == "create" else change.before
        if fields is not None and _created_by(fields, at):
            found.append((change.object_type, fields))
    for kind, fields in current:
        if (kind, str(fields["id"])) not in changed and _created_by(fields, at):
            found.append((kind, fields))
    return found


def _created_by(fields: dict[str, Any], at: dt.datetime) -> bool:
    created = fields.get("created_at")
    if created is None:
        return True
    if isinstance(created, str):
        try:
            created = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
        except ValueError:
            return True
    return bool(created <= at)


def _ip_int(value: Any) -> int | None:
    """An address (audit JSON or host()) as an int; None when it is not one."""
    if isinstance(value, str) and ":" in value:
        try:
            return int(ipaddress.IPv6Address(value.split("/")[0]))
        except ValueError:
            return None
    if not isinstance(value, str) or value.count(".") != 3:
        return None
    try:  # inet_aton is C: the plan of a /16 holds hundreds of addresses
        return int.from_bytes(socket.inet_aton(value.split("/")[0]), "big")
    except OSError:
        return None


def base_ranges(
    first: int, last: int, spans: Iterable[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """Run-length ranges covering first..last from overlapping spans (later states win)."""
    rank = {state: i for i, state in enumerate(RANGE_STATES)}
    cuts: dict[int, list[tuple[int, int]]] = {}  # position -> [(rank, +1/-1)]
    for start, end, state in spans:
        start, end = max(start, first), min(end, last)
        if start > end:
            continue
        cuts.setdefault(start, []).append((rank[state], 1))
        cuts.setdefault(end + 1, []).append((rank[state], -1))
    depth = [0] * len(RANGE_STATES)
    ranges: list[tuple[int, int, str]] = []
    position = first
    for cut in sorted(cuts):
        if cut > position:
            _append(ranges, position, min(cut - 1, last), _top(depth))
            position = cut
        for index, delta in cuts[cut]:
            depth[index] += delta
        if position > last:
            break
    if position <= last:
        _append(ranges, position, last, _top(depth))
    return ranges


def _top(depth: list[int]) -> str:
    for index in range(len(depth) - 1, 0, -1):
        if depth[index] > 0:
            return RANGE_STATES[index]
    return "free"


def _append(ranges: list[tuple[int, int, str]], start: int, end: int, state: str) -> None:
    if ranges and ranges[-1][2] == state and ranges[-1][1] + 1 == start:
        ranges[-1] = (ranges[-1][0], end, state)
    else:
        ranges.append((start, end, state))


def entry_json(ip: str, mac: str | None, hostname: str | None, state: str) -> str:
    return json.dumps([ip, mac, hostname, state], separators=(",", ":"), ensure_ascii=False)


def plan_layers(
    network: ipaddress.IPv4Network | ipaddress.IPv6Network,
    plan: Iterable[tuple[str, dict[str, Any]]],
) -> tuple[list[tuple[int, int, str]], dict[int, tuple[str, str]]]:
    """The plan's run-length ranges over the subnet, and its per-address entries by offset."""
    first, last = int(network.network_address), int(network.broadcast_address)
    spans: list[tuple[int, int, str]] = []
    points: dict[int, tuple[str, str]] = {}
    for kind, fields in plan:
        if kind in ("pool", "exclude"):
            start, end = _ip_int(fields.get("start_ip")), _ip_int(fields.get("end_ip"))
            if start is not None and end is not None:
                spans.append((start, end, "pool" if kind == "pool" else "excluded"))
            continue
        ip = _ip_int(fields.get("ip"))
        state = "reserved" if kind == "reservation" else "assigned"
        if ip is None or not first <= ip <= last:
            continue
        held = points.get(ip - first)
        if held is None or ADDRESS_STATES.index(state) > ADDRESS_STATES.index(held[0]):
            points[ip - first] = (state, entry_json(
                str(validate.address_in_family(network, ip)), fields.get("mac"),
                fields.get("hostname"), state))
    return base_ranges(first, last, spans), points


def count_states(
    ranges: Sequence[tuple[int, int, str]],
    first: int,
    held: Sequence[int],
    declined: int,
    planned: Iterable[tuple[int, str]],
) -> dict[str, int]:
    """Addresses per state. ``held``: sorted offsets of the leased or declined addresses
    (``declined`` of them declined); ``planned``: (offset, state) of the plan's entries that
    no lease overrides."""
    counts = dict.fromkeys(STATES, 0)
    for start, end, state in ranges:
        inside = bisect.bisect_right(held, end - first) - bisect.bisect_left(held, start - first)
        counts[state] += end - start + 1 - inside
    counts["declined"] = declined
    counts["leased"] = len(held) - declined
    starts = [start - first for start, _, _ in ranges]
    for offset, state in planned:
        counts[ranges[bisect.bisect_right(starts, offset) - 1][2]] -= 1
        counts[state] += 1
    return counts


# The leases of subnet $1 held at moment $2 inside $3 (their map head and state): the same
# rows for both maps, which key them by offset (IPv4) or by address (IPv6).
_HELD_AT = f"""map_head,
           CASE WHEN declined_at <= $2 THEN 'declined' ELSE 'leased' END AS state
      FROM lease_intervals
     WHERE subnet_id = $1 AND tstzrange(from_at, to_at, '[)') @> $2::timestamptz
       AND ip << $3::cidr
       AND ({EFFECTIVE_TO} IS NULL OR {EFFECTIVE_TO} > $2)"""

# One moment's leases and the plan's entries no lease overrides, in one pass: the entries as
# one text (unordered: sorting 65,536 of them would cost as much as finding them), the
# leases' offsets (n, from the subnet's first address) and how many are declined.
_MAP_SQL = f"""
WITH held AS (
    SELECT ip - $3::inet AS n, {_HELD_AT}
), planned AS (
    -- A few plan entries: probing each address beats hashing every held one.
    SELECT n, entry FROM unnest($4::int8[], $5::text[]) AS p(n, entry)
     WHERE NOT EXISTS (
         SELECT 1 FROM lease_intervals
          WHERE ip = set_masklen($3::inet + n, 32) AND subnet_id = $1 AND from_at <= $2
            AND ({EFFECTIVE_TO} IS NULL OR {EFFECTIVE_TO} > $2))
), entries AS (
    SELECT n, map_head || state || '"]' AS entry, state FROM held
    UNION ALL
    SELECT n, entry, NULL FROM planned
)
SELECT string_agg(entry, ',') AS rows,
       array_agg(n) FILTER (WHERE state IS NOT NULL) AS held,
       count(*) FILTER (WHERE state = 'declined') AS declined,
       array_agg(n) FILTER (WHERE state IS NULL) AS planned
  FROM entries
"""

# The plan as it is now, one query for the four kinds (fields as the audit trail names them).
_PLAN_CURRENT = """
    SELECT 'pool' AS kind, id, host(start_ip) AS start_ip, host(end_ip) AS end_ip,
           NULL AS ip, NULL AS mac, NULL AS hostname, created_at
      FROM pools WHERE subnet_id = $1
    UNION ALL
    SELECT 'exclude', id, host(start_ip), host(end_ip), NULL, NULL, NULL, created_at
      FROM excludes WHERE subnet_id = $1
    UNION ALL
    SELECT 'reservation', id, NULL, NULL, host(ip), mac::text, hostname, created_at
      FROM reservations WHERE subnet_id = $1
    UNION ALL
    SELECT 'assignment', id, NULL, NULL, host(ip), NULL, hostname, created_at
      FROM assignments WHERE subnet_id = $1"""

# The expression matches the partial index audit_log_plan_subnet (migration 0005).
# Each plan object's first change after the moment (none for a map of now).
_PLAN_CHANGES = """
    SELECT DISTINCT ON (object_type, object_id) object_type, object_id, at, action, before
      FROM audit_log
     WHERE object_type IN ('pool', 'exclude', 'reservation', 'assignment')
       AND coalesce(after ->> 'subnet_id', before ->> 'subnet_id') = $1 AND at > $2
     ORDER BY object_type, object_id, at, id"""


async def _plan(conn: asyncpg.Connection, subnet_id: uuid.UUID, at: dt.datetime
                ) -> list[tuple[str, dict[str, Any]]]:
    current = [(row["kind"], dict(row)) for row in await conn.fetch(_PLAN_CURRENT, subnet_id)]
    changes = [
        PlanVersion(r["object_type"], r["object_id"] or "", r["at"], r["action"], r["before"],
                    None)
        for r in await conn.fetch(_PLAN_CHANGES, str(subnet_id), at)
    ]
    return plan_at(current, changes, at)


async def address_map(conn: asyncpg.Connection, subnet_id: uuid.UUID, at: dt.datetime,
                      after: ipaddress.IPv6Address | None = None, limit: int = 1000,
                      ) -> AddressMap:
    """The subnet's addresses as they stood at ``at``, from one consistent snapshot (taken
    once the lease journal is derived: every change made before the question is in it).

    An IPv4 map is whole; an IPv6 map gives its ranges and counts whole and its per-address
    entries a page at a time (``after``, ``limit``): never 2^64 of anything."""
    await derive_all(conn)
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        # A busy moment matches a large share of the table: the planner would scan it all,
        # in parallel; the GiST index reads only the moment's rows.
        await conn.execute("SET LOCAL enable_seqscan = off; "
                           "SET LOCAL max_parallel_workers_per_gather = 0")
        cidr = await conn.fetchval("SELECT cidr FROM subnets WHERE id = $1", subnet_id)
        if cidr is None:
            raise not_found("subnet", str(subnet_id))
        plan = await _plan(conn, subnet_id, at)
        if cidr.version == 6:
            return await _map_v6(conn, subnet_id, at, cidr, plan, after, limit)
        network = ipaddress.IPv4Network(cidr)
        first = int(network.network_address)
        ranges, points = plan_layers(network, plan)
        offsets = sorted(points)
        row = await fetch_one(
            conn,
            _MAP_SQL, subnet_id, at, network, offsets, [points[n][1] for n in offsets])
    planned = [(n, points[n][0]) for n in row["planned"] or ()]
    counts = count_states(ranges, first, sorted(row["held"] or ()), row["declined"], planned)
    return AddressMap(subnet_id=subnet_id, network=network, at=at, ranges=ranges,
                      addresses=row["rows"] or "", counts=counts)


# The IPv6 map: the moment's leases (as in _MAP_SQL) and the plan's entries no lease
# overrides, by address; inet, not offsets (a /64's offsets overflow bigint).
_HELD_V6 = f"""
held AS (
    SELECT ip, {_HELD_AT}
), planned AS (
    SELECT p.ip, p.entry, p.state FROM unnest($4::inet[], $5::text[], $6::text[])
                                       AS p(ip, entry, state)
     WHERE NOT EXISTS (
         SELECT 1 FROM lease_intervals
          WHERE ip = p.ip AND subnet_id = $1 AND from_at <= $2
            AND ({EFFECTIVE_TO} IS NULL OR {EFFECTIVE_TO} > $2))
)"""

# One statement: the page of entries after $7 (at most $8), the leases held inside each plan
# range (bounds $9, $10), the totals, and the plan entries no lease overrides.
_MAP_V6 = f"""
WITH {_HELD_V6}, entries AS (
    SELECT ip, map_head || state || '"]' AS entry FROM held
    UNION ALL
    SELECT ip, entry FROM planned
), page AS (
    SELECT e.ip, e.entry FROM entries e
     WHERE $7::inet IS NULL OR e.ip > $7::inet ORDER BY e.ip LIMIT $8
)
SELECT ARRAY(SELECT host(ip) FROM page ORDER BY ip) AS page_ips,
       ARRAY(SELECT entry FROM page ORDER BY ip) AS page_entries,
       (SELECT count(*) FROM held) AS held,
       (SELECT count(*) FROM held WHERE state = 'declined') AS declined,
       ARRAY(SELECT (SELECT count(*) FROM held h WHERE h.ip BETWEEN r.lo AND r.hi)
               FROM unnest($9::inet[], $10::inet[]) WITH ORDINALITY AS r(lo, hi, i)
              ORDER BY r.i) AS inside,
       ARRAY(SELECT host(ip) FROM planned) AS planned_ips,
       ARRAY(SELECT state FROM planned) AS planned_states
"""


async def _map_v6(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, at: dt.datetime,
    network: ipaddress.IPv6Network, plan: list[tuple[str, dict[str, Any]]],
    after: ipaddress.IPv6Address | None, limit: int,
) -> AddressMap:
    first = int(network.network_address)
    ranges, points = plan_layers(network, plan)
    offsets = sorted(points)
    ips = [ipaddress.IPv6Address(first + n) for n in offsets]
    entries = [points[n][1] for n in offsets]
    states = [points[n][0] for n in offsets]
    bounds = ([ipaddress.IPv6Address(lo) for lo, _, _ in ranges],
              [ipaddress.IPv6Address(hi) for _, hi, _ in ranges])
    totals = await fetch_one(conn, _MAP_V6, subnet_id, at, network, ips, entries, states, after,
                                 limit + 1, *bounds)
    counts = dict.fromkeys(STATES, 0)
    for (lo, hi, state), inside in zip(ranges, totals["inside"], strict=True):
        counts[state] += hi - lo + 1 - inside
    counts["declined"] = totals["declined"]
    counts["leased"] = totals["held"] - totals["declined"]
    starts = [lo for lo, _, _ in ranges]
    for ip, state in zip(totals["planned_ips"], totals["planned_states"], strict=True):
        where = bisect.bisect_right(starts, int(ipaddress.IPv6Address(ip))) - 1
        counts[ranges[where][2]] -= 1
        counts[state] += 1
    shown = totals["page_entries"][:limit]
    more = len(totals["page_entries"]) > limit and bool(shown)
    return AddressMap(subnet_id=subnet_id, network=network, at=at, ranges=ranges,
                      addresses=",".join(shown), counts=counts,
                      next_after=totals["page_ips"][limit - 1] if more else None)
