"""The admin-editable settings resource (the `settings` table): trusted DHCP relays.

Asyncio-side units (``fn(conn, ...)``) for the API; the DHCP plan loader reads the same
rows. Every change is audited in its own transaction, and the settings trigger makes every
node's DHCP server reload its plan.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import asyncpg

from ipamd.core import audit

TRUSTED_RELAYS = "dhcp.trusted_relays"

# Known keys and their defaults; GET shows every one of them.
DEFAULTS: dict[str, Any] = {TRUSTED_RELAYS: []}
# API field name -> settings key.
FIELDS: dict[str, str] = {"trusted_relays": TRUSTED_RELAYS}


def normalise_relays(items: list[str]) -> list[str]:
    """Canonical, de-duplicated entries: an address, or a network in CIDR form.

    Raises ValueError naming the bad entry.
    """
    out: list[str] = []
    for item in items:
        text = item.strip()
        try:
            if "/" in text:
                net = ipaddress.IPv4Network(text, strict=False)
                value = str(net.network_address) if net.prefixlen == 32 else str(net)
            else:
                value = str(ipaddress.IPv4Address(text))
        except ValueError:
            raise ValueError(f"{item!r} is not an IPv4 address or network") from None
        if value not in out:
            out.append(value)
    return out


async def read(conn: asyncpg.Connection) -> dict[str, Any]:
    """Every known setting (defaults filled in) and the newest change time."""
    rows = await conn.fetch(
        "SELECT key, value, updated_at FROM settings WHERE key = ANY($1::text[])",
        list(DEFAULTS),
    )
    values = dict(DEFAULTS)
    updated = None
    for row in rows:
        values[row["key"]] = row["value"]
        if updated is None or row["updated_at"] > updated:
            updated = row["updated_at"]
    shown = {field: values[key] for field, key in FIELDS.items()}
    shown["updated_at"] = updated
    return shown


async def update(conn: asyncpg.Connection, actor: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply ``changes`` (API field -> value, already validated); audited as one entry."""
    await conn.execute("LOCK TABLE settings IN SHARE ROW EXCLUSIVE MODE")
    before = await read(conn)
    for field, value in changes.items():
        await conn.execute(
            """INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, now())
               ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()""",
            FIELDS[field],
            value,
        )
    after = await read(conn)
    await audit.record(conn, actor, "update", "settings", "settings",
                       _without_time(before), _without_time(after))
    return after


def _without_time(shown: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in shown.items() if k != "updated_at"}
