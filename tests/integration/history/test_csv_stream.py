"""CSV without a limit streams the whole answer, a page at a time (pages shrunk to 3 rows)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from tests.integration.history.dhcp_clients import Client


@pytest.fixture
def config_overrides(config_overrides: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {**config_overrides, "limits": {"page_max": 3}}


async def test_csv_without_limit_streams_every_page(viewer, net):
    grace = Client(mac="02:00:00:00:10:01", hostname="grace")
    for _ in range(7):
        ip = await net.dhcp.grant(grace)
        await net.dhcp.release(grace, ip)
    reply = await viewer.get("/history", params={"mac": grace.mac, "format": "csv"})
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/csv")
    lines = reply.text.splitlines()
    assert sum(line.startswith("ip,mac,") for line in lines) == 1  # one header, first
    rows = list(csv.DictReader(io.StringIO(reply.text)))
    assert len(rows) == 7 and len({r["lease_id"] for r in rows}) == 7
    assert [r["from"] for r in rows] == sorted(r["from"] for r in rows)
