"""DNS servers, the resource: where dynamic and static changes are sent, and how.

bind_tsig: ``address``/``port`` with a TSIG key (``tsig_key_name``, ``tsig_algorithm``, the
base64 secret behind ``secret_ref``). powerdns_http: ``api_url`` (…/api/v1, SSRF rules as for
webhooks), ``pdns_server_id``, the X-API-Key behind ``secret_ref``. The secret itself is never
stored, returned or audited (the reference is redacted in audit entries).
"""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

import asyncpg

from ipamd.core import audit, validate
from ipamd.core.errors import conflict, invalid, not_found
from ipamd.core.rows import fetch_one
from ipamd.core.secret_locations import redacted
from ipamd.core.tenancy import tenant_for_create
from ipamd.dns.common import fetch_unique, page_sql
from ipamd.outbox import secrets
from ipamd.outbox.urlguard import UrlRefused, check_url

ADAPTERS = ("bind_tsig", "powerdns_http", "ad_gsstsig", "embedded")
TSIG_ALGORITHMS = ("hmac-sha256", "hmac-sha384", "hmac-sha512", "hmac-sha224", "hmac-sha1")
COLUMNS = ("id, tenant_id, name, adapter, host(address) AS address, port, tsig_key_name, "
           "tsig_algorithm, api_url, pdns_server_id, secret_ref, krb_realm, krb_principal, "
           "keytab_path, krb_service_host, created_at, updated_at")
UPDATABLE = ("name", "address", "port", "tsig_key_name", "tsig_algorithm", "api_url",
             "pdns_server_id", "secret_ref", "krb_realm", "krb_principal", "keytab_path",
             "krb_service_host")
GSS_FIELDS = ("address", "krb_principal", "keytab_path", "krb_service_host")
DEFAULTS: dict[str, Any] = {
    "address": None, "port": 53, "tsig_key_name": None, "tsig_algorithm": "hmac-sha256",
    "api_url": None, "pdns_server_id": "localhost", "secret_ref": None, "krb_realm": None,
    "krb_principal": None, "keytab_path": None, "krb_service_host": None,
}


# ---- field rules (ValueError; the caller names the field)

def check_api_url(value: str) -> str:
    try:
        check_url(value)
    except UrlRefused as error:
        raise ValueError(str(error).removeprefix("url: ")) from None
    return value.rstrip("/")


def check_secret_ref(value: str) -> str:
    secrets.parse_ref(value)
    return value


def check_key_name(value: str) -> str:
    return validate.dns_name(value)


def check_address(value: str) -> str:
    return str(validate.ip_address(value))


def check_keytab(value: str) -> str:
    """An absolute path (the file itself is checked, 0600, when it is used)."""
    if not value.startswith("/") or any(ord(ch) < 0x20 for ch in value) or ".." in value.split("/"):
        raise ValueError("must be an absolute path without '..' or control characters")
    return value


def check_realm(value: str) -> str:
    """A Kerberos realm, case kept (realms are case-sensitive: AD.EXAMPLE)."""
    validate.hostname(value)
    return value.strip()


def check_principal(value: str) -> str:
    if not value or len(value) > 255 or any(ord(ch) < 0x21 for ch in value):
        raise ValueError("a Kerberos principal such as ipamd@AD.EXAMPLE (no spaces)")
    return value


def _adapter_rules(s: dict[str, Any]) -> None:
    if s["adapter"] == "bind_tsig":
        for field in ("address", "tsig_key_name"):
            if not s.get(field):
                raise invalid(field, "required when adapter is bind_tsig")
    if s["adapter"] == "powerdns_http" and not s.get("api_url"):
        raise invalid("api_url", "required when adapter is powerdns_http")
    if s["adapter"] == "ad_gsstsig":
        for field in GSS_FIELDS:
            if not s.get(field):
                raise invalid(field, "required when adapter is ad_gsstsig")
    if s["adapter"] not in ("embedded", "ad_gsstsig") and not s.get("secret_ref"):
        raise invalid("secret_ref", f"required when adapter is {s['adapter']}")


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in (
        "id", "tenant_id", "name", "adapter", "address", "port", "tsig_key_name", "tsig_algorithm",
        "api_url", "pdns_server_id", "secret_ref", "krb_realm", "krb_principal", "keytab_path",
        "krb_service_host", "created_at", "updated_at")}


