"""Dashboard, the prefix → subnet tree, the subnet page (children forms, the address map and
its "As of" picker), against the real runtime with leases from the real DHCP server."""

from __future__ import annotations

import re
from typing import Any

import httpx
import trio
from playwright.sync_api import expect

from ipamd import runtime
from ipamd.dhcp import options as o
from ipamd.ops import pool_samples
from tests.browser.conftest import XSS_HOSTNAME
from tests.browser.harness import BrowserThread, Visit, shot
from tests.integration.dhcp.harness import Relay
from tests.support import dhcp_lab
from tests.unit.dhcp.packets import mac_bytes, request


async def test_dashboard_and_prefix_tree(appliance: runtime.Running, tokens: dict, plan: dict,
                                         browser: BrowserThread, base: str,
                                         admin: httpx.AsyncClient) -> None:
    sid = plan["subnet"]["id"]
    # The sampler's first sample (at start) came before the plan; one now, as the next would.
    assert await appliance.state.db.transaction(pool_samples.sample, 60.0, 7) == 1

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/")
        expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
        use = page.locator("section", has=page.get_by_role("heading", name="Pool use (last hour)"))
        expect(use.get_by_role("img", name=re.compile(
            r"^Pool use over the last hour: dyn \(127\.77\.0\.0.24\) 3\.92% now"))).to_be_visible()
        expect(use.locator("polyline")).to_have_count(1)
        leases = page.locator("section", has=page.get_by_role("heading", name="Leases by state"))
        expect(leases.locator("dt", has_text="active").locator("xpath=following-sibling::dd[1]")).to_have_text("2")
        worst = page.locator("section", has=page.get_by_role("heading", name="Subnet utilisation (worst first)"))
        expect(worst.get_by_role("link", name="127.77.0.0/24")).to_be_visible()
        expect(page.locator("section", has=page.get_by_role("heading", name="License use"))).to_contain_text("of")
        shot(page, "dashboard")
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Prefixes").click()
        expect(page.get_by_role("heading", name="Prefixes and subnets")).to_be_visible()
        page.get_by_text("127.77.0.0/16").click()  # open the prefix: its subnets with bars
        subnet = page.get_by_role("link", name="127.77.0.0/24")
        expect(subnet).to_be_visible()
        expect(page.get_by_role("img", name=re.compile(r"127\.77\.0\.0.24 [0-9.]+% used"))).to_be_visible()
        shot(page, "prefixes")
        subnet.click()
        expect(page.get_by_role("heading", name="Subnet 127.77.0.0/24 — lab-a")).to_be_visible()
        assert page.url.endswith(f"#/subnets/{sid}")
        page.go_back()  # the browser's back button returns to the tree
        expect(page.get_by_role("heading", name="Prefixes and subnets")).to_be_visible()
        page.go_forward()
        expect(page.get_by_role("heading", name="Subnet 127.77.0.0/24 — lab-a")).to_be_visible()

    await browser.run(base, drive, token=tokens["viewer"])

    # The same CIDR for another tenant: each row says whose it is, and the filter picks one.
    acme = next(t for t in (await admin.get("/tenants")).json()["items"] if t["name"] == "acme")
    made = await admin.post("/prefixes", json={"cidr": "127.77.0.0/16", "tenant_id": acme["id"]})
    assert made.status_code == 201, made.text

    def tenants(v: Visit) -> None:
        page = v.page
        v.go("#/prefixes")
        rows = page.locator(".paged table.table > tbody > tr")
        expect(rows).to_have_count(2)
        expect(rows.filter(has_text="127.77.0.0/16")).to_have_count(2)
        expect(page.get_by_role("cell", name="acme", exact=True)).to_have_count(1)
        page.get_by_label("Tenant").select_option(label="acme")
        page.get_by_role("button", name="Apply filters").click()
        expect(rows).to_have_count(1)
        expect(rows.first.get_by_role("cell", name="acme", exact=True)).to_be_visible()

    await browser.run(base, tenants, token=tokens["viewer"])


