"""Two nodes starting together on a fresh database (found by `make ha-lab`): both migrate
at once, and both must succeed, each migration applied once."""

from __future__ import annotations

import uuid
from typing import Any

import trio

from ipamd.db.bridge import run_once
from ipamd.db.migrate import available, migrate
from tests.support.postgres import PgServer


async def test_two_nodes_migrate_a_fresh_database_together(pg: PgServer, aio: Any) -> None:
    name = f"fresh_{uuid.uuid4().hex[:12]}"
    await run_once(pg.dsn("postgres"), lambda conn: conn.execute(f'CREATE DATABASE "{name}"'))
    try:
        applied: list[list[int]] = []

        async def node() -> None:
            applied.append(await run_once(pg.dsn(name), migrate))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(node)
        everything = [m.version for m in available()]
        assert sorted(v for a in applied for v in a) == everything
        rows = await run_once(pg.dsn(name), lambda conn: conn.fetchval(
            "SELECT count(*) FROM schema_migrations"))
        assert rows == len(everything)
    finally:
        await run_once(pg.dsn("postgres"),
                       lambda conn: conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)'))
