"""A list page asks for what it shows in one request a page, never one a row (docs/console.md): the
prefixes and a prefix's subnets come with their utilisation (?include=utilisation), and the
bars show the figures each item's own utilisation route gives."""

from __future__ import annotations

import re
import urllib.parse

import httpx
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.harness import BrowserThread, Visit

SUBNETS = 6


def _api_paths(visit: Visit) -> list[tuple[str, dict[str, list[str]]]]:
    """(path under /api/v1, query) of every API request the page made."""
    out = []
    for url in visit.requests:
        parts = urllib.parse.urlsplit(url)
        if parts.path.startswith("/api/v1/"):
            out.append((parts.path.removeprefix("/api/v1"), urllib.parse.parse_qs(parts.query)))
    return out


async def test_prefix_tree_reads_each_list_in_one_request(
    appliance: runtime.Running, tokens: dict[str, str], browser: BrowserThread, base: str,
    admin: httpx.AsyncClient,
) -> None:
    prefix = (await admin.post("/prefixes", json={"cidr": "127.78.0.0/16"})).json()
    for n in range(SUBNETS):  # a gateway in each: 1 of 254 used, 0.4 %
        made = await admin.post("/subnets", json={
            "prefix_id": prefix["id"], "cidr": f"127.78.{n}.0/24", "gateway": f"127.78.{n}.1"})
        assert made.status_code == 201, made.text
    figures = (await admin.get(f"/prefixes/{prefix['id']}/utilisation")).json()
    subnet_percent = (await admin.get(f"/subnets/{made.json()['id']}/utilisation")).json()

    def drive(v: Visit) -> list[tuple[str, dict[str, list[str]]]]:
        page = v.page
        v.go("#/prefixes")
        expect(page.get_by_role("img", name=re.compile(
            rf"^127\.78\.0\.0\/16 {figures['percent_used']:.1f}% used$"))).to_be_visible()
        page.get_by_text("127.78.0.0/16").click()  # the prefix's subnets, each with its bar
        bars = page.get_by_role("img", name=re.compile(
            rf"^127\.78\.\d\.0\/24 {subnet_percent['percent_used']:.1f}% used$"))
        expect(bars).to_have_count(SUBNETS)
        return _api_paths(v)

    calls = await browser.run(base, drive, token=tokens["viewer"])
    assert not [path for path, _ in calls if path.endswith("/utilisation")], calls
    lists = [(path, query) for path, query in calls if path in ("/prefixes", "/subnets")]
    assert [(path, query.get("include")) for path, query in lists] == [
        ("/prefixes", ["utilisation"]), ("/subnets", ["utilisation"])], calls
    assert lists[1][1]["prefix_id"] == [prefix["id"]]