async def test_subnet_children_forms(appliance: runtime.Running, tokens: dict, plan: dict,
                                     browser: BrowserThread, base: str) -> None:
    sid = plan["subnet"]["id"]

    def drive(v: Visit) -> None:
        page = v.page
        v.go(f"#/subnets/{sid}")
        for heading, text in (("Pools", "dyn"), ("Excludes", "127.77.0.200 \u2013 127.77.0.209"),
                              ("Reservations", "reserved-host"), ("Assignments", "printer"),
                              ("Options", "127.77.0.53")):
            sec = page.locator("section", has=page.get_by_role("heading", name=heading, exact=True))
            expect(sec.get_by_role("cell", name=text, exact=True)).to_be_visible()
        expect(page.locator("dd", has_text="127.77.0.1").first).to_be_visible()
        page.get_by_role("button", name="Next free IP").click()
        expect(page.get_by_test_id("next-free")).to_have_text(re.compile(r"^127\.77\.0\.\d+$"))

        pools = page.locator("section", has=page.get_by_role("heading", name="Pools"))
        pools.get_by_role("button", name="New pool").click()
        pools.get_by_label("Name").fill("phones-pool")
        pools.get_by_label("First address").fill("127.77.0.70")
        pools.get_by_label("Last address").fill("127.77.0.79")
        pools.get_by_label("Client class").select_option(label="phones (vendor_class polycom)")
        pools.get_by_role("button", name="Create pool").click()
        row = pools.get_by_role("row", name="phones-pool")
        expect(row.get_by_role("cell", name="phones (vendor_class polycom)", exact=True)).to_be_visible()

        res = page.locator("section", has=page.get_by_role("heading", name="Reservations"))
        res.get_by_role("button", name="New reservation").click()
        res.get_by_label("IP (empty: next free)").fill("127.77.0.999")
        res.get_by_label("MAC").fill("02:00:00:00:99:02")
        res.get_by_label("Hostname").fill("camera")
        res.get_by_role("button", name="Create reservation").click()
        # A 422 is shown beside the field it names.
        ip_field = res.locator(".field[data-field=ip]")
        expect(ip_field.locator(".field-error")).not_to_be_empty()
        expect(ip_field.get_by_role("textbox")).to_have_attribute("aria-invalid", "true")
        res.get_by_label("IP (empty: next free)").fill("127.77.0.101")
        res.get_by_role("button", name="Create reservation").click()
        expect(res.locator(".alert.ok")).to_contain_text("reservation created")
        expect(res.get_by_role("cell", name="camera", exact=True)).to_be_visible()
        shot(page, "subnet-reservation-created")

        res.get_by_role("button", name="Edit reservation 127.77.0.101").click()
        res.get_by_label("Hostname").fill("camera-2")
        res.get_by_role("button", name="Save").click()
        expect(res.get_by_role("cell", name="camera-2", exact=True)).to_be_visible()

        res.get_by_role("button", name="Delete reservation 127.77.0.101").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Delete reservation 127.77.0.101?")
        dialog.get_by_role("button", name="Delete").click()
        expect(res.get_by_role("cell", name="camera-2", exact=True)).to_have_count(0)

        # An option through its per-code form (15: domain name).
        opts = page.locator("section", has=page.get_by_role("heading", name="Options", exact=True))
        opts.get_by_role("button", name="New option").click()
        opts.get_by_label("Option", exact=True).select_option("15")
        opts.get_by_label("Domain name").fill("lab.example")
        opts.get_by_role("button", name="Add option").click()
        expect(opts.get_by_role("cell", name="lab.example", exact=True)).to_be_visible()
        # 43 with a vendor class; a bad hex string is refused beside its field.
        opts.get_by_role("button", name="New option").click()
        opts.get_by_label("Option", exact=True).select_option("43")
        opts.get_by_label("Vendor data (hex octets)").fill("zz")
        opts.get_by_label("Vendor class (option 60) it applies to").fill("PXEClient")
        opts.get_by_role("button", name="Add option").click()
        expect(opts.locator(".field[data-field=hex] .field-error")).not_to_be_empty()
        opts.get_by_label("Vendor data (hex octets)").fill("01:04:c0:a8:00:01")
        opts.get_by_role("button", name="Add option").click()
        expect(opts.get_by_role("cell", name="PXEClient", exact=True)).to_be_visible()
        # Option names beside their codes.
        for label in ("6 — DNS servers", "15 — domain name", "43 — vendor specific"):
            expect(opts.get_by_role("cell", name=label, exact=True)).to_be_visible()
        assert v.dialogs == []

    await browser.run(base, drive, token=tokens["operator"])


