"""`ipamd-import apply` at the license cap: a 402 stops the run cleanly with a summary
(docs/migrating.md)."""

from __future__ import annotations

import pytest

from tests.integration.importer.helpers import EXAMPLES, apply


@pytest.fixture
def config_overrides():
    return {"license": {"tier": "community", "max_managed_ips": 1}}


async def test_the_license_cap_stops_the_run_with_a_summary(appliance, tokens, viewer):
    path = str(EXAMPLES / "kea4/reservations.json")  # two reservations planned
    code, report, out = await apply(appliance, tokens["operator"], path)
    assert code == 4, out
    assert report.stopped is not None and report.stopped.startswith("the license cap")
    assert "license_limit" in report.stopped
    # prefix, subnet, pool and the first reservation were made; nothing after the 402
    assert [e.kind for e in report.entries] == ["prefix", "subnet", "pool", "reservation"]
    assert report.count("created") == 4
    assert "stopped after 4 of 5" in out
    license_now = (await viewer.get("/license")).json()
    assert license_now["managed_ips"] == 1
