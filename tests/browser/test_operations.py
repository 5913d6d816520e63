"""Leases (filters, paging, Release), Search with its `/` shortcut, History with its CSV, Work
with Replay of a failed delivery, and the admin and reference pages."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.conftest import XSS_HOSTNAME
from tests.browser.harness import BrowserThread, Visit, shot
from tests.browser.test_quality import axe_source, axe_violations
from tests.integration.dhcp.harness import dhcp_section
from tests.integration.outbox import conftest as outbox
from tests.integration.outbox.conftest import fast_outbox, make_hook, wait_rows
from tests.support.receiver import Receiver, Reply

# The outbox tests' fixtures: a trustme CA, hook.test → 127.0.0.1, a real HTTPS receiver.
ca, ca_file, hosts_file = outbox.ca, outbox.ca_file, outbox.hosts_file
hook_secret, receiver = outbox.hook_secret, outbox.receiver


@pytest.fixture
async def config_overrides(relay_sock: socket.socket, ca_file: str, hosts_file: Path,
                           hook_secret: bytes) -> dict[str, dict[str, Any]]:
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "outbox": fast_outbox(ca_file, hosts_file)}


async def test_leases_filter_page_and_release(appliance: runtime.Running, tokens: dict,
                                              plan: dict, browser: BrowserThread, base: str,
                                              viewer: httpx.AsyncClient) -> None:
    beta = plan["beta_ip"]

    source = axe_source()

    def drive(v: Visit) -> None:
        page = v.page
        page.add_init_script(source)
        v.go("#/leases?limit=1")  # one a page: the second comes with next_cursor
        rows = page.locator("table.table tbody tr")
        expect(rows).to_have_count(1)
        page.get_by_role("button", name="Load more").click()
        expect(rows).to_have_count(2)
        expect(page.get_by_role("button", name="Load more")).to_be_hidden()
        expect(page.get_by_role("cell", name=XSS_HOSTNAME, exact=True)).to_be_visible()
        shot(page, "leases")
        page.get_by_label("Subnet", exact=True).select_option(label="127.77.0.0/24 lab-a")
        page.get_by_role("button", name="Apply filters").click()
        expect(rows).to_have_count(2)
        assert f"subnet_id={plan['subnet']['id']}" in page.url
        page.get_by_label("Hostname").fill("beta")
        page.get_by_role("button", name="Apply filters").click()
        expect(rows).to_have_count(1)
        assert "hostname=beta" in page.url
        page.get_by_role("button", name=f"Release {beta}").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text(f"Force release of {beta} (beta)?")
        assert axe_violations(page) == []  # the modal confirmation too
        shot(page, "lease-release-confirm")
        dialog.get_by_role("button", name="Cancel").click()
        expect(rows.first.locator(".badge")).to_have_text("active")
        page.get_by_role("button", name=f"Release {beta}").click()
        page.get_by_role("dialog").get_by_role("button", name="Release").click()
        expect(page.locator(".alert.ok")).to_have_text(f"Released {beta}.")
        expect(rows.first.locator(".badge")).to_have_text("released")

    await browser.run(base, drive, token=tokens["operator"])
    found = (await viewer.get("/leases", params={"ip": beta})).json()["items"]
    assert [lease["state"] for lease in found] == ["released"]

    def viewer_sees_no_release(v: Visit) -> None:
        v.go("#/leases")
        expect(v.page.locator("table.table tbody tr")).to_have_count(2)
        expect(v.page.get_by_role("button", name="Release", exact=False)).to_have_count(0)

    await browser.run(base, viewer_sees_no_release, token=tokens["viewer"])


async def test_search_shortcut_and_history_csv(appliance: runtime.Running, tokens: dict,
                                               plan: dict, browser: BrowserThread,
                                               base: str) -> None:
    ip = plan["xss_ip"]

    def drive(v: Visit) -> str:
        page = v.page
        v.go("#/")
        expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
        page.locator("body").press("/")
        expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
        page.keyboard.type(ip)
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Search")).to_be_visible()
        hit = page.get_by_role("link", name=ip).first
        expect(hit).to_be_visible()
        shot(page, "search")
        hit.click()
        expect(page.get_by_role("heading", name="Leases")).to_be_visible()
        expect(page.locator("table.table tbody tr")).to_have_count(1)

        page.get_by_role("navigation", name="Main").get_by_role("link", name="History").click()
        page.get_by_label("Value").fill(ip)
        page.get_by_role("button", name="Search history").click()
        results = page.locator("section", has=page.get_by_role("heading", name="Results"))
        expect(results.get_by_role("cell", name=XSS_HOSTNAME, exact=True)).to_be_visible()
        expect(results.get_by_role("cell", name="holding", exact=True)).to_be_visible()
        expect(results.get_by_role("link", name="127.77.0.0/24")).to_be_visible()  # by name
        shot(page, "history")
        with page.expect_download() as got:
            page.get_by_role("button", name="Download CSV").click()
        download = got.value
        assert download.suggested_filename == "history.csv"
        csv = Path(download.path()).read_text()
        # A range in another time zone: the same occupancy, the times shown as given.
        page.get_by_label("At a moment (local time)").fill("")
        page.get_by_label("Or from").fill("2020-01-01T00:00")
        page.get_by_label("to", exact=True).fill("2099-01-01T00:00")
        page.get_by_label("Time zone").fill("Europe/Paris")
        # The search sets the hash; the page is rendered anew on the hashchange that follows.
        # Until then the old results are still shown, and a field filled meanwhile is lost.
        page.evaluate("document.querySelector('main .page').dataset.stale = 'yes'")
        page.get_by_role("button", name="Search history").click()
        expect(page.locator("main .page[data-stale]")).to_have_count(0)
        assert "tz=Europe%2FParis" in page.url and "from=2020-01-01T00%3A00" in page.url
        expect(results.get_by_role("cell", name=XSS_HOSTNAME, exact=True)).to_be_visible()
        page.get_by_label("Time zone").fill("Mars/Olympus")
        page.get_by_role("button", name="Search history").click()
        expect(page.get_by_role("alert")).to_contain_text("unknown time zone")
        return csv

    csv = await browser.run(base, drive, token=tokens["viewer"])
    lines = csv.strip().splitlines()
    assert lines[0].startswith("ip,mac,client_id,duid,hostname")
    assert len(lines) == 2 and lines[1].startswith(ip + ",02:00:00:00:00:01,")


async def test_work_replay_of_a_failed_delivery(appliance: runtime.Running, tokens: dict,
                                                admin: httpx.AsyncClient,
                                                viewer: httpx.AsyncClient, receiver: Receiver,
                                                relay_sock: socket.socket, relay: Any,
                                                browser: BrowserThread, base: str) -> None:
    from tests.browser.conftest import lease

    hook = await make_hook(admin, receiver, name="lease-hook")
    receiver.reply_next(*[Reply(500, body=b"receiver broken")] * 3)
    made = await admin.post("/prefixes", json={"cidr": "127.77.0.0/16"})
    subnet = await admin.post("/subnets", json={"prefix_id": made.json()["id"],
                                                "cidr": "127.77.0.0/24"})
    await admin.post(f"/subnets/{subnet.json()['id']}/pools",
                     json={"name": "p", "start_ip": "127.77.0.10", "end_ip": "127.77.0.20"})
    await lease(relay, 7, "work-host")
    (row,) = await wait_rows(viewer, hook["id"], 1, "failed")

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/work")
        expect(page.get_by_role("tab", name="Webhooks")).to_have_attribute("aria-selected", "true")
        page.get_by_role("link", name="failed").click()
        rows = page.locator(".paged table.table tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text("HTTP 500")
        rows.first.get_by_role("button", name="Attempts").click()
        attempts = page.locator("section", has=page.get_by_role("heading", name="Attempts of lease.granted", exact=False))
        expect(attempts.locator("tbody tr")).to_have_count(3)
        expect(attempts).to_contain_text("receiver broken")
        shot(page, "work")
        rows.first.get_by_role("button", name="Replay", exact=False).click()
        page.get_by_role("dialog").get_by_role("button", name="Replay").click()
        expect(page.locator(".alert.ok")).to_have_text("Queued for delivery again.")
        # The state's colour follows the row: no longer red once replayed.
        expect(rows.first.locator(".badge")).to_have_class("badge pending")
        expect(rows.first).to_have_attribute("data-state", "pending")
        page.get_by_role("tab", name="DNS").click()
        expect(page.get_by_text("No deliveries.")).to_be_visible()

    await browser.run(base, drive, token=tokens["operator"])
    (done,) = await wait_rows(viewer, hook["id"], 1, "delivered")
    assert done["id"] == row["id"]
    # Replay is offered only where the API would take it: a delivered row gets 409 there, so
    # the console shows no Replay on it; nor on a failed row whose webhook was deleted.
    assert (await admin.post(f"/outbox/{row['id']}/replay")).status_code == 409
    assert not done["replayable"]
    receiver.reply_next(*[Reply(500)] * 3)
    await lease(relay, 8, "work-host-2")
    failed = (await wait_rows(viewer, hook["id"], 1, "failed"))[0]
    assert failed["replayable"]
    receiver.reply_next(*[Reply(500)] * 3)  # its own creation's ipam.audit delivery fails
    other = await make_hook(admin, receiver, name="gone-hook", topics="ipam.audit")
    (orphan,) = await wait_rows(viewer, other["id"], 1, "failed")
    assert (await admin.delete(f"/webhooks/{other['id']}")).status_code == 204
    assert (await admin.post(f"/outbox/{orphan['id']}/replay")).status_code == 409

    def no_replay(v: Visit) -> None:
        page = v.page
        v.go("#/work?kind=webhook&state=delivered")
        delivered = page.locator(".paged table.table tbody tr")
        expect(delivered).to_have_count(1)
        expect(delivered.first.get_by_role("button", name="Attempts")).to_be_visible()
        expect(delivered.first.get_by_role("button", name="Replay", exact=False)).to_have_count(0)
        v.go("#/work?kind=webhook&state=failed")
        failed_rows = page.locator(".paged table.table tbody tr")
        expect(failed_rows).to_have_count(2)
        expect(failed_rows.get_by_role("button", name="Replay", exact=False)).to_have_count(1)
        expect(page.get_by_role("button", name=f"Replay lease.granted {failed['id']}")
               ).to_be_visible()

    await browser.run(base, no_replay, token=tokens["operator"])


async def test_admin_and_reference_pages(appliance: runtime.Running, tokens: dict,
                                         admin: httpx.AsyncClient, browser: BrowserThread,
                                         base: str) -> None:
    await admin.post("/client-classes", json={"name": "phones", "match": "vendor_class",
                                              "value": "polycom"})

    def drive(v: Visit) -> str:
        page = v.page
        v.go("#/tokens")
        expect(page.get_by_role("cell", name="operator", exact=True).first).to_be_visible()
        page.get_by_role("button", name="New token").click()
        page.get_by_label("Name", exact=True).fill("ci robot")
        page.get_by_label("Role").select_option("viewer")
        page.get_by_role("button", name="Create token").click()
        secret = page.get_by_label("Token secret").input_value()
        assert secret.startswith("service_live_")
        shot(page, "tokens")
        page.get_by_role("button", name="Revoke token ci robot").click()
        page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
        expect(page.locator(".alert.ok")).to_contain_text("token revoked")
        expect(page.get_by_role("cell", name="ci robot", exact=True)).to_have_count(0)

        v.go("#/webhooks")
        page.get_by_role("button", name="New webhook").click()
        page.get_by_label("Name", exact=True).fill("siem")
        page.get_by_label("URL (https://…)").fill("http://not-https.example/")
        page.get_by_label("Secret reference (env:NAME or file:/path)").fill("env:IPAMD_TEST_HOOK_SECRET")
        page.get_by_role("button", name="Create webhook").click()
        expect(page.locator(".field[data-field=url] .field-error")).not_to_be_empty()
        page.get_by_label("URL (https://…)").fill("https://siem.example/hook")
        page.get_by_role("button", name="Create webhook").click()
        expect(page.get_by_role("cell", name="https://siem.example/hook", exact=True)).to_be_visible()
        shot(page, "webhooks")

        v.go("#/audit?object_type=token")
        expect(page.get_by_role("heading", name="Audit")).to_be_visible()
        expect(page.locator("table.diff").first).to_be_visible()
        # A creation's every field, folded (a tall row otherwise): one click opens it.
        created = page.locator("details.diff-all", has=page.locator("td.ins", has_text='"ci robot"'))
        expect(created.locator("summary")).to_contain_text("created:")
        created.locator("summary").click()
        expect(created.locator("table.diff td.ins", has_text='"ci robot"')).to_be_visible()
        expect(page.get_by_role("cell", name="admin (token)", exact=True).first).to_be_visible()
        shot(page, "audit")

        v.go("#/client-classes")
        expect(page.get_by_role("cell", name="phones", exact=True)).to_be_visible()
        v.go("#/tenants")
        page.get_by_role("button", name="New tenant").click()
        page.get_by_label("Name", exact=True).fill("acme")
        page.get_by_role("button", name="Create tenant").click()
        expect(page.get_by_role("cell", name="acme", exact=True)).to_be_visible()
        v.go("#/settings")
        # docs/relays.md: trust goes by the packet's source address, giaddr only picks the subnet.
        trust = page.get_by_test_id("relay-trust")
        expect(trust).to_contain_text("served only when its source address")
        expect(trust).to_contain_text("giaddr (the relay's address on the client's segment")
        expect(page.get_by_text("Relays (giaddr)")).to_have_count(0)
        page.get_by_label("Trusted relays (addresses or CIDRs, comma separated)").fill("10.9.0.0/16, 10.8.0.1")
        page.get_by_role("button", name="Save relays").click()
        expect(page.get_by_text("Set here: 10.9.0.0/16, 10.8.0.1", exact=False)).to_be_visible()
        shot(page, "settings")
        v.go("#/license")
        expect(page.get_by_role("heading", name="License")).to_be_visible()
        expect(page.locator("dl.kv")).to_contain_text("Managed IPs")
        return secret

    secret = await browser.run(base, drive, token=tokens["admin"])
    async with httpx.AsyncClient(base_url=base + "/api/v1") as client:
        revoked = await client.get("/whoami", headers={"Authorization": f"Bearer {secret}"})
        assert revoked.status_code == 401
    relays = (await admin.get("/settings")).json()["trusted_relays"]
    assert relays == ["10.9.0.0/16", "10.8.0.1"] or relays == ["10.9.0.0/16", "10.8.0.1/32"]
