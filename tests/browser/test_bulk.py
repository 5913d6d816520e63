"""Tables that sort, count, export and act on many rows at once (docs/console.md): Work's "replay all
failed" for the current filter with one confirmation that names how many; leases and audit
sorted by a header click, their totals ("2 of 5"), CSV of what the filter selects, and a bulk
release of three leases granted by the real DHCP server."""

from __future__ import annotations

import csv
import io
import ipaddress
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.conftest import XSS_HOSTNAME
from tests.browser.conftest import lease as dhcp_lease
from tests.browser.harness import BrowserThread, Visit, shot
from tests.integration.dhcp.harness import dhcp_section
from tests.integration.outbox import conftest as outbox
from tests.integration.outbox.conftest import emit, fast_outbox, lease, make_hook, wait_rows
from tests.support.receiver import Reply

# The outbox tests' fixtures: a trustme CA, hook.test → 127.0.0.1, a real HTTPS receiver.
ca, ca_file, hosts_file = outbox.ca, outbox.ca_file, outbox.hosts_file
hook_secret, receiver = outbox.hook_secret, outbox.receiver


@pytest.fixture
async def config_overrides(relay_sock: socket.socket, ca_file: str, hosts_file: Path,
                           hook_secret: bytes) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "outbox": fast_outbox(ca_file, hosts_file)}


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
        # Targets by name, for operators too (they may not read webhooks themselves).
        expect(rows.first).to_contain_text("webhook lease-hook")
        with page.expect_download() as got:
            page.get_by_role("button", name="Export CSV").click()
        exported = _csv(got.value)
        assert [r["State"] for r in exported] == ["failed"] * 4
        assert {r["Target"] for r in exported} == {"webhook lease-hook"}
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


def _csv(download: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))


async def test_leases_and_audit_sort_count_export_and_bulk_release(
    appliance: runtime.Running, tokens: dict, plan: dict, relay: Any,
    viewer: httpx.AsyncClient, browser: BrowserThread, base: str,
) -> None:
    # A host name a spreadsheet would take for a formula (CSV injection).
    for n, host in ((3, "gamma"), (4, "=SUM(1,1)"), (5, "epsilon")):
        await dhcp_lease(relay, n, host)
    leases = (await viewer.get("/leases")).json()["items"]
    # The database's collation orders names: the console shows the API's order.
    by_host = [r["hostname"] for r in
               (await viewer.get("/leases", params={"sort": "hostname"})).json()["items"]]
    ips = sorted((row["ip"] for row in leases), key=ipaddress.ip_address)
    assert len(ips) == 5

    def drive(v: Visit) -> list[str]:
        page = v.page
        v.go("#/leases?limit=2")
        rows = page.locator("table.table tbody tr")
        expect(rows).to_have_count(2)
        expect(page.get_by_test_id("table-count")).to_have_text("2 of 5")
        page.get_by_role("button", name="Load more").click()
        expect(page.get_by_test_id("table-count")).to_have_text("4 of 5")
        # Sorted by the server, across pages: a header click puts the sort in the link.
        page.get_by_role("button", name="IP", exact=True).click()
        expect(page.get_by_role("columnheader", name="IP")).to_have_attribute(
            "aria-sort", "ascending")
        assert "sort=ip" in page.url and "limit=2" in page.url
        expect(rows.nth(0).locator("td").nth(1)).to_have_text(ips[0])
        expect(rows.nth(1).locator("td").nth(1)).to_have_text(ips[1])
        page.get_by_role("button", name="IP", exact=True).click()
        expect(page.get_by_role("columnheader", name="IP")).to_have_attribute(
            "aria-sort", "descending")
        expect(rows.nth(0).locator("td").nth(1)).to_have_text(ips[-1])
        # CSV: every lease the filter selects (not only the page), in the table's order.
        with page.expect_download() as got:
            page.get_by_role("button", name="Export CSV").click()
        exported = _csv(got.value)
        assert [r["IP"] for r in exported] == ips[::-1]
        hosts = {r["Hostname"] for r in exported}
        assert XSS_HOSTNAME in hosts and "'=SUM(1,1)" in hosts and "=SUM(1,1)" not in hosts
        assert {r["Subnet"] for r in exported} == {"127.77.0.0/24"}
        v.go("#/leases?sort=hostname")
        expect(page.get_by_test_id("table-count")).to_have_text("5 of 5")
        # The column by its header, not its place (the DHCPv6 columns stand among them).
        # A header's text ends in its sort mark (↕, ▲, ▼) when it sorts.
        headers = [t.rstrip(" ↕▲▼") for t in page.locator("table.table thead th").all_inner_texts()]
        assert headers.index("IP") == 1, headers
        hostname = headers.index("Hostname")
        for k, host in enumerate(by_host):
            expect(rows.nth(k).locator("td").nth(hostname)).to_have_text(host)

        # Three leases released at once, after one confirmation that names them.
        chosen = ips[:3]
        for ip in chosen:
            page.get_by_role("checkbox", name=f"Select {ip}").check()
        page.get_by_role("button", name="Release selected (3)").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Force release of 3 leases (")
        for ip in chosen:
            expect(dialog).to_contain_text(ip)
        shot(page, "leases-bulk-release")
        dialog.get_by_role("button", name="Release 3").click()
        expect(page.locator(".alert.ok")).to_have_text("Released 3 leases.")
        expect(page.locator("tbody .badge.released")).to_have_count(3)
        expect(page.get_by_role("button", name="Release selected")).to_be_disabled()
        shot(page, "leases")

        v.go("#/audit")
        audit_rows = page.locator(".paged table.table > tbody > tr")
        expect(page.get_by_test_id("table-count")).to_contain_text(" of ")
        total = int(page.get_by_test_id("table-count").inner_text().split(" of ")[1])
        expect(page.get_by_role("link", name=f"lease {chosen[0]}", exact=False).first
               ).to_be_visible()
        page.get_by_role("button", name="Action", exact=True).click()
        expect(page.get_by_role("columnheader", name="Action")).to_have_attribute(
            "aria-sort", "ascending")
        page.get_by_label("Object type").select_option("lease")
        page.get_by_role("button", name="Apply filters").click()
        expect(page.get_by_test_id("table-count")).to_have_text("3 of 3")
        # The sort stays with new filters.
        expect(page.get_by_role("columnheader", name="Action")).to_have_attribute(
            "aria-sort", "ascending")
        assert "sort=action" in page.url and "object_type=lease" in page.url
        expect(audit_rows).to_have_count(3)
        with page.expect_download() as got:
            page.get_by_role("button", name="Export CSV").click()
        entries = _csv(got.value)
        assert len(entries) == 3 and {e["Action"] for e in entries} == {"release"}
        assert sorted(e["Object"].split()[1] for e in entries) == sorted(chosen)
        shot(page, "audit")
        assert total >= 3
        return chosen

    chosen = await browser.run(base, drive, token=tokens["operator"])
    states = {r["ip"]: r["state"] for r in (await viewer.get("/leases")).json()["items"]}
    assert {ip for ip, state in states.items() if state == "released"} == set(chosen)
