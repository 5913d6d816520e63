"""Static DNS records, the resource: created in a zone, items at /dns-records/{id}.

Names: ``@`` (the apex), a name relative to the zone, or an absolute name inside it; stored
absolute, lowercase, without the trailing dot. Values are parsed by dnspython for their type
and stored in canonical presentation form (names absolute with a trailing dot). A CNAME
owns its name alone (RFC 1034 §3.6.2; RFC 2181 §10.1): no other record beside it.
Every change is audited, and its audit event is what the DNS fan-out turns into an outbox
row (kind dns) for the zone's server.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import asyncpg
import dns.exception
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype

from ipamd.core import audit, dnsname
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.core.tenancy import tenant_for_create
from ipamd.dns.common import fetch_unique

TYPES = ("A", "AAAA", "CNAME", "PTR", "TXT", "MX", "SRV", "NS")
COLUMNS = "r.id, r.tenant_id, r.zone_id, r.name, r.type, r.value, r.ttl, r.created_at, r.updated_at"
VALUE_MAX = 2000
# Owner labels: LDH plus the underscore of service names (_sip._tcp), or a leading wildcard.
_OWNER_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def owner_name(given: str, zone: str) -> str:
    """The absolute owner name (no trailing dot) of ``given`` in ``zone``; ValueError if bad."""
    text = given.strip().lower()
    if text in ("@", ""):
        return zone
    absolute = text.endswith(".")
    text = text.rstrip(".")
    if absolute or dnsname.in_zone(text, zone):
        if not dnsname.in_zone(text, zone):
            raise ValueError(f"{given!r} is not inside the zone {zone}")
        name = text
    else:
        name = f"{text}.{zone}"
    if len(name) > dnsname.NAME_MAX:
        raise ValueError("at most 253 characters")
    labels = name.split(".")
    for i, label in enumerate(labels):
        if label == "*" and i == 0:
            continue
        if not _OWNER_LABEL.match(label):
            raise ValueError(f"{given!r} is not a DNS name: labels of 1-63 letters, digits, "
                             "hyphens or underscores")
    return name


def canonical_value(rtype: str, value: str, zone: str) -> str:
    """The value parsed as ``rtype`` RDATA (relative names are in ``zone``); ValueError if bad."""
    if len(value) > VALUE_MAX:
        raise ValueError(f"at most {VALUE_MAX} characters")
    if any(ord(ch) < 0x20 for ch in value):
        raise ValueError("must not contain control characters")
    try:
        rdata = dns.rdata.from_text(
            dns.rdataclass.IN, dns.rdatatype.from_text(rtype), value,
            origin=dns.name.from_text(zone), relativize=False,
        )
    except (dns.exception.DNSException, ValueError, UnicodeError) as error:
        raise ValueError(f"not a valid {rtype} value: {error}") from None
    return rdata.to_text()


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in (
        "id", "tenant_id", "zone_id", "name", "type", "value", "ttl", "created_at", "updated_at")}


async def _zone(conn: asyncpg.Connection, zone_id: uuid.UUID) -> asyncpg.Record:
    # FOR UPDATE: record changes in one zone are serialised, so CNAME exclusivity holds.
    zone = await conn.fetchrow(
        "SELECT id, name, tenant_id FROM dns_zones WHERE id = $1 FOR UPDATE", zone_id)
    if zone is None:
        raise not_found("DNS zone", str(zone_id))
    return zone


async def _exclusive(
    conn: asyncpg.Connection, zone: asyncpg.Record, name: str, rtype: str,
    own: uuid.UUID | None,
) -> None:
    if rtype == "CNAME" and name == zone["name"]:
        raise invalid("type", "a CNAME cannot be at the zone apex (it holds SOA and NS)")
    others = await conn.fetch(
        """SELECT type FROM dns_records
           WHERE zone_id = $1 AND name = $2 AND id IS DISTINCT FROM $3""",
        zone["id"], name, own,
    )
    types = {r["type"] for r in others}
    if rtype == "CNAME" and types:
        raise conflict(f"name: {name} already has {', '.join(sorted(types))} records; a CNAME "
                       "must be the only record at its name")
    if rtype != "CNAME" and "CNAME" in types:
        raise conflict(f"name: {name} is a CNAME; no other record may share its name")


def _check(zone: asyncpg.Record, given: dict[str, Any]) -> tuple[str, str]:
    try:
        name = owner_name(given["name"], zone["name"])
    except ValueError as error:
        raise invalid("name", str(error)) from None
    try:
        value = canonical_value(given["type"], given["value"], zone["name"])
    except ValueError as error:
        raise invalid("value", str(error)) from None
    return name, value


def _dup(name: str, rtype: str) -> str:
    return f"value: {name} already has this {rtype} record"


async def create(
    conn: asyncpg.Connection, actor: str, zone_id: uuid.UUID, values: dict[str, Any]
) -> dict[str, Any]:
    zone = await _zone(conn, zone_id)
    name, value = _check(zone, values)
    await _exclusive(conn, zone, name, values["type"], None)
    # A record keeps its zone's tenant (as a pool keeps its subnet's).
    tenant_id = await tenant_for_create(conn, values.get("tenant_id"), zone["tenant_id"])
    row = await fetch_unique(
        conn, _dup(name, values["type"]),
        f"""INSERT INTO dns_records AS r (zone_id, name, type, value, ttl, tenant_id)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}""",
        zone_id, name, values["type"], value, values.get("ttl"), tenant_id,
    )
    await audit.record(conn, actor, "create", "dns_record", row["id"], None, public(row))
    return public(row)


async def get(conn: asyncpg.Connection, record_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM dns_records r WHERE r.id = $1", record_id)
    if row is None:
        raise not_found("DNS record", str(record_id))
    return public(row)


async def list_page(
    conn: asyncpg.Connection, zone_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    if await conn.fetchval("SELECT 1 FROM dns_zones WHERE id = $1", zone_id) is None:
        raise not_found("DNS zone", str(zone_id))
    rows = await conn.fetch(
        f"""SELECT {COLUMNS} FROM dns_records r
            WHERE r.zone_id = $1 AND ($2::uuid IS NULL OR r.id > $2) ORDER BY r.id LIMIT $3""",
        zone_id, after, limit + 1,
    )
    return [public(r) for r in rows]


async def update(
    conn: asyncpg.Connection, actor: str, record_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    zone_id = await conn.fetchval("SELECT zone_id FROM dns_records WHERE id = $1", record_id)
    if zone_id is None:
        raise not_found("DNS record", str(record_id))
    zone = await _zone(conn, zone_id)
    before = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM dns_records r WHERE r.id = $1 FOR UPDATE", record_id
    )
    if before is None:
        raise not_found("DNS record", str(record_id))
    for field in ("name", "type", "value"):
        if field in changes and changes[field] is None:
            raise invalid(field, "must not be null")
    if not changes:
        return public(before)
    merged = {**public(before), **changes}
    name, value = _check(zone, merged)
    await _exclusive(conn, zone, name, merged["type"], record_id)
    after = await fetch_unique(
        conn, _dup(name, merged["type"]),
        f"""UPDATE dns_records AS r SET name = $2, type = $3, value = $4, ttl = $5,
                updated_at = now() WHERE r.id = $1 RETURNING {COLUMNS}""",
        record_id, name, merged["type"], value, merged["ttl"],
    )
    await audit.record(conn, actor, "update", "dns_record", record_id, public(before),
                       public(after))
    return public(after)


async def delete(conn: asyncpg.Connection, actor: str, record_id: uuid.UUID) -> None:
    before = await conn.fetchrow(
        f"DELETE FROM dns_records r WHERE r.id = $1 RETURNING {COLUMNS}", record_id
    )
    if before is None:
        raise not_found("DNS record", str(record_id))
    await audit.record(conn, actor, "delete", "dns_record", record_id, public(before), None)
