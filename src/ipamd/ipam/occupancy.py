"""What occupies an address of a subnet.

"Used" addresses are the gateway, reservations, assignments and live leases (offered,
active, declined — a declined address is held for its probation). Pools and excludes
are ranges that next-free (nextfree.py) also avoids.
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass

import asyncpg

LIVE_STATES = ["offered", "active", "declined"]
# The same states as SQL: literal, so the planner matches the partial indexes on leases.
LIVE_SQL = "state IN ('offered', 'active', 'declined')"


@dataclass(frozen=True)
class Occupant:
    kind: str  # reservation, assignment, lease, pool, exclude
    id: str
    detail: str

    def describe(self) -> str:
        if self.kind == "lease":
            return f"a live lease ({self.detail or 'unknown client'}, lease {self.id})"
        if self.kind in ("pool", "exclude"):
            return f"the {self.kind} {self.detail} (id {self.id})"
        return f"the {self.kind} {self.id} ({self.detail})"


_OCCUPANTS = f"""
SELECT 'reservation' AS kind, id::text, concat_ws(' ', mac::text, duid, hostname) AS detail
  FROM reservations WHERE subnet_id = $1 AND ip = $2 AND id IS DISTINCT FROM $3
UNION ALL
SELECT 'assignment', id::text, hostname
  FROM assignments WHERE subnet_id = $1 AND ip = $2 AND id IS DISTINCT FROM $4
UNION ALL
SELECT 'lease', lease_id::text, concat_ws(' ', mac::text, duid)
  FROM leases WHERE subnet_id = $1 AND ip = $2 AND {LIVE_SQL}
UNION ALL
SELECT 'pool', id::text, name || ' ' || host(start_ip) || '-' || host(end_ip)
  FROM pools WHERE subnet_id = $1 AND range @> $2::inet
UNION ALL
SELECT 'exclude', id::text, host(start_ip) || '-' || host(end_ip)
  FROM excludes WHERE subnet_id = $1 AND range @> $2::inet
"""


async def occupants(
    conn: asyncpg.Connection,
    subnet_id: uuid.UUID,
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
    *,
    skip_reservation: uuid.UUID | None = None,
    skip_assignment: uuid.UUID | None = None,
) -> list[Occupant]:
    rows = await conn.fetch(
        _OCCUPANTS, subnet_id, ip, skip_reservation, skip_assignment
    )
    return [Occupant(r["kind"], r["id"], r["detail"] or "") for r in rows]


async def lease_identity(
    conn: asyncpg.Connection, subnet_id: uuid.UUID,
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> tuple[str | None, str | None] | None:
    row = await conn.fetchrow(
        "SELECT mac::text AS mac, duid FROM leases"
        f" WHERE subnet_id = $1 AND ip = $2 AND {LIVE_SQL}",
        subnet_id, ip,
    )
    return None if row is None else (row["mac"], row["duid"])
