"""Bearer tokens and the loopback bootstrap (docs/security.md: roles, the first token).

Until the first token exists only loopback clients are served (as admin: it is the
box itself). After that every request carries ``Authorization: Bearer service_live_…``.

"Loopback" is not enough on its own: a web page open in a browser on the box, or a DNS
rebinding name that resolves to 127.0.0.1, reaches the loopback face too. So before the
first token a request must also name the box in its Host header, and a mutating one must
carry a JSON content type, which a page of another origin cannot send without a CORS
preflight that this API never grants (docs/security.md, "Bootstrap").
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import socket
from collections.abc import Iterable

import asyncpg

from ipamd.api.errors import ApiError
from ipamd.api.router import RANK, Caller, Role
from ipamd.api.token_cache import TokenCache, Verified
from ipamd.ipam import tokens
from ipamd.state import AppState

UNAUTHENTICATED = 'Bearer realm="ipamd"'
# Names that always mean this host (RFC 6761 §6.3: .localhost names are loopback).
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost",
                            "ip6-loopback"})
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@functools.lru_cache(maxsize=4096)  # asked twice a request; a client keeps its address
def is_loopback(remote: str) -> bool:
    try:
        address = ipaddress.ip_address(remote.split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_loopback


async def _lookup(conn: asyncpg.Connection, secret_hash: bytes) -> asyncpg.Record | None:
    row = await conn.fetchrow(
        """SELECT id, name, role, secret_hash, expires_at, revoked_at,
                  (expires_at IS NOT NULL AND expires_at <= now()) AS expired,
                  extract(epoch FROM expires_at - now())::float8 AS seconds_left,
                  (last_used_at IS NULL OR last_used_at < now() - interval '60 seconds') AS stale
           FROM tokens WHERE secret_hash = $1""",
        secret_hash,
    )
    if row is not None and row["stale"] and row["revoked_at"] is None:
        # last_used_at is advisory; written at most once a minute per token.
        await conn.execute("UPDATE tokens SET last_used_at = now() WHERE id = $1", row["id"])
    return row


async def _any_token(conn: asyncpg.Connection) -> bool:
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM tokens)"))


async def bootstrap_open(state: AppState) -> bool:
    if state.tokens_exist:
        return False
    state.tokens_exist = await state.db.run(_any_token)
    return not state.tokens_exist


def host_name(host: str) -> str:
    """The name in a Host header, without its port (RFC 9110 §7.2), lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def names_the_box(host: str | None, configured: Iterable[str]) -> bool:
    """Whether a Host header names this box: a loopback name or address, the host's own name,
    or a name in ``api.bootstrap_host_names``."""
    if not host:
        return False
    name = host_name(host)
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    if name == socket.gethostname().lower() or name in {n.lower() for n in configured}:
        return True
    return is_loopback(name)


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json"))


def check_bootstrap_request(
    method: str, host: str | None, content_type: str | None, configured: Iterable[str]
) -> None:
    """The rules a request must meet before the first token exists (besides loopback)."""
    if not names_the_box(host, configured):
        raise ApiError(
            403,
            "the appliance has no API token yet: the first one is minted only with a Host "
            "header that names this box (127.0.0.1, localhost, its host name or "
            "api.bootstrap_host_names)",
        )
    if method in MUTATING and not _is_json(content_type):
        raise ApiError(
            415,
            "the appliance has no API token yet: a request that changes something needs "
            "Content-Type: application/json",
        )


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": UNAUTHENTICATED})


async def authenticate(
    state: AppState, cache: TokenCache, remote: str, authorization: str | None
) -> Caller:
    loopback = is_loopback(remote)
    if await bootstrap_open(state):
        if not loopback:
            raise ApiError(
                403,
                "the appliance has no API token yet: mint the first one from the host itself "
                "(POST http://127.0.0.1:8080/api/v1/tokens)",
            )
        return Caller(role="admin", remote_ip=remote, loopback=True)
    if not authorization:
        raise _unauthorized("missing Authorization: Bearer token")
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret.startswith(tokens.PREFIX):
        raise _unauthorized("Authorization must be 'Bearer service_live_…'")
    digest = tokens.hash_secret(secret)
    verified = cache.get(digest)
    if verified is None:
        verified = await _verify(state, cache, digest)
    return Caller(
        role=verified.role,
        remote_ip=remote,
        loopback=loopback,
        token_id=verified.token_id,
        token_name=verified.name,
    )


async def _verify(state: AppState, cache: TokenCache, digest: bytes) -> Verified:
    """The token's row, checked; remembered in ``cache`` when it verifies."""
    generation = cache.generation
    row = await state.db.run(_lookup, digest)
    if row is None or not hmac.compare_digest(bytes(row["secret_hash"]), digest):
        raise _unauthorized("invalid token")
    if row["revoked_at"] is not None:
        raise _unauthorized("token has been revoked")
    if row["expired"]:
        raise _unauthorized("token has expired")
    verified = Verified(token_id=str(row["id"]), name=row["name"], role=row["role"],
                        digest=digest)
    cache.put(verified, generation, row["seconds_left"])
    return verified


def authorize(caller: Caller, required: Role) -> None:
    if RANK[caller.role] < RANK[required]:
        raise ApiError(403, f"this operation needs the {required} role; the token is {caller.role}")