async def test_address_map_and_as_of(appliance: runtime.Running, tokens: dict, plan: dict,
                                     browser: BrowserThread, base: str) -> None:
    sid = plan["subnet"]["id"]
    leased = plan["xss_ip"]

    def drive(v: Visit) -> None:
        page = v.page
        v.go(f"#/subnets/{sid}")
        cell = page.locator(f'.cell[data-ip="{leased}"]')
        expect(cell).to_have_attribute("data-state", "leased")
        expect(page.locator('.cell[data-ip="127.77.0.100"]')).to_have_attribute("data-state", "reserved")
        expect(page.locator('.cell[data-ip="127.77.0.150"]')).to_have_attribute("data-state", "assigned")
        expect(page.locator('.cell[data-ip="127.77.0.205"]')).to_have_attribute("data-state", "excluded")
        expect(page.locator('.cell[data-ip="127.77.0.61"]')).to_have_attribute("data-state", "free")
        # The subnet's own addresses are neither free nor anyone's.
        for ip, state in (("127.77.0.0", "network"), ("127.77.0.255", "broadcast"),
                          ("127.77.0.1", "gateway")):
            expect(page.locator(f'.cell[data-ip="{ip}"]')).to_have_attribute("data-state", state)
        expect(page.locator(".legend")).to_contain_text("free 190")  # 256 - 49 - 10 - 7
        expect(page.locator(".legend")).to_contain_text("gateway 1")
        assert page.locator(".map-grid .cell").count() == 256
        cell.click()
        info = page.locator(".map-info")
        expect(info).to_contain_text(f"{leased} — leased — MAC 02:00:00:00:00:01")
        expect(info).to_contain_text(XSS_HOSTNAME)  # shown as text
        shot(page, "subnet")
        # Keyboard: arrows move between cells.
        page.locator('.cell[data-ip="127.77.0.0"]').focus()
        page.keyboard.press("ArrowRight")
        expect(info).to_contain_text("127.77.0.1 — ")
        # As of a moment before any lease: the same address was only pool.
        moment = page.evaluate(
            """iso => { const d = new Date(iso); const p = n => String(n).padStart(2, "0");
              return `${d.getFullYear()}-${p(d.getMonth()+1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; }""",
            plan["before"].isoformat(),
        )
        page.get_by_label("As of").fill(moment)
        page.get_by_label("As of").dispatch_event("change")
        expect(cell).to_have_attribute("data-state", "pool")
        expect(page.get_by_test_id("as-of")).not_to_contain_text("now")
        shot(page, "subnet-as-of")
        # Before the subnet was created: said so, not drawn as 256 free addresses.
        page.get_by_label("As of").fill("2020-01-01T00:00:00")
        page.get_by_label("As of").dispatch_event("change")
        expect(page.get_by_test_id("not-yet")).to_contain_text("This subnet did not exist then")
        expect(page.locator(".map-grid .cell")).to_have_count(0)
        page.get_by_role("button", name="Now").click()
        expect(cell).to_have_attribute("data-state", "leased")
        # From a cell to who held it: the history of that address.
        cell.click()
        page.get_by_role("link", name=f"History of {leased}").click()
        expect(page.get_by_role("heading", name="History")).to_be_visible()
        expect(page.get_by_role("cell", name=XSS_HOSTNAME, exact=True)).to_be_visible()
        assert v.dialogs == []

    await browser.run(base, drive, token=tokens["viewer"])

    def edit(v: Visit) -> None:
        page = v.page
        v.go(f"#/subnets/{sid}")
        target = page.locator('.cell[data-ip="127.77.0.120"]')
        expect(target).to_have_attribute("data-state", "free")
        used = page.locator("section", has=page.get_by_role("heading", name="Utilisation"))
        expect(used.locator("dl.stats")).to_contain_text("reserved1")
        reservations = page.locator(
            "section", has=page.get_by_role("heading", name="Reservations", exact=True))
        reservations.get_by_role("button", name="New reservation").click()
        reservations.get_by_label("IP (empty: next free)").fill("127.77.0.120")
        reservations.get_by_label("MAC").fill("02:00:00:00:99:02")
        reservations.get_by_role("button", name="Create reservation").click()
        # Redrawn after the edit, without a reload.
        expect(target).to_have_attribute("data-state", "reserved")
        expect(used.locator("dl.stats")).to_contain_text("reserved2")

    await browser.run(base, edit, token=tokens["operator"])


