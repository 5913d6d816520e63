"""Tenants as every room sees them (every create accepts an optional tenant_id; left out,
the default tenant: docs/api-ipam.md, "Tenants"). The tenants resource itself is ipam/tenants.py."""

from __future__ import annotations

import uuid

import asyncpg

from ipamd.core.errors import invalid

# Fixed in 0002_ipam.sql so every node and every test agrees on it.
DEFAULT_TENANT = uuid.UUID("00000000-0000-7000-8000-000000000001")


async def tenant_for_create(
    conn: asyncpg.Connection, tenant_id: uuid.UUID | None, inherited: uuid.UUID | None = None
) -> uuid.UUID:
    """The tenant a new object belongs to: the given one (which must exist), else the parent's
    tenant for objects with a parent, else the default tenant."""
    if tenant_id is None:
        return inherited or DEFAULT_TENANT
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM tenants WHERE id = $1)", tenant_id):
        raise invalid("tenant_id", f"tenant {tenant_id} does not exist")
    if inherited is not None and tenant_id != inherited:
        raise invalid(
            "tenant_id", f"must be the parent's tenant {inherited} (or be left out)"
        )
    return tenant_id
