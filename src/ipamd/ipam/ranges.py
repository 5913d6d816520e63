"""Rules for the address ranges of a subnet (pools and excludes): shape, overlap, content."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from ipamd.core import validate
from ipamd.core.errors import invalid


def span(start: Any, end: Any) -> int:
    """Addresses from ``start`` to ``end`` inclusive (Python ints: exact for IPv6)."""
    return int(end) - int(start) + 1


def count_out(value: int, version: int) -> int | str:
    """An address count as the API shows it: IPv4 counts are JSON integers; IPv6 counts are
    exact decimal strings, since 2^64 and beyond do not survive a JSON parser's doubles
    (docs/api-ipam.md, "IPv6")."""
    return str(value) if version == 6 else value


def range_rules(net: validate.Network, start: validate.IPAddress,
                end: validate.IPAddress) -> None:
    """A range of host addresses of the subnet, in order (422 naming the field)."""
    for field, address in (("start_ip", start), ("end_ip", end)):
        reason = validate.host_in(net, address)
        if reason:
            raise invalid(field, reason)
    if int(end) < int(start):  # one family: both are hosts of ``net``
        raise invalid("end_ip", f"{end} is before start_ip {start}")


async def overlapping(
    conn: asyncpg.Connection, table: str, subnet_id: uuid.UUID,
    start: validate.IPAddress, end: validate.IPAddress, own: uuid.UUID | None,
) -> asyncpg.Record | None:
    """Another range of ``table`` (pools or excludes; from code) in the subnet that overlaps."""
    return await conn.fetchrow(
        f"""SELECT * FROM {table}
            WHERE subnet_id = $1 AND range && inetrange($2, $3, '[]') AND id IS DISTINCT FROM $4
            LIMIT 1""",
        subnet_id, start, end, own,
    )


async def lowest_inside(
    conn: asyncpg.Connection, table: str, subnet_id: uuid.UUID,
    start: validate.IPAddress, end: validate.IPAddress,
) -> asyncpg.Record | None:
    """The lowest single-address row of ``table`` (assignments or reservations) in the range."""
    return await conn.fetchrow(
        f"""SELECT * FROM {table}
            WHERE subnet_id = $1 AND ip BETWEEN $2 AND $3 ORDER BY ip LIMIT 1""",
        subnet_id, start, end,
    )
