"""The database a node process works on: where it is, and made ready (created, migrated)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import asyncpg
import trio

from ipamd.config import Config, redact_dsn
from ipamd.db.bridge import Database, DatabaseRefused, run_once
from ipamd.db.cluster import Cluster, find_bin_dir
from ipamd.db.migrate import migrate

log = logging.getLogger("ipamd")


def database_dsn(config: Config) -> str:
    if config.database.dsn:
        return config.database.dsn
    return bundled_cluster(config).dsn(config.database.name)


def bundled_cluster(config: Config) -> Cluster:
    db = config.database
    return Cluster(
        data_dir=config.path(db.data_dir),
        socket_dir=config.path(db.socket_dir),
        bin_dir=find_bin_dir(db.bin_dir),
        superuser=db.user,
    )


async def _create_database(conn: asyncpg.Connection, name: str) -> bool:
    if await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
        return False
    # Identifiers cannot be parameters; the name comes from the TOML file and is quoted.
    await conn.execute(f'CREATE DATABASE "{name.replace(chr(34), "")}"')
    return True


async def _wait_for_bundled(config: Config) -> None:
    """Wait for the bundled Postgres (started beside us by supervisor); create our database."""
    admin = bundled_cluster(config).dsn("postgres")
    with trio.fail_after(config.database.connect_timeout_seconds):
        while True:
            try:
                if await run_once(admin, _create_database, config.database.name):
                    log.info("created database %s", config.database.name)
                return
            except (OSError, asyncpg.PostgresError) as error:
                log.info("waiting for bundled postgres: %s", error.__class__.__name__)
                await trio.sleep(0.5)


async def connect(config: Config, *, min_size: int | None = None, max_size: int | None = None,
                  settings: Mapping[str, str] | None = None) -> Database:
    """A pool on the configured database (sizes default to ``[database]``'s)."""
    db = config.database
    return await Database.connect(
        database_dsn(config),
        min_size=db.pool_min if min_size is None else min_size,
        max_size=db.pool_max if max_size is None else max_size,
        timeout=db.connect_timeout_seconds,
        settings=None if settings is None else dict(settings))


async def prepare_database(config: Config) -> Database:
    """Connect (waiting for Postgres), create the bundled database if needed, migrate."""
    if config.database.bundled:
        await _wait_for_bundled(config)
    try:
        db = await connect(config)
    except DatabaseRefused as error:
        where = (f"database.dsn = {redact_dsn(config.database.dsn)}" if config.database.dsn
                 else "the bundled postgres (database.user, database.name)")
        raise DatabaseRefused(f"the database refused the connection ({error}); "
                              f"check {where}") from None
    applied = await db.run(migrate)
    if applied:
        log.info("applied migrations %s", applied)
    return db
