"""API tokens: minted once, stored as SHA-256, revoked by delete (kept for the audit trail)."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from typing import Any

import asyncpg

from ipamd.core import audit
from ipamd.core.errors import NotFound, conflict, not_found
from ipamd.core.rows import fetch_one
from ipamd.core.tenancy import tenant_for_create

PREFIX = "service_live_"
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_COLUMNS = ("id, tenant_id, name, role, hint, created_at, updated_at, expires_at, last_used_at, "
            "revoked_at")


def new_secret() -> str:
    """service_live_ + 32 random bytes in base62 (43 characters; no punctuation to mangle)."""
    number = int.from_bytes(secrets.token_bytes(32), "big")
    digits = []
    for _ in range(43):
        number, digit = divmod(number, 62)
        digits.append(_ALPHABET[digit])
    return PREFIX + "".join(digits)


def hash_secret(secret: str) -> bytes:
    # The secret is 256 random bits: a fast hash is enough (no dictionary to attack).
    return hashlib.sha256(secret.encode()).digest()


def public(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "tenant_id": row["tenant_id"],
        "name": row["name"],
        "role": row["role"],
        "hint": row["hint"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "expires_at": row["expires_at"],
        "last_used_at": row["last_used_at"],
        "revoked": row["revoked_at"] is not None,
        "revoked_at": row["revoked_at"],
    }


async def create(
    conn: asyncpg.Connection,
    actor: str,
    name: str,
    role: str,
    expires_at: dt.datetime | None,
    require_no_tokens: bool,
    tenant_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Mint a token; the secret is in the returned value and nowhere else.

    ``tenant_id`` labels the token; it does not narrow what the token may reach
    (docs/security.md, "Roles")."""
    if require_no_tokens:
        # Bootstrap: serialise first mints so the loopback window closes exactly once; a
        # mint that waited for the lock behind another one finds a token and mints nothing.
        await conn.execute("LOCK TABLE tokens IN SHARE ROW EXCLUSIVE MODE")
        if await conn.fetchval("SELECT EXISTS (SELECT 1 FROM tokens)"):
            raise conflict(
                "the first token was minted by another request meanwhile: this one minted "
                "nothing; authenticate with a Bearer token")
    tenant = await tenant_for_create(conn, tenant_id)
    secret = new_secret()
    row = await fetch_one(
        conn,
        f"""INSERT INTO tokens (name, role, secret_hash, hint, expires_at, created_by, tenant_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {_COLUMNS}""",
        name,
        role,
        hash_secret(secret),
        secret[: len(PREFIX) + 4],
        expires_at,
        actor,
        tenant,
    )
    shown = public(row)
    await audit.record(conn, actor, "create", "token", row["id"], None, shown)
    return {**shown, "token": secret}


async def get(conn: asyncpg.Connection, token_id: Any) -> dict[str, Any]:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM tokens WHERE id = $1", token_id)
    if row is None:
        raise not_found("token", str(token_id))
    return public(row)


async def list_page(
    conn: asyncpg.Connection, after: Any, limit: int, include_revoked: bool,
    tenant_id: uuid.UUID | None = None,
) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {_COLUMNS} FROM tokens
            WHERE ($1::uuid IS NULL OR id > $1) AND ($3 OR revoked_at IS NULL)
              AND ($4::uuid IS NULL OR tenant_id = $4)
            ORDER BY id LIMIT $2""",
        after,
        limit + 1,
        include_revoked,
        tenant_id,
    )
    return [public(r) for r in rows]


async def revoke(conn: asyncpg.Connection, actor: str, token_id: Any) -> None:
    before = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM tokens WHERE id = $1 FOR UPDATE", token_id
    )
    if before is None:
        raise not_found("token", str(token_id))
    if before["revoked_at"] is not None:
        raise NotFound(f"token {token_id} is already revoked")
    after = await fetch_one(
        conn,
        f"""UPDATE tokens SET revoked_at = now(), updated_at = now() WHERE id = $1
            RETURNING {_COLUMNS}""",
        token_id,
    )
    await audit.record(conn, actor, "delete", "token", token_id, public(before), public(after))
