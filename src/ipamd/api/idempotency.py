"""Idempotency-Key for create POSTs: one creation per key, replayed for the same body
(docs/api-ipam.md, "Conventions").

Runs on the asyncio side inside the create's own transaction, so the key row and
the created object commit together. The key row is inserted first: a concurrent
request with the same key blocks on the unique index until the first commits,
then finds the stored answer — two requests with one key make one object.

Neither the key nor the response is stored in the clear: the row holds SHA-256 of
the key, and the response sealed with AES-GCM under a key derived from the
Idempotency-Key. A token's secret in a replayed 201 is therefore readable only by
whoever holds the Idempotency-Key, never from the database alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ipamd.api.errors import ApiError
from ipamd.core import jsonutil

MAX_KEY_LENGTH = 255


def _cipher(key: str, scope: str) -> AESGCM:
    material = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=scope.encode(), info=b"ipamd-idempotency"
    ).derive(key.encode())
    return AESGCM(material)


def seal(key: str, scope: str, body: Any) -> dict[str, str]:
    nonce = os.urandom(12)
    sealed = _cipher(key, scope).encrypt(nonce, jsonutil.dumps(body).encode(), None)
    return {"nonce": nonce.hex(), "sealed": sealed.hex()}


def unseal(key: str, scope: str, stored: dict[str, str]) -> Any:
    plain = _cipher(key, scope).decrypt(
        bytes.fromhex(stored["nonce"]), bytes.fromhex(stored["sealed"]), None
    )
    return json.loads(plain)


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ApiError(
            400, f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters"
        )
    return key


async def run_once(
    conn: asyncpg.Connection,
    scope: str,
    key: str,
    request_hash: bytes,
    ttl_seconds: int,
    fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
) -> tuple[int, Any, bool]:
    """Inside a transaction: create once per (scope, key); returns (status, body, replayed)."""
    key_hash = hashlib.sha256(key.encode()).hexdigest()
    # Claim the key; an expired record is taken over as if absent.
    claimed = await conn.fetchval(
        """INSERT INTO idempotency_keys (scope, key, request_hash)
           VALUES ($1, $2, $3)
           ON CONFLICT (scope, key) DO UPDATE
             SET request_hash = EXCLUDED.request_hash, status = NULL, response = NULL,
                 created_at = now()
             WHERE idempotency_keys.created_at < now() - make_interval(secs => $4)
           RETURNING true""",
        scope,
        key_hash,
        request_hash,
        float(ttl_seconds),
    )
    if not claimed:
        row = await conn.fetchrow(
            "SELECT request_hash, status, response FROM idempotency_keys"
            " WHERE scope = $1 AND key = $2",
            scope,
            key_hash,
        )
        if row is None or row["status"] is None:
            # The first request's transaction rolled back between our insert and read.
            raise ApiError(409, "a request with this Idempotency-Key is in progress; retry")
        if bytes(row["request_hash"]) != request_hash:
            raise ApiError(
                409, "Idempotency-Key was already used with a different request body", "conflict"
            )
        return row["status"], unseal(key, scope, row["response"]), True
    created = jsonutil.plain(await fn(conn, *args))
    await conn.execute(
        "UPDATE idempotency_keys SET status = 201, response = $3 WHERE scope = $1 AND key = $2",
        scope,
        key_hash,
        seal(key, scope, created),
    )
    return 201, created, False


async def purge_expired(conn: asyncpg.Connection, ttl_seconds: int) -> int:
    result = await conn.execute(
        "DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)",
        float(ttl_seconds),
    )
    return int(result.split()[-1])
