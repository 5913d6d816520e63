"""`ipamd status`: the token-free probe on the box (containers, systemd).

Healthy when the database answers and this node heartbeats with every enabled service
running; otherwise the problems, each naming what is not.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from ipamd.config import Config


def expected_services(config: Config) -> list[str]:
    """The services this node's configuration enables (as runtime.services() starts them)."""
    found = ["api", "housekeeping", "history_retention", "lease_journal"]
    if config.outbox.enabled:
        found.append("outbox")
    if config.dhcp.enabled:
        found += ["dhcp", "dhcp_expiry"]
    if config.ops.enabled:
        found.append("ops")
    return found


async def node_row(conn: asyncpg.Connection, name: str, down_seconds: float
                   ) -> dict[str, Any] | None:
    row = await conn.fetchrow(
        """SELECT name, services, last_seen_at, stopped_at,
                  extract(epoch FROM now() - last_seen_at) AS silent_seconds,
                  stopped_at IS NULL AND last_seen_at > now() - make_interval(secs => $2)
                      AS up
           FROM nodes WHERE name = $1""",
        name, down_seconds)
    return None if row is None else dict(row)


def judge(row: dict[str, Any] | None, name: str, expected: list[str], ops_enabled: bool
          ) -> list[str]:
    """What is wrong, one line each; empty when healthy."""
    if not ops_enabled:
        return ["ops.enabled is false: this node does not heartbeat, so its services "
                "cannot be judged"]
    if row is None:
        return [f"node {name} has never registered on this database (is ipamd running?)"]
    if not row["up"]:
        if row["stopped_at"] is not None:
            return [f"node {name} stopped at {row['stopped_at']:%Y-%m-%d %H:%M:%S}Z"]
        return [f"node {name} silent for {float(row['silent_seconds']):.0f} s"]
    services = row["services"] or {}
    # What the configuration enables, and whatever else the node itself runs (a service
    # added later, e.g. dns, is judged without this list knowing it).
    every = list(dict.fromkeys([*expected, *services]))
    return [f"service {s} is not running" for s in every if not services.get(s)]
