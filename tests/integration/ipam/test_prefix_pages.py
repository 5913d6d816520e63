"""GET /prefixes: every combination of filters with a cursor, page by page (ipam/prefixes.py
makes one statement a shape: the conditions given, the cursor's among them)."""

from __future__ import annotations

import itertools
from typing import Any

import httpx


async def _all_pages(admin: httpx.AsyncClient, params: dict[str, str]) -> list[str]:
    """Every prefix's CIDR, one per page, following next_cursor (bounded)."""
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(20):
        page = await admin.get("/prefixes", params={**params, "limit": "1",
                                                    **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        body: dict[str, Any] = page.json()
        seen += [item["cidr"] for item in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return seen
    raise AssertionError("more pages than prefixes")


async def test_every_filter_combination_pages_through_what_it_selects(admin) -> None:
    cidrs = ["10.77.0.0/16", "10.77.1.0/24", "10.77.2.0/24", "10.78.0.0/24"]
    made = {}
    for cidr in cidrs:
        reply = await admin.post("/prefixes", json={"cidr": cidr})
        assert reply.status_code == 201, reply.text
        made[cidr] = reply.json()
    tenant = made[cidrs[0]]["tenant_id"]
    filters = {"tenant_id": (tenant, set(cidrs)), "cidr": ("10.77.1.0/24", {"10.77.1.0/24"}),
               "contains": ("10.77.1.5", {"10.77.0.0/16", "10.77.1.0/24"}),
               "within": ("10.77.0.0/16", {"10.77.0.0/16", "10.77.1.0/24", "10.77.2.0/24"})}
    by_id = sorted(cidrs, key=lambda c: made[c]["id"])
    for n in range(len(filters) + 1):
        for names in itertools.combinations(filters, n):
            expected = set(cidrs).intersection(*(filters[name][1] for name in names))
            seen = await _all_pages(admin, {name: filters[name][0] for name in names})
            assert seen == [c for c in by_id if c in expected], names