def audited(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = redacted(public(row))
    return shown


def _dup(name: str) -> str:
    return f"name: a DNS server named {name!r} already exists"


def _inet(value: str | None) -> Any:
    return None if value is None else ipaddress.ip_address(value)


async def create(conn: asyncpg.Connection, actor: str, values: dict[str, Any]) -> dict[str, Any]:
    s = {**DEFAULTS, **values}
    _adapter_rules(s)
    tenant_id = await tenant_for_create(conn, s.get("tenant_id"))
    row = await fetch_unique(
        conn, _dup(s["name"]),
        f"""INSERT INTO dns_servers (name, adapter, address, port, tsig_key_name, tsig_algorithm,
                                     api_url, pdns_server_id, secret_ref, krb_realm,
                                     krb_principal, keytab_path, krb_service_host, tenant_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            RETURNING {COLUMNS}""",
        s["name"], s["adapter"], _inet(s["address"]), s["port"], s["tsig_key_name"],
        s["tsig_algorithm"], s["api_url"], s["pdns_server_id"], s["secret_ref"],
        s["krb_realm"], s["krb_principal"], s["keytab_path"], s["krb_service_host"], tenant_id,
    )
    await audit.record(conn, actor, "create", "dns_server", row["id"], None, audited(row))
    return public(row)


async def get(conn: asyncpg.Connection, server_id: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM dns_servers WHERE id = $1", server_id)
    if row is None:
        raise not_found("DNS server", str(server_id))
    return public(row)


async def list_page(
    conn: asyncpg.Connection, tenant_id: uuid.UUID | None, after: uuid.UUID | None, limit: int
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        page_sql(COLUMNS, "dns_servers", "($3::uuid IS NULL OR tenant_id = $3)"),
        after, limit + 1, tenant_id,
    )
    return [public(r) for r in rows]


async def update(
    conn: asyncpg.Connection, actor: str, server_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    before = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM dns_servers WHERE id = $1 FOR UPDATE", server_id
    )
    if before is None:
        raise not_found("DNS server", str(server_id))
    for name, value in changes.items():
        if value is None and name not in ("address", "tsig_key_name", "api_url", "secret_ref",
                                          "krb_realm", "krb_principal", "keytab_path",
                                          "krb_service_host"):
            raise invalid(name, "must not be null")
    columns = [name for name in UPDATABLE if name in changes]
    if not columns:
        return public(before)
    _adapter_rules({**dict(before), **changes})
    sets = ", ".join(f"{name} = ${i}" for i, name in enumerate(columns, start=2))
    values = [_inet(changes[n]) if n == "address" else changes[n] for n in columns]
    after = await fetch_unique(
        conn, _dup(str(changes.get("name"))),
        f"UPDATE dns_servers SET {sets}, updated_at = now() WHERE id = $1 RETURNING {COLUMNS}",
        server_id, *values,
    )
    await audit.record(conn, actor, "update", "dns_server", server_id, audited(before),
                       audited(after))
    return public(after)


async def delete(conn: asyncpg.Connection, actor: str, server_id: uuid.UUID) -> None:
    before = await conn.fetchrow(
        f"SELECT {COLUMNS} FROM dns_servers WHERE id = $1 FOR UPDATE", server_id
    )
    if before is None:
        raise not_found("DNS server", str(server_id))
    users = await fetch_one(
        conn,
        """SELECT (SELECT count(*) FROM dns_zones WHERE server_id = $1) AS zones,
                  (SELECT count(*) FROM subnets WHERE ddns_server_id = $1) AS subnets""",
        server_id,
    )
    if users["zones"] or users["subnets"]:
        raise conflict(f"the DNS server is still used by {users['zones']} zone(s) and "
                       f"{users['subnets']} subnet(s)")
    try:
        async with conn.transaction():
            await conn.execute("DELETE FROM dns_servers WHERE id = $1", server_id)
    except asyncpg.ForeignKeyViolationError:  # a zone or subnet took it meanwhile
        raise conflict("the DNS server is still used by a zone or a subnet") from None
    await audit.record(conn, actor, "delete", "dns_server", server_id, audited(before), None)
