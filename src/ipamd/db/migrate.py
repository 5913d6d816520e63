"""Versioned SQL migrations: numbered files in db/migrations, tracked in schema_migrations.

Each file runs in its own transaction under an advisory lock, so several nodes
starting against one database apply each migration once; re-running is a no-op.
Asyncio side: call through the bridge (``db.run(migrate)`` or ``run_once``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

MIGRATION_LOCK = 0x1BA3D  # advisory lock key shared by every ipamd node
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    found = []
    for entry in resources.files("ipamd.db.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in {versions}")
    return found


class SchemaTooNew(Exception):
    """The database was migrated by a newer ipamd: refused, and left untouched."""


def latest() -> int:
    return available()[-1].version


async def refuse_newer(conn: asyncpg.Connection) -> None:
    """Raise SchemaTooNew when the database holds migrations this code does not know."""
    known = {m.version for m in available()}
    if await conn.fetchval("SELECT to_regclass('schema_migrations') IS NULL"):
        return
    unknown = [r["version"] for r in await conn.fetch(
        "SELECT version FROM schema_migrations WHERE version <> ALL($1::int[]) ORDER BY 1",
        list(known))]
    if unknown:
        raise SchemaTooNew(
            f"the database has schema version(s) {unknown} that this ipamd does not know "
            f"(it knows up to {max(known)}): it was upgraded by a newer ipamd. Run that version "
            "(or newer), or restore a backup made with this one. The database was not changed."
        )


async def migrate(conn: asyncpg.Connection, upto: int | None = None) -> list[int]:
    """Apply every migration not yet applied (up to ``upto``, for tests of upgrades);
    returns the versions applied now. A newer schema is refused before anything runs."""
    await refuse_newer(conn)
    async with conn.transaction():
        # Under the lock too: two nodes starting together on a fresh database would both
        # create the table, and one fails ("duplicate key ... pg_type_typname_nsp_index").
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
    applied_now = []
    for migration in available():
        if upto is not None and migration.version > upto:
            break
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            done = await conn.fetchval(
                "SELECT 1 FROM schema_migrations WHERE version = $1", migration.version
            )
            if done:
                continue
            await conn.execute(migration.sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
            applied_now.append(migration.version)
    return applied_now


async def schema_version(conn: asyncpg.Connection) -> int | None:
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return None
    version: int | None = await conn.fetchval("SELECT max(version) FROM schema_migrations")
    return version
