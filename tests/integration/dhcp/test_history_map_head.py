"""history_map_head (the "As of" map's entry of an interval) is inlined into the statements
that call it, and says what it said (migration 0026). Declared IMMUTABLE around the STABLE
to_json(), the planner kept it a function call: one pass through the SQL function executor
for every interval the lease journal's derivation wrote."""

from __future__ import annotations

from typing import Any

import pytest

from ipamd.db.bridge import Database

_CALL = ("SELECT history_map_head(ip, mac, hostname, fqdn) FROM (VALUES "
         "($1::inet, $2::macaddr, $3::text, $4::text)) AS v(ip, mac, hostname, fqdn)")


async def test_the_planner_inlines_it(db: Database) -> None:
    async def run(conn: Any) -> str:
        rows = await conn.fetch(
            "EXPLAIN (VERBOSE) SELECT history_map_head(ip, mac, hostname, fqdn) "
            "FROM lease_intervals")
        return "\n".join(r[0] for r in rows)

    plan = await db.transaction(run)
    assert "history_map_head" not in plan, plan
    assert "to_json" in plan, plan  # its body, in the statement's own expression


@pytest.mark.parametrize(("args", "head"), [
    (("10.77.0.5", "02:00:00:00:00:01", "pc", None), '["10.77.0.5","02:00:00:00:00:01","pc","'),
    (("2001:db8::5", None, None, "h.example."), '["2001:db8::5",null,"h.example.","'),
    (("2001:db8::6", None, 'he said "hi"', "f."), '["2001:db8::6",null,"he said \\"hi\\"","'),
    (("10.77.0.6", None, None, None), '["10.77.0.6",null,null,"'),
])
async def test_the_entry_is_unchanged(db: Database, args: tuple[Any, ...], head: str) -> None:
    async def run(conn: Any) -> str:
        value: str = await conn.fetchval(_CALL, *args)
        return value

    assert await db.transaction(run) == head
