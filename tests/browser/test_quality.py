"""Every page: nothing requested outside /api/v1 and the console's own files, no serious or
critical axe-core violation, data rendered as text (an XSS hostname runs nothing); and the
map of a /16 with 30k leases, timed."""

from __future__ import annotations

import hashlib
import time
import urllib.parse
from pathlib import Path

import httpx
from playwright.sync_api import expect

from ipamd import runtime
from ipamd.api import console
from ipamd.db.bridge import Database
from tests.browser.conftest import XSS_HOSTNAME
from tests.browser.harness import BrowserThread, Visit, shot

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
XSS_TEXT = '<script>window.__pwned = 1</script><b onmouseover="alert(2)">x</b>'


def axe_source() -> str:
    data = AXE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == AXE_SHA256, "tests/browser/vendor/axe.min.js changed"
    return data.decode()


def _own(base: str, url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    origin = urllib.parse.urlsplit(base)
    if (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc):
        return False
    return parts.path.startswith("/api/v1/") or parts.path in console.load()


def axe_violations(page: object) -> list[str]:
    found = page.evaluate(  # type: ignore[attr-defined]
        """async () => {
            const r = await axe.run(document, { resultTypes: ["violations"] });
            return r.violations.filter(v => ["serious", "critical"].includes(v.impact))
                .map(v => `${v.id} (${v.impact}): ${v.nodes.map(n => n.target.join(" ")).slice(0, 3).join(", ")}`);
        }"""
    )
    return list(found)


async def test_pages_request_only_the_api_and_own_files_and_pass_axe(
    appliance: runtime.Running, tokens: dict, plan: dict, admin: httpx.AsyncClient,
    browser: BrowserThread, base: str,
) -> None:
    # Text from other people in more places than the lease's hostname.
    await admin.post("/tenants", json={"name": "evil", "description": XSS_TEXT})
    await admin.post(f"/subnets/{plan['subnet']['id']}/assignments",
                     json={"ip": "127.77.0.151", "hostname": "evil", "description": XSS_TEXT})
    server = (await admin.post("/dns-servers", json={"name": "self", "adapter": "embedded"})).json()
    zone = (await admin.post("/dns-zones", json={"name": "lan.example",
                                                 "server_id": server["id"]})).json()
    await admin.post(f"/dns-zones/{zone['id']}/records", json={
        "name": "www", "type": "A", "value": "127.77.9.9"})
    sid = plan["subnet"]["id"]
    ip = plan["xss_ip"]
    pages = {
        "dashboard": "#/", "prefixes": "#/prefixes", "subnet": f"#/subnets/{sid}",
        "leases": "#/leases", "search": f"#/search?q={ip}", "history": f"#/history?ip={ip}",
        "work": "#/work", "webhooks": "#/webhooks", "tokens": "#/tokens", "audit": "#/audit",
        "client-classes": "#/client-classes", "tenants": "#/tenants", "settings": "#/settings",
        "license": "#/license", "nodes": "#/nodes", "alerts": "#/alerts",
        "alert-destinations": "#/alert-destinations", "dns": "#/dns",
        "dns-zone": f"#/dns/zones/{zone['id']}", "shared-networks": "#/shared-networks",
    }
    source = axe_source()

    def drive(v: Visit) -> dict:
        page = v.page
        page.add_init_script(source)  # through DevTools: the page's CSP stays as served
        violations: dict[str, list[str]] = {}
        for name, route in pages.items():
            v.go(route)
            expect(page.locator("main h1")).to_be_visible()
            page.wait_for_load_state("networkidle")
            expect(page.locator(".alert.error")).to_have_count(0)
            shot(page, f"page-{name}")
            violations[name] = axe_violations(page)
        # Rendered as text: visible as typed, no element made of it, nothing ran.
        v.go("#/leases")
        expect(page.get_by_role("cell", name=XSS_HOSTNAME, exact=True)).to_be_visible()
        v.go(f"#/subnets/{sid}")
        expect(page.get_by_role("cell", name=XSS_TEXT, exact=True)).to_be_visible()
        page.locator(f'.cell[data-ip="{ip}"]').hover()
        expect(page.locator(".map-info")).to_contain_text(XSS_HOSTNAME)
        v.go("#/tenants")
        expect(page.get_by_role("cell", name=XSS_TEXT, exact=True)).to_be_visible()
        page.get_by_role("cell", name=XSS_TEXT, exact=True).hover()
        injected = page.evaluate(
            "[document.querySelectorAll('img[src=x], main script, main b').length,"
            " window.__pwned === undefined]")
        # The sign-in page, signed out.
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("API token")).to_be_visible()
        violations["sign-in"] = axe_violations(page)
        shot(page, "page-sign-in")
        return {"violations": violations, "injected": injected}

    def dashboard(v: Visit) -> float:
        started = time.perf_counter()
        v.go()
        worst = v.page.locator("section", has=v.page.get_by_role(
            "heading", name="Subnet utilisation (worst first)"))
        expect(worst.get_by_role("link", name="127.77.0.0/24")).to_be_visible()
        expect(v.page.locator("dd").first).to_be_visible()
        return time.perf_counter() - started

    def signin(v: Visit) -> float:
        started = time.perf_counter()
        v.go()
        expect(v.page.get_by_label("API token")).to_be_editable()
        return time.perf_counter() - started

    seen: list[Visit] = []

    def recorded(v: Visit) -> dict:
        seen.append(v)
        return drive(v)

    result = await browser.run(base, recorded, token=tokens["admin"])
    visit = seen[0]
    assert visit.requests, "no request recorded"
    outside = [u for u in visit.requests if not _own(base, u)]
    assert outside == [], outside
    assert visit.dialogs == []  # alert(1) / alert(2) never ran
    assert result["injected"] == [0, True]
    assert not [e for e in visit.console_errors if "Content Security Policy" in e], visit.console_errors
    assert {k: v for k, v in result["violations"].items() if v} == {}
    cold = await browser.run(base, signin)
    first = await browser.run(base, dashboard, token=tokens["admin"])

    def narrow(v: Visit) -> list[str]:
        v.page.add_init_script(source)
        v.go(f"#/subnets/{sid}")
        expect(v.page.locator(f'.cell[data-ip="{ip}"]')).to_have_attribute("data-state", "leased")
        shot(v.page, "narrow-subnet")
        return axe_violations(v.page)

    assert await browser.run(base, narrow, token=tokens["viewer"], viewport=(420, 860)) == []
    print("sign-in usable (fresh tab):", round(cold, 3), "s | dashboard complete (fresh tab):",
          round(first, 3), "s")


