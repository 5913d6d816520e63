"""Appliance nodes: each process registers under its name and heartbeats (asyncio-side units).

A node is up while it heartbeats: status is computed on read from last_seen_at and the
configured silence (ops.node_down_seconds); a clean stop marks it down at once.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import conflict, not_found

_COLUMNS = """id, name, version, pid, started_at, addresses, services, dhcp, last_seen_at,
    stopped_at, created_at, updated_at,
    CASE WHEN stopped_at IS NULL AND last_seen_at > now() - make_interval(secs => $1)
         THEN 'up' ELSE 'down' END AS status"""


def _out(row: asyncpg.Record) -> dict[str, Any]:
    out = dict(row)
    for key in ("addresses", "services", "dhcp"):
        if isinstance(out[key], str):
            out[key] = json.loads(out[key])
    return out


async def register(
    conn: asyncpg.Connection, name: str, version: str, pid: int, started_at: dt.datetime,
    addresses: dict[str, Any], services: dict[str, bool], dhcp: dict[str, Any] | None,
) -> uuid.UUID:
    """Insert or take over the row of this node's name (a restart keeps its id)."""
    node_id: uuid.UUID = await conn.fetchval(
        """INSERT INTO nodes (name, version, pid, started_at, addresses, services, dhcp)
           VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::jsonb)
           ON CONFLICT (name) DO UPDATE SET version = $2, pid = $3, started_at = $4,
               addresses = $5::jsonb, services = $6::jsonb, dhcp = $7::jsonb,
               last_seen_at = now(), stopped_at = NULL, updated_at = now()
           RETURNING id""",
        name, version, pid, started_at, addresses, services,
        dhcp,
    )
    return node_id


async def heartbeat(
    conn: asyncpg.Connection, node_id: uuid.UUID, addresses: dict[str, Any],
    services: dict[str, bool], dhcp: dict[str, Any] | None,
) -> bool:
    """False when the row is gone (an admin retired the node): the caller registers again."""
    result = await conn.execute(
        """UPDATE nodes SET addresses = $2::jsonb, services = $3::jsonb, dhcp = $4::jsonb,
               last_seen_at = now(), stopped_at = NULL, updated_at = now()
           WHERE id = $1""",
        node_id, addresses, services,
        dhcp,
    )
    return result.endswith(" 1")


async def stopped(conn: asyncpg.Connection, node_id: uuid.UUID) -> None:
    await conn.execute(
        """UPDATE nodes SET stopped_at = now(), services = (
               SELECT coalesce(jsonb_object_agg(key, false), '{}') FROM jsonb_each(services)),
               updated_at = now() WHERE id = $1""",
        node_id,
    )


async def list_all(conn: asyncpg.Connection, down_seconds: float) -> list[dict[str, Any]]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM nodes ORDER BY name", down_seconds)
    return [_out(r) for r in rows]


async def list_page(conn: asyncpg.Connection, down_seconds: float, after: uuid.UUID | None,
                    limit: int) -> list[dict[str, Any]]:
    """One page of nodes by id (limit + 1 rows: the extra one says there is more)."""
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM nodes WHERE ($2::uuid IS NULL OR id > $2)
            ORDER BY id LIMIT $3""",
        down_seconds, after, limit + 1,
    )
    return [_out(r) for r in rows]


async def get(conn: asyncpg.Connection, down_seconds: float, node_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM nodes WHERE id = $2", down_seconds,
                              node_id)
    if row is None:
        raise not_found("node", str(node_id))
    return _out(row)


async def delete(
    conn: asyncpg.Connection, actor: str, down_seconds: float, node_id: uuid.UUID
) -> None:
    """Retire a node that is down; a live node would only register again."""
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM nodes WHERE id = $2 FOR UPDATE", down_seconds, node_id
    )
    if row is None:
        raise not_found("node", str(node_id))
    if row["status"] == "up":
        raise conflict(f"node {row['name']} is up: stop it before retiring it")
    await conn.execute("DELETE FROM nodes WHERE id = $1", node_id)
    before = _out(row)
    await audit.record(conn, actor, "delete", "node", node_id,
                       {k: before[k] for k in ("name", "version", "last_seen_at")}, None)
