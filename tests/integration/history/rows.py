"""Hand-written plan and lease_events rows (asyncio side), for the fold trigger's edge cases.

Scenario tests drive the real DHCP server instead; these rows exercise orders of events a
well-behaved server rarely produces (repeats, ends without starts, clock skew).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import asyncpg

from ipamd.core.lease_events import derive_all

DEFAULT_TENANT = uuid.UUID("00000000-0000-7000-8000-000000000001")
T0 = dt.datetime(2025, 1, 6, 12, 0, tzinfo=dt.UTC)


async def make_subnet(conn: asyncpg.Connection, cidr: str) -> uuid.UUID:
    prefix = await conn.fetchval(
        "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, $2) RETURNING id", DEFAULT_TENANT, cidr
    )
    return await conn.fetchval(
        "INSERT INTO subnets (tenant_id, prefix_id, cidr) VALUES ($1, $2, $3) RETURNING id",
        DEFAULT_TENANT, prefix, cidr,
    )


async def event(
    conn: asyncpg.Connection, subnet_id: uuid.UUID, lease_id: uuid.UUID, kind: str,
    ip: str, at: dt.datetime, **identity: Any,
) -> None:
    await conn.execute(
        """INSERT INTO lease_events (at, lease_id, event, subnet_id, ip, mac, client_id, duid,
                                     hostname, fqdn, circuit_id, remote_id, giaddr, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)""",
        at, lease_id, kind, subnet_id, ip, identity.get("mac"), identity.get("client_id"),
        identity.get("duid"), identity.get("hostname"), identity.get("fqdn"),
        identity.get("circuit_id"), identity.get("remote_id"), identity.get("giaddr"),
        identity.get("expires_at"),
    )


async def intervals(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    await derive_all(conn)  # history rows and events follow the lease journal
    rows = await conn.fetch(
        """SELECT lease_id, host(ip) AS ip, mac::text AS mac, hostname, duid, from_at, to_at,
                  state, expires_at, declined_at
             FROM lease_intervals ORDER BY from_at, id"""
    )
    return [dict(r) for r in rows]