async def test_prefix_and_subnet_forms(appliance: runtime.Running, tokens: dict,
                                       browser: BrowserThread, base: str) -> None:
    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/prefixes")
        page.get_by_role("button", name="New prefix").click()
        page.get_by_label("CIDR").fill("10.50.0.0/33")
        page.get_by_role("button", name="Create prefix").click()
        expect(page.locator(".field[data-field=cidr] .field-error")).not_to_be_empty()
        page.get_by_label("CIDR").fill("10.50.0.0/16")
        page.get_by_label("Description").fill("campus")
        page.get_by_role("button", name="Create prefix").click()
        expect(page.get_by_text("10.50.0.0/16")).to_be_visible()
        page.get_by_role("button", name="Edit prefix 10.50.0.0/16").click()
        page.get_by_label("Description").fill("campus north")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_text("— campus north")).to_be_visible()

        page.get_by_text("10.50.0.0/16").click()
        page.get_by_role("button", name="New subnet in 10.50.0.0/16").click()
        page.get_by_label("CIDR").fill("10.50.3.0/24")
        page.get_by_label("Name", exact=True).fill("lab-b")
        page.get_by_label("Gateway").fill("10.50.3.1")
        page.get_by_label("PXE next server").fill("10.50.3.5")
        page.get_by_label("PXE boot file").fill("pxelinux.0")
        page.get_by_label("NTP servers (comma separated)").fill("10.50.3.6, 10.50.3.7")
        page.get_by_role("button", name="Create subnet").click()
        expect(page.get_by_role("heading", name="Subnet 10.50.3.0/24 — lab-b")).to_be_visible()
        expect(page.locator("dd", has_text="pxelinux.0")).to_be_visible()
        expect(page.locator("dd", has_text="10.50.3.6, 10.50.3.7")).to_be_visible()
        page.get_by_role("button", name="Edit subnet").click()
        page.get_by_label("Lease time (seconds)").fill("600")
        page.get_by_label("Longest lease a client may ask for (seconds)").fill("7200")
        page.get_by_label("Ping an address before offering it").check()
        page.get_by_label("Ping check wait (ms, 100 to 5000)").fill("250")
        page.get_by_label("DHCP enabled").uncheck()
        page.get_by_role("button", name="Save").click()
        expect(page.locator("dd", has_text="600")).to_be_visible()
        expect(page.locator("dd", has_text="7200")).to_be_visible()
        ping = page.locator("dl.kv dt", has_text="Ping an address").locator("xpath=following-sibling::dd[1]")
        expect(ping).to_have_text("yes")
        wait = page.locator("dl.kv dt", has_text="Ping check wait").locator("xpath=following-sibling::dd[1]")
        expect(wait).to_have_text("250")
        dhcp = page.locator("dl.kv dt", has_text="DHCP enabled").locator("xpath=following-sibling::dd[1]")
        expect(dhcp).to_have_text("no")
        page.get_by_role("button", name="Delete subnet").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.get_by_role("heading", name="Prefixes and subnets")).to_be_visible()
        page.get_by_role("button", name="Delete prefix 10.50.0.0/16").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator(".alert.ok")).to_have_text("prefix deleted.")
        expect(page.get_by_text("10.50.0.0/16")).to_have_count(0)

    await browser.run(base, drive, token=tokens["operator"])


