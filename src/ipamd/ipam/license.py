"""The license cap on managed IPs (reservations + assignments), race-free.

Every create of a managed IP takes one transaction-scoped advisory lock before it
counts, so two concurrent creates at the edge serialise: one gets the last slot,
the other sees the cap and gets 402. The lock is taken before any row lock, so the
order of locks is the same in every path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core.errors import LicenseLimit
from ipamd.core.rows import fetch_one

LICENSE_LOCK = 0x1BA3E  # advisory lock key; MIGRATION_LOCK is 0x1BA3D

# Reservations of delegated prefixes (pd_reservations, IPv6 IA_PD) are reservations too.
_COUNT = """SELECT (SELECT count(*) FROM reservations)
                   + (SELECT count(*) FROM pd_reservations) AS reservations,
                   (SELECT count(*) FROM assignments) AS assignments"""


@dataclass(frozen=True)
class Entitlement:
    """What the TOML file grants: license.tier and license.max_managed_ips."""

    tier: str
    cap: int


async def lock(conn: asyncpg.Connection) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock($1)", LICENSE_LOCK)


async def check_room(conn: asyncpg.Connection, grant: Entitlement, adding: int = 1) -> None:
    """Inside a transaction that holds ``lock``: 402 when ``adding`` more would exceed the cap."""
    row = await fetch_one(conn, _COUNT)
    managed = row["reservations"] + row["assignments"]
    if managed + adding > grant.cap:
        raise LicenseLimit(
            f"license limit: {managed} of {grant.cap} managed IPs (reservations and "
            f"assignments) are in use on the {grant.tier} tier; delete some or raise "
            "license.max_managed_ips",
        )


async def status(conn: asyncpg.Connection, grant: Entitlement) -> dict[str, Any]:
    row = await fetch_one(conn, _COUNT)
    managed = row["reservations"] + row["assignments"]
    cap = grant.cap
    return {
        "tier": grant.tier,
        "max_managed_ips": cap,
        "managed_ips": managed,
        "reservations": row["reservations"],
        "assignments": row["assignments"],
        "available": max(cap - managed, 0),
    }
