"""NetBox-style export and import of prefixes (docs/api-ipam.md): field names as NetBox's bulk
import.

Import only ever creates prefixes that are missing; existing ones are reported as
skipped, and pools, reservations and leases are never touched. NetBox columns this
model has no place for (status, vrf, site, vlan, role, is_pool, ...) are accepted
and ignored, so a NetBox export file imports as it is.
"""

from __future__ import annotations

import csv
import io
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.core import audit, validate
from ipamd.core.errors import invalid
from ipamd.ipam import prefixes
from ipamd.ipam.dberrors import guarded
from ipamd.ipam.rows import DEFAULT_TENANT

FIELDS = ("prefix", "status", "tenant", "vrf", "is_pool", "mark_utilized", "description",
          "comments", "tags")
MAX_ROWS = 10_000
MAX_DESCRIPTION = 1000


async def export(conn: asyncpg.Connection, tenant_id: uuid.UUID | None) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT p.cidr, p.description, t.name AS tenant, t.id AS tenant_id
           FROM prefixes p JOIN tenants t ON t.id = p.tenant_id
           WHERE ($1::uuid IS NULL OR p.tenant_id = $1)
           ORDER BY family(p.cidr), p.cidr, t.name""",
        tenant_id,
    )
    return [
        {
            "prefix": str(r["cidr"]),
            "status": "active",
            "tenant": r["tenant"],
            "vrf": None,
            "is_pool": False,
            "mark_utilized": False,
            "description": r["description"],
            "comments": "",
            "tags": [],
        }
        for r in rows
    ]


def _cell(value: Any) -> str:
    # NetBox's CSV conventions: empty for none, true/false, comma-joined tags.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def to_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    for row in rows:
        writer.writerow([_cell(row[f]) for f in FIELDS])
    return out.getvalue()


@dataclass(frozen=True)
class Row:
    index: int
    prefix: Any  # an ipaddress network
    tenant: str | None
    description: str


def _name(value: Any) -> str | None:
    """A NetBox reference: a plain name, or the API's nested {"name": ..., "slug": ...}."""
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        value = value.get("name") or value.get("slug")
    return value if isinstance(value, str) and value else None


def _row(index: int, item: Any, where: str) -> Row:
    if not isinstance(item, dict):
        raise invalid(f"{where}[{index}]", "must be an object with a prefix field")
    raw = item.get("prefix")
    if not isinstance(raw, str):
        raise invalid(f"{where}[{index}].prefix", "required (a CIDR such as 10.0.0.0/16)")
    try:
        network = validate.network(raw)
    except ValueError as error:
        raise invalid(f"{where}[{index}].prefix", str(error)) from None
    description = item.get("description") or ""
    if not isinstance(description, str):
        raise invalid(f"{where}[{index}].description", "must be a string")
    try:
        description = validate.clean_text(description, max_length=MAX_DESCRIPTION,
                                          multiline=True)
        tenant = _name(item.get("tenant"))
        if tenant is not None:
            tenant = validate.clean_text(tenant, max_length=100)
    except ValueError as error:
        raise invalid(f"{where}[{index}]", str(error)) from None
    return Row(index, network, tenant, description)


def parse_csv(text: str) -> list[Row]:
    if "\x00" in text:
        raise invalid("csv", "must not contain NUL characters")
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    try:
        if reader.fieldnames is None:
            raise invalid("csv", "empty: the first line names the columns (prefix,tenant,...)")
        reader.fieldnames = [name.strip().lower() for name in reader.fieldnames]
        if "prefix" not in reader.fieldnames:
            raise invalid("csv", "the header line has no prefix column")
        rows = []
        for index, item in enumerate(reader):
            if index >= MAX_ROWS:
                raise invalid("csv", f"at most {MAX_ROWS} rows per import")
            rows.append(_row(index, {k: v for k, v in item.items() if k is not None}, "csv"))
    except csv.Error as error:
        raise invalid("csv", f"line {reader.line_num}: {error}") from None
    return rows


def parse_json(items: list[Any]) -> list[Row]:
    if len(items) > MAX_ROWS:
        raise invalid("prefixes", f"at most {MAX_ROWS} rows per import")
    return [_row(index, item, "prefixes") for index, item in enumerate(items)]


@guarded
async def import_rows(
    conn: asyncpg.Connection, actor: str, rows: list[Row], tenant_id: uuid.UUID | None
) -> dict[str, Any]:
    default = tenant_id or DEFAULT_TENANT
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM tenants WHERE id = $1)", default):
        raise invalid("tenant_id", f"tenant {default} does not exist")
    names = {row.tenant for row in rows if row.tenant is not None}
    known = {
        r["name"]: r["id"]
        for r in await conn.fetch("SELECT id, name FROM tenants WHERE name = ANY($1)",
                                  list(names))
    }
    created: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    seen: set[tuple[uuid.UUID, str]] = set()
    for row in rows:
        cidr = str(row.prefix)
        if row.tenant is not None and row.tenant not in known:
            skipped.append({"row": row.index, "prefix": cidr, "tenant": row.tenant,
                            "reason": f"tenant {row.tenant!r} does not exist", "id": None})
            continue
        owner = known[row.tenant] if row.tenant is not None else default
        if (owner, cidr) in seen:
            skipped.append({"row": row.index, "prefix": cidr, "tenant": row.tenant,
                            "reason": "repeated in this import", "id": None})
            continue
        seen.add((owner, cidr))
        # ON CONFLICT: a prefix created concurrently is "already there", not an error.
        made = await conn.fetchrow(
            f"""INSERT INTO prefixes (tenant_id, cidr, description) VALUES ($1, $2, $3)
                ON CONFLICT ON CONSTRAINT prefixes_tenant_cidr DO NOTHING
                RETURNING {prefixes.COLUMNS}""",
            owner, row.prefix, row.description,
        )
        if made is None:
            existing = await conn.fetchval(
                "SELECT id FROM prefixes WHERE tenant_id = $1 AND cidr = $2", owner, row.prefix
            )
            skipped.append({"row": row.index, "prefix": cidr, "tenant": row.tenant,
                            "reason": "already exists", "id": existing})
            continue
        out = prefixes.public(made)
        await audit.record(conn, actor, "create", "prefix", made["id"], None, out)
        created.append(out)
    return {"created": created, "skipped": skipped,
            "created_count": len(created), "skipped_count": len(skipped)}