async def test_deletes_state_their_impact_with_focus_on_cancel(
    appliance: runtime.Running, tokens: dict, plan: dict, browser: BrowserThread, base: str,
) -> None:
    sid = plan["subnet"]["id"]

    def drive(v: Visit) -> None:
        page = v.page
        v.go(f"#/subnets/{sid}")
        pools = page.locator("section", has=page.get_by_role("heading", name="Pools", exact=True))
        page.get_by_role("button", name="Delete pool dyn").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Delete pool dyn?")
        # The plan's two leases are in the pool: the dialog says so, read when it opens.
        expect(dialog.get_by_test_id("impact")).to_have_text(
            "It holds 2 live leases and 0 reservations in 127.77.0.10 \u2013 127.77.0.60; "
            "no new lease is offered from this range once it is deleted.")
        expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
        shot(page, "pool-delete-confirm")
        page.keyboard.press("Enter")  # a stray Enter cancels
        expect(dialog).to_have_count(0)
        expect(pools.get_by_role("cell", name="dyn", exact=True)).to_be_visible()

        page.get_by_role("button", name="Delete reservation 127.77.0.100").click()
        expect(dialog.get_by_test_id("impact")).to_have_text("127.77.0.100 has no live lease.")
        dialog.get_by_role("button", name="Cancel").click()

        page.get_by_role("button", name="Delete subnet").click()
        expect(dialog.get_by_test_id("impact")).to_have_text(
            "It holds 2 live leases, 1 reservation and 1 assignment.")
        page.keyboard.press("Escape")
        expect(dialog).to_have_count(0)

        page.get_by_role("button", name="Delete pool dyn").click()
        dialog.get_by_role("button", name="Delete").click()
        expect(pools.get_by_role("cell", name="dyn", exact=True)).to_have_count(0)

        # Many rows at once: two assignments ticked, one confirmation naming both.
        assignments = page.locator(
            "section", has=page.get_by_role("heading", name="Assignments", exact=True))
        for ip in ("127.77.0.151", "127.77.0.152"):
            assignments.get_by_role("button", name="New assignment").click()
            assignments.get_by_label("IP (empty: next free)").fill(ip)
            assignments.get_by_label("Hostname").fill(f"host-{ip.rsplit('.', 1)[1]}")
            assignments.get_by_role("button", name="Create assignment").click()
            expect(assignments.get_by_role("cell", name=ip, exact=True)).to_be_visible()
        for ip in ("127.77.0.151", "127.77.0.152"):
            assignments.get_by_role("checkbox", name=f"Select assignment {ip}").check()
        assignments.get_by_role("button", name="Delete selected (2)").click()
        expect(dialog).to_contain_text("Delete 2 assignments (127.77.0.151, 127.77.0.152)?")
        expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
        dialog.get_by_role("button", name="Delete 2").click()
        expect(assignments.locator(".alert.ok")).to_have_text("2 assignments deleted.")
        expect(assignments.locator("tbody tr")).to_have_count(1)  # the plan's printer stays
        expect(page.locator('.cell[data-ip="127.77.0.151"]')).to_have_attribute("data-state", "free")

    await browser.run(base, drive, token=tokens["operator"])