async def test_map_of_a_slash_16_with_30k_leases(appliance: runtime.Running, tokens: dict,
                                                 admin: httpx.AsyncClient, db: Database,
                                                 browser: BrowserThread, base: str) -> None:
    prefix = (await admin.post("/prefixes", json={"cidr": "10.88.0.0/16"})).json()
    subnet = await admin.post("/subnets", json={"prefix_id": prefix["id"], "cidr": "10.88.0.0/16",
                                                "gateway": "10.88.0.1"})
    assert subnet.status_code == 201, subnet.text
    sid = subnet.json()["id"]

    async def fill(conn: object) -> None:
        await conn.execute(  # type: ignore[attr-defined]
            """INSERT INTO lease_events (at, lease_id, event, subnet_id, ip, mac, hostname,
                                         giaddr, expires_at)
               SELECT now() - interval '1 hour', gen_random_uuid(), 'granted', $1,
                      '10.88.0.0'::inet + (256 + n),
                      ('02:00:' || lpad(to_hex(n / 65536), 2, '0') || ':'
                       || lpad(to_hex(n / 256 % 256), 2, '0') || ':'
                       || lpad(to_hex(n % 256), 2, '0') || ':01')::macaddr,
                      'host-' || n, '10.88.0.1', now() + interval '7 days'
               FROM generate_series(0, 29999) n""",
            sid,
        )

    await db.transaction(fill)

    def drive(v: Visit) -> dict:
        page = v.page
        v.go(f"#/subnets/{sid}")
        expect(page.get_by_role("heading", name="Address map")).to_be_visible()
        started = time.perf_counter()
        blocks = page.locator(".map-blocks .block")
        expect(blocks).to_have_count(256, timeout=30_000)
        drawn = time.perf_counter() - started
        in_page = int(page.locator(".address-map").get_attribute("data-draw-ms"))
        expect(page.get_by_role("list", name="Legend")).to_contain_text("leased 30000")
        # Each /24 coloured by how full it is: full, the gateway alone, nothing.
        for block, heat in (("10.88.1.0", "heat-4"), ("10.88.0.0", "heat-1"),
                            ("10.88.200.0", "heat-0")):
            expect(page.locator(f'.block[data-block="{block}"]')).to_have_class(f"block {heat}")
        shot(page, "map-slash-16")
        opened = time.perf_counter()
        page.locator('.block[data-block="10.88.1.0"]').click()
        cells = page.locator(".map-grid .cell")
        expect(cells).to_have_count(256)
        drill = time.perf_counter() - opened
        expect(page.locator('.cell[data-ip="10.88.1.5"]')).to_have_attribute("data-state", "leased")
        page.locator('.cell[data-ip="10.88.1.5"]').click()
        expect(page.locator(".map-info")).to_contain_text("10.88.1.5 — leased — MAC 02:00:00:00:05:01 — host host-5")
        shot(page, "map-slash-16-block")
        page.get_by_role("button", name="← All /24 blocks").click()
        expect(blocks).to_have_count(256)
        return {"drawn_after_heading_s": round(drawn, 3), "fetch_decode_draw_ms": in_page,
                "drill_down_s": round(drill, 3)}

    figures = await browser.run(base, drive, token=tokens["viewer"])
    print("map of a /16 with 30k leases:", figures)
    assert figures["fetch_decode_draw_ms"] > 0
