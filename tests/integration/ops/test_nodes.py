"""Nodes: two appliance processes on one Postgres appear as two nodes; stopping one turns it
down and opens the node_down alert; an admin retires it. Dashboard and metrics in one go."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import httpx
import pytest
import trio

from ipamd import runtime
from tests.conftest import make_config
from tests.support.waiting import until

FAST = {"heartbeat_seconds": 0.2, "node_down_seconds": 1.0, "alert_interval_seconds": 0.3}


@pytest.fixture
def config_overrides() -> dict[str, dict[str, Any]]:
    return {"ops": FAST}


async def test_two_nodes_then_one_down(
    nursery: trio.Nursery, dsn: str, appliance: runtime.Running, admin: httpx.AsyncClient,
    viewer: httpx.AsyncClient,
) -> None:
    config_b = make_config(dsn, ops=FAST).model_copy(update={"node_name": "node-b"})
    b: runtime.Running = await nursery.start(
        lambda task_status: runtime.run(config_b, handle_signals=False, task_status=task_status))

    async def both_up() -> list[dict[str, Any]] | None:
        items = (await viewer.get("/nodes")).json()["items"]
        up = [n for n in items if n["status"] == "up" and n["services"].get("ops")]
        return items if len(up) == 2 else None

    items = await until(both_up, "two nodes up")
    names = {n["name"] for n in items}
    assert "node-b" in names and len(names) == 2
    node_b = next(n for n in items if n["name"] == "node-b")
    assert node_b["services"]["api"] is True
    assert node_b["addresses"]["api"] == b.binds
    one = await viewer.get(f"/nodes/{node_b['id']}")
    assert one.status_code == 200 and one.json()["pid"] == node_b["pid"]

    refused = await admin.delete(f"/nodes/{node_b['id']}")
    assert refused.status_code == 409, refused.text  # up: not retired
    assert (await viewer.delete(f"/nodes/{node_b['id']}")).status_code == 403

    b.stop.set()

    async def b_down() -> bool:
        found = (await viewer.get(f"/nodes/{node_b['id']}")).json()
        return found["status"] == "down" and not any(found["services"].values())

    await until(b_down, "node-b down")

    async def alert_open() -> list[dict[str, Any]]:
        items = (await viewer.get("/alerts", params={"status": "open"})).json()["items"]
        return [a for a in items if a["rule"] == "node_down" and a["subject"] == "node-b"]

    alert = (await until(alert_open, "node_down alert"))[0]
    assert alert["severity"] == "critical" and alert["cleared_at"] is None

    dash = (await viewer.get("/dashboard")).json()
    assert dash["nodes"]["up"] == 1 and dash["nodes"]["down"] == 1
    assert any(a["id"] == alert["id"] for a in dash["alerts"]["items"])
    assert len(dash["grants_per_minute"]) == 60

    # Retiring the node clears its alert (the subject is gone), once.
    assert (await admin.delete(f"/nodes/{node_b['id']}")).status_code == 204
    assert (await viewer.get(f"/nodes/{node_b['id']}")).status_code == 404

    async def cleared() -> list[dict[str, Any]]:
        items = (await viewer.get("/alerts")).json()["items"]
        return [a for a in items if a["id"] == alert["id"] and a["status"] == "cleared"]

    await until(cleared, "node_down alert cleared")
    audit = (await admin.get("/audit", params={"object_type": "alert"})).json()["items"]
    actions = sorted(e["action"] for e in audit if e["object_id"] == alert["id"])
    assert actions == ["clear", "open"]


async def test_metrics_text(appliance: runtime.Running, viewer: httpx.AsyncClient,
                            anon: httpx.AsyncClient) -> None:
    assert (await anon.get("/metrics")).status_code == 401
    await viewer.get("/nodes")
    reply = await viewer.get("/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    text = reply.text
    assert 'ipamd_api_request_duration_seconds_bucket{le="+Inf",method="GET",' \
        'route="/api/v1/nodes",status="2xx"}' in text
    assert "ipamd_leases{state=\"active\"} 0.0" in text
    assert "ipamd_lease_journal_rows 0.0" in text  # nothing waits to be derived
    assert "ipamd_lease_journal_oldest_seconds 0.0" in text
    promtool = shutil.which("promtool")
    if promtool:  # the Makefile installs prometheus (promtool) for make test
        checked = subprocess.run([promtool, "check", "metrics"], input=reply.content,
                                 capture_output=True, timeout=30, check=False)
        assert checked.returncode == 0, checked.stderr.decode() + checked.stdout.decode()
