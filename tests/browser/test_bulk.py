"""Acting on many rows at once: Work's "replay all failed" for the current filter, with one
confirmation that names how many (issue 55)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.harness import BrowserThread, Visit, shot
from tests.integration.outbox import conftest as outbox
from tests.integration.outbox.conftest import emit, fast_outbox, lease, make_hook, wait_rows
from tests.support.receiver import Reply

# The outbox tests' fixtures: a trustme CA, hook.test → 127.0.0.1, a real HTTPS receiver.
ca, ca_file, hosts_file = outbox.ca, outbox.ca_file, outbox.hosts_file
hook_secret, receiver = outbox.hook_secret, outbox.receiver


@pytest.fixture
async def config_overrides(ca_file: str, hosts_file: Path,
                           hook_secret: bytes) -> dict[str, dict[str, Any]]:
    return {"outbox": fast_outbox(ca_file, hosts_file)}


async def test_replay_all_failed_with_one_confirmation(
    appliance: runtime.Running, tokens: dict, admin: httpx.AsyncClient,
    viewer: httpx.AsyncClient, receiver: Any, db: Any, browser: BrowserThread, base: str,
) -> None:
    hook = await make_hook(admin, receiver, name="lease-hook")
    receiver.reply_next(*[Reply(500, body=b"receiver broken")] * 12)  # 4 rows, 3 attempts each
    await emit(db, *[("lease.granted", lease(f"10.77.0.{n}")) for n in range(1, 5)])
    failed = await wait_rows(viewer, hook["id"], 4, "failed")

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/work")
        for tab in ("Webhooks", "DNS", "Alerts"):
            expect(page.get_by_role("tab", name=tab)).to_be_visible()
        rows = page.locator(".paged table.table tbody tr")
        expect(rows).to_have_count(4)
        expect(page.locator('tbody tr[data-state="failed"]')).to_have_count(4)
        expect(page.get_by_test_id("work-count")).to_have_text("4 deliveries")
        page.get_by_role("button", name="Replay all failed (4)").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Replay 4 failed webhook deliveries?")
        shot(page, "work-replay-all")
        dialog.get_by_role("button", name="Replay 4").click()
        expect(page.locator(".alert.ok")).to_have_text("Queued 4 deliveries for delivery again.")
        expect(rows).to_have_count(4)
        expect(page.locator('tbody tr[data-state="failed"]')).to_have_count(0)
        expect(page.locator("tbody .badge.failed")).to_have_count(0)
        expect(page.get_by_role("button", name="Replay all failed", exact=False)).to_have_count(0)
        v.go("#/work?kind=alert")
        expect(page.get_by_role("tab", name="Alerts")).to_have_attribute("aria-selected", "true")
        expect(page.get_by_test_id("work-count")).to_have_text("0 deliveries")

    await browser.run(base, drive, token=tokens["operator"])
    done = await wait_rows(viewer, hook["id"], 4, "delivered")
    assert {r["id"] for r in done} == {r["id"] for r in failed}
    replays = (await viewer.get("/audit", params={"object_type": "outbox",
                                                  "action": "replay"})).json()["items"]
    assert len(replays) == 4
