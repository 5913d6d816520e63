"""Pool use over time (docs/operations-monitoring.md): the ops service samples every pool's use into
pool_use_samples, keeps ops.pool_sample_retention_days of it, and GET /dashboard/pool-use
returns it; IPv6 pool sizes as decimal strings."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.ops import pool_samples
from tests.integration.dhcp.harness import seed_subnet
from tests.integration.ipam.helpers import error_of, insert_lease
from tests.support.waiting import until

V6_POOL = ("2001:db8:77:1::1000", "2001:db8:77:1:ffff:ffff:ffff:ffff")


@pytest.fixture
async def plan(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> dict[str, Any]:
        v4 = await seed_subnet(conn, "127.77.0.0/24", pools=[("127.77.0.10", "127.77.0.19")])
        for n in (10, 11, 12):
            await insert_lease(conn, v4["subnet_id"], f"127.77.0.{n}", "active",
                               f"02:00:00:00:00:{n:02x}")
        await insert_lease(conn, v4["subnet_id"], "127.77.0.13", "expired", "02:00:00:00:00:13")
        v6 = await seed_subnet(conn, "2001:db8:77:1::/64", gateway=None, pools=[V6_POOL])
        await insert_lease(conn, v6["subnet_id"], "2001:db8:77:1::1000", "active", None,
                           "000300010200000000c1")
        # A sample past retention (7 days by default): the next sample deletes it.
        await conn.execute(
            "INSERT INTO pool_use_samples (at, pool_id, used, size)"
            " VALUES (now() - interval '8 days', $1, 1, 10)", v4["pool_ids"][0])
        return {"v4": v4["pool_ids"][0], "v6": v6["pool_ids"][0]}

    return await db.transaction(seed)


@pytest.fixture
def config_overrides(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"ops": {"pool_sample_seconds": 3600.0}}  # one sample, at start


async def test_sampler_records_each_pool_and_the_api_returns_it(
    appliance: runtime.Running, db: Database, viewer: Any, plan: dict[str, Any],
) -> None:
    async def rows() -> list[Any]:
        return await db.run(lambda c: c.fetch(
            "SELECT pool_id, used, size, at > now() - interval '1 day' AS fresh"
            " FROM pool_use_samples ORDER BY at"))

    found = await until(lambda: _fresh(rows), "the sampler's first sample")
    assert sorted((r["pool_id"], r["used"], int(r["size"])) for r in found) == sorted([
        (plan["v4"], 3, 10), (plan["v6"], 1, 2**64 - 0x1000)])
    assert all(r["fresh"] for r in await rows())  # the 8-day-old row is gone

    # The same minute is not sampled twice (another node, or this one again).
    assert await db.transaction(pool_samples.sample, 3600.0, 7) is None

    body = (await viewer.get("/dashboard/pool-use")).json()
    assert body["interval_seconds"] == 3600.0
    by_pool = {item["pool_id"]: item for item in body["items"]}
    assert set(by_pool) == {str(plan["v4"]), str(plan["v6"])}
    assert (by_pool[str(plan["v4"])]["used"], by_pool[str(plan["v4"])]["size"],
            by_pool[str(plan["v4"])]["percent_used"]) == (3, 10, 30.0)
    assert by_pool[str(plan["v6"])]["size"] == str(2**64 - 0x1000)  # exact, as a string
    assert by_pool[str(plan["v4"])]["cidr"] == "127.77.0.0/24"

    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    assert (await viewer.get("/dashboard/pool-use", params={"since": later})).json()[
        "items"] == []
    error_of(await viewer.get("/dashboard/pool-use", params={"since": "2026-01-01T00:00:00"}),
             400, "bad_request")  # no zone: which moment is meant is unknown
    error_of(await viewer.get("/dashboard/pool-use",
                              params={"since": "0001-01-01T00:00:00+14:00"}),
             400, "bad_request")  # before year 1 in UTC


async def _fresh(rows: Any) -> list[Any] | None:
    found = await rows()
    return [r for r in found if r["fresh"]] or None