async def test_dark_theme_follows_the_system_setting(
    appliance: runtime.Running, tokens: dict, plan: dict, browser: BrowserThread, base: str,
) -> None:
    from tests.browser.test_quality import axe_source, axe_violations

    source = axe_source()
    pages = {"dashboard": "#/", "subnet": f"#/subnets/{plan['subnet']['id']}",
             "leases": "#/leases", "audit": "#/audit", "work": "#/work", "dns": "#/dns"}

    def drive(v: Visit) -> dict[str, Any]:
        page = v.page
        page.add_init_script(source)
        found: dict[str, Any] = {}
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            v.go("#/leases")
            expect(page.locator("main h1")).to_be_visible()
            expect(page.locator(".table").first).to_be_visible()
            found[scheme] = page.evaluate(
                "[getComputedStyle(document.body).backgroundColor,"
                " getComputedStyle(document.querySelector('.table')).backgroundColor,"
                " getComputedStyle(document.querySelector('main h1')).color]")
        # Dark: every page again, for axe's contrast rules in that theme.
        violations = {}
        for name, route in pages.items():
            v.go(route)
            expect(page.locator("main h1")).to_be_visible()
            page.wait_for_load_state("networkidle")
            violations[name] = axe_violations(page)
            if name in ("subnet", "leases"):
                shot(page, f"dark-{name}")
        found["violations"] = violations
        return found

    found = await browser.run(base, drive, token=tokens["operator"])
    assert found["light"] == ["rgb(244, 246, 248)", "rgb(255, 255, 255)", "rgb(29, 39, 51)"]
    assert found["dark"] == ["rgb(16, 21, 27)", "rgb(25, 33, 42)", "rgb(228, 233, 239)"]
    assert found["violations"] == {name: [] for name in pages}


async def test_the_leases_page_marks_a_ping_conflict(
    appliance: runtime.Running, admin: httpx.AsyncClient, relay: Relay, tokens: dict,
    browser: BrowserThread, base: str,
) -> None:
    """A subnet with the ping check on, in 127/8: every address answers the echo (loopback
    holds all of 127/8), so each one the server would offer is held as a ping conflict by the
    real DHCP server and shown so (docs/api-ipam.md, "Ping check")."""
    made = await admin.post("/prefixes", json={"cidr": "127.77.8.0/24", "description": "ping"})
    assert made.status_code == 201, made.text
    subnet = await admin.post("/subnets", json={
        "prefix_id": made.json()["id"], "cidr": "127.77.8.0/24", "gateway": "127.77.8.1",
        "ping_check": True, "ping_timeout_ms": 500})
    assert subnet.status_code == 201, subnet.text
    sid = subnet.json()["id"]
    pool = await admin.post(f"/subnets/{sid}/pools", json={
        "name": "two", "start_ip": "127.77.8.10", "end_ip": "127.77.8.11"})
    assert pool.status_code == 201, pool.text
    await dhcp_lab.plan_caught_up(appliance)
    offer = await relay.exchange(request(o.DISCOVER, mac_bytes(40), giaddr="127.77.8.1"),
                                 timeout=3)
    assert offer is None  # both addresses answered: nothing left to offer
    with trio.fail_after(10):
        while True:
            rows = (await admin.get("/leases", params={"subnet_id": sid})).json()["items"]
            if len(rows) == 2:
                break
            await trio.sleep(0.1)
    assert {(r["ip"], r["state"], r["ping_conflict"]) for r in rows} == {
        ("127.77.8.10", "declined", True), ("127.77.8.11", "declined", True)}

    def drive(v: Visit) -> None:
        page = v.page
        v.go(f"#/leases?subnet_id={sid}")
        for address in ("127.77.8.10", "127.77.8.11"):
            row = page.get_by_role("row").filter(has=page.get_by_role("link", name=address))
            expect(row.get_by_text("ping conflict", exact=True)).to_be_visible()
            expect(row.get_by_text("declined", exact=True)).to_be_visible()
        assert v.dialogs == []

    await browser.run(base, drive, token=tokens["viewer"])
