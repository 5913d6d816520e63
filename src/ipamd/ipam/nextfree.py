"""The lowest free address of a subnet: outside pools, excludes, used addresses and the gateway.

The walk reads the occupants of a window of addresses above a cursor (index range scans
on each table's (subnet_id, ip)), finds the first gap in it, and otherwise moves on to a
window four times wider. Its cost follows the position of the first gap, not the size of
the subnet. Callers hold the subnet lock (and the license lock), which makes
take-the-lowest atomic.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import asyncpg

from ipamd.core import validate
from ipamd.ipam.occupancy import LIVE_SQL
from ipamd.ipam.rows import one

FIRST_WINDOW = 256
MAX_WINDOW = 65_536

# Occupants of [$2, $3] as offsets from $2 (small integers: cheap to sort and to send, and
# inside bigint for an IPv6 window too, where the distance from :: would not be). A range
# that runs past the window also gives its real end (``beyond``): the walk jumps over it.
_WINDOW = f"""
SELECT greatest(start_ip, $2) - $2 AS s, least(end_ip, $3) - $2 AS e,
       CASE WHEN end_ip > $3 THEN end_ip END AS beyond
  FROM pools WHERE subnet_id = $1 AND start_ip <= $3 AND end_ip >= $2
UNION ALL
SELECT greatest(start_ip, $2) - $2, least(end_ip, $3) - $2,
       CASE WHEN end_ip > $3 THEN end_ip END
  FROM excludes WHERE subnet_id = $1 AND start_ip <= $3 AND end_ip >= $2
UNION ALL
SELECT ip - $2, ip - $2, NULL
  FROM reservations WHERE subnet_id = $1 AND ip BETWEEN $2 AND $3
UNION ALL
SELECT ip - $2, ip - $2, NULL
  FROM assignments WHERE subnet_id = $1 AND ip BETWEEN $2 AND $3
UNION ALL
SELECT ip - $2, ip - $2, NULL
  FROM leases WHERE subnet_id = $1 AND {LIVE_SQL} AND ip BETWEEN $2 AND $3
"""


def walk(ranges: Iterable[tuple[int, int]], cursor: int, limit: int) -> tuple[int | None, int]:
    """(free address or None, next cursor): the lowest address in [cursor, limit] outside
    every range; when there is none, the first address the ranges leave after the cursor."""
    candidate = cursor
    for start, end in sorted(ranges):
        if start > candidate:
            break
        candidate = max(candidate, end + 1)
    if candidate <= limit:
        return candidate, candidate
    return None, candidate


async def lowest_free(
    conn: asyncpg.Connection,
    subnet_id: uuid.UUID,
    net: validate.Network,
    gateway: validate.IPAddress | None,
) -> validate.IPAddress | None:
    """The lowest free host address, or None when the subnet is full (IPv4 or IPv6: the
    walk is integer arithmetic on the occupants, never a list of the subnet's addresses)."""
    cursor, last = validate.host_range(net)
    window = FIRST_WINDOW
    gateway_range = [(int(gateway), int(gateway))] if gateway is not None else []
    while cursor <= last:
        high = min(cursor + window - 1, last)
        rows = await conn.fetch(_WINDOW, subnet_id, validate.address_in_family(net, cursor),
                                validate.address_in_family(net, high))
        occupied = [(cursor + r["s"], int(r["beyond"]) if r["beyond"] is not None
                     else cursor + r["e"]) for r in rows]
        found, cursor = walk(gateway_range + occupied, cursor, high)
        if found is not None:
            return validate.address_in_family(net, found)
        window = min(window * 4, MAX_WINDOW)
    return None


async def peek(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> validate.IPAddress | None:
    """What a create without ip would take now (not reserved: a later create may differ)."""
    subnet = await one(conn, "SELECT cidr, gateway FROM subnets WHERE id = $1", subnet_id,
                       "subnet")
    return await lowest_free(conn, subnet_id, subnet["cidr"], subnet["gateway"])
