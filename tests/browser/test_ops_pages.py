"""Operations pages: the dashboard from one GET /dashboard, nodes, alerts, alert destinations
(admin only; other people's text rendered as text)."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
import trio
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.conftest import XSS_HOSTNAME, lease
from tests.browser.harness import BrowserThread, Visit, shot
from tests.integration.dhcp.harness import dhcp_section


@pytest.fixture
async def config_overrides(relay_sock: socket.socket) -> dict[str, dict[str, Any]]:
    # Heartbeats every 0.2 s: the node page shows the DHCP counters of the plan's leases.
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "ops": {"heartbeat_seconds": 0.2, "node_down_seconds": 5.0,
                    "alert_interval_seconds": 0.5}}


async def test_ops_pages(appliance: runtime.Running, tokens: dict, plan: dict,
                         admin: httpx.AsyncClient, browser: BrowserThread, base: str) -> None:
    await admin.post("/settings/alert-destinations", json={
        "name": XSS_HOSTNAME, "kind": "webhook", "settings": {"url": "https://noc.example/hook"}})

    with trio.fail_after(10):
        while not (await admin.get("/nodes")).json()["items"][0]["dhcp"]["received"]:
            await trio.sleep(0.1)

    def as_viewer(v: Visit) -> None:
        page = v.page
        v.go("#/")
        nodes = page.locator("section", has=page.get_by_role("heading", name="Nodes", exact=True))
        expect(nodes).to_contain_text("1 up, 0 down")
        expect(page.locator("section", has=page.get_by_role("heading", name="Pool use (worst first)"))
               ).to_contain_text("dyn")
        expect(page.get_by_role("heading", name="DHCP by node")).to_be_visible()
        nav = page.get_by_role("navigation", name="Main")
        expect(nav.get_by_role("link", name="Alert destinations")).to_have_count(0)
        nav.get_by_role("link", name="Nodes").click()
        expect(page.get_by_role("heading", name="Nodes", exact=True)).to_be_visible()
        node = page.get_by_role("table", name="Appliance nodes").get_by_role("link").first
        node.click()
        expect(page.get_by_role("heading", name="DHCP counters")).to_be_visible()
        expect(page.get_by_role("cell", name="received discover")).to_be_visible()
        expect(page.get_by_role("button", name="Retire node")).to_have_count(0)
        v.go("#/alerts")
        expect(page.get_by_role("heading", name="Thresholds")).to_be_visible()
        expect(page.locator("dl.kv")).to_contain_text("utilisation_percent")
        shot(page, "alerts")

    await browser.run(base, as_viewer, token=tokens["viewer"])

    def as_admin(v: Visit) -> None:
        page = v.page
        v.go("#/alert-destinations")
        expect(page.get_by_role("cell", name=XSS_HOSTNAME, exact=True)).to_be_visible()
        page.get_by_role("button", name="New alert destination").click()
        page.get_by_label("Name", exact=True).fill("pager duty")
        page.get_by_label("Kind").select_option("pager")
        page.get_by_label("Settings (JSON)").fill('{"routing_key_ref": "the key itself"}')
        page.get_by_role("button", name="Create alert destination").click()
        expect(page.locator(".field[data-field=settings] .field-error")).not_to_be_empty()
        page.get_by_label("Settings (JSON)").fill('{"routing_key_ref": "env:PD_KEY"}')
        page.get_by_role("button", name="Create alert destination").click()
        expect(page.get_by_role("cell", name="pager duty", exact=True)).to_be_visible()
        expect(page.get_by_role("cell", name="https://events.pagerduty.com/v2/enqueue")).to_be_visible()
        v.go("#/alerts")
        page.get_by_label("utilisation clear percent").fill("95")
        page.get_by_role("button", name="Save thresholds").click()
        expect(page.locator(".field[data-field=utilisation_clear_percent] .field-error")
               ).to_contain_text("hysteresis")
        page.get_by_label("utilisation clear percent").fill("80")
        page.get_by_role("button", name="Save thresholds").click()
        expect(page.locator("dl.kv").first).to_contain_text("80")
        v.go("#/alert-destinations")
        injected = page.evaluate("document.querySelectorAll('main img[src=x]').length")
        assert injected == 0
        shot(page, "alert-destinations")

    await browser.run(base, as_admin, token=tokens["admin"])
    made = (await admin.get("/settings/alert-destinations")).json()["items"]
    assert {d["name"] for d in made} == {XSS_HOSTNAME, "pager duty"}
    rules = (await admin.get("/settings/alert-rules")).json()
    assert rules["utilisation_clear_percent"] == 80.0


async def test_dashboard_refreshes_itself_and_links_alerts(
    appliance: runtime.Running, tokens: dict, plan: dict, admin: httpx.AsyncClient,
    relay: Any, browser: BrowserThread, base: str,
) -> None:
    # Two leases in a pool of 51: 3.9 % — over a 2 % threshold, so the pool's alert opens.
    rules = await admin.patch("/settings/alert-rules", json={
        "utilisation_percent": 2, "utilisation_clear_percent": 1})
    assert rules.status_code == 200, rules.text
    with trio.fail_after(15):
        while not any(a["rule"] == "pool_utilisation" for a in
                      (await admin.get("/alerts", params={"status": "open"})).json()["items"]):
            await trio.sleep(0.2)
    token = trio.lowlevel.current_trio_token()

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/")
        active = page.get_by_test_id("leases-active")
        expect(active).to_have_text("2")
        expect(page.get_by_role("img", name="Grants per minute over the last hour",
                                exact=False)).to_be_visible()
        # A new lease from the DHCP server shows without a reload (the page redraws itself).
        trio.from_thread.run(lease, relay, 9, "fresh", trio_token=token)
        expect(active).to_have_text("3", timeout=20_000)
        expect(page.get_by_test_id("refreshed")).to_contain_text("refreshed every")
        shot(page, "dashboard")
        # An alert links to what it is about: the pool's subnet page.
        alerts = page.locator("section", has=page.get_by_role("heading", name="Open alerts",
                                                              exact=False))
        alerts.get_by_role("link", name="pool dyn in 127.77.0.0/24", exact=False).click()
        expect(page.get_by_role("heading", name="Subnet 127.77.0.0/24 — lab-a")).to_be_visible()
        v.go("#/alerts?status=open")
        expect(page.get_by_role("link", name="pool dyn in 127.77.0.0/24", exact=False)
               ).to_be_visible()

    await browser.run(base, drive, token=tokens["viewer"])
