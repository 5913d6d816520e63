"""The console on an IPv6 subnet (docs/console.md): no gateway/PXE fields, exact decimal
counts, DUID reservations, DHCPv6 options by name, delegation pools with DUID reservations,
the leases page's DHCPv6 columns; axe finds no serious violation on the subnet page."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio
from playwright.sync_api import expect

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from tests.browser.harness import BrowserThread, Visit, shot
from tests.browser.test_quality import axe_source, axe_violations
from tests.integration.dhcp6.harness import (
    Relay6,
    client_duid,
    dhcp6_section,
    message,
    relay_socket,
    seed_v6,
)

DUID = "00:03:00:01:02:00:00:00:66:01"
ROUTER_DUID = "00:03:00:01:02:00:00:00:66:02"
# A /64 has 2^64 - 1 host addresses (the Subnet-Router anycast is not one, RFC 4291 §2.6.1):
# a JS number would show 18446744073709552000.
SIZE = "18446744073709551615"


@pytest.fixture
async def config_overrides(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    # The DHCPv6 server only (no DHCPv4); a test that wants bindings seeds its plan first.
    if "seeded" in request.fixturenames:
        request.getfixturevalue("seeded")
    return {"dhcp6": dhcp6_section()}


@pytest.fixture
async def seeded(db: Database) -> dict[str, Any]:
    async def seed(conn: Any) -> Any:
        return await seed_v6(conn)

    return await db.transaction(seed)


@pytest.fixture
async def relay6(appliance: runtime.Running, nursery: trio.Nursery) -> Relay6:
    server = appliance.state.dhcp6
    assert server is not None
    found = Relay6(trio.socket.from_stdlib_socket(relay_socket()), server.addresses[0])
    nursery.start_soon(found.run)
    return found


async def test_ipv6_subnet_page(appliance: runtime.Running, tokens: dict, admin: httpx.AsyncClient,
                                browser: BrowserThread, base: str) -> None:
    async def made(path: str, body: dict) -> dict:
        reply = await admin.post(path, json=body)
        assert reply.status_code == 201, reply.text
        return reply.json()

    top = await made("/prefixes", {"cidr": "2001:db8::/32", "description": "v6 lab"})
    subnet = await made("/subnets", {"prefix_id": top["id"], "cidr": "2001:db8:1::/64", "name": "v6-lab"})
    sid = subnet["id"]
    source = axe_source()

    def drive(v: Visit) -> list[str]:
        page = v.page
        page.add_init_script(source)
        v.go(f"#/subnets/{sid}")
        expect(page.get_by_role("heading", name="Subnet 2001:db8:1::/64 — v6-lab")).to_be_visible()
        settings = page.locator("section", has=page.get_by_role("heading", name="Settings"))
        expect(settings.get_by_test_id("v6-note")).to_contain_text("Router Advertisements")
        expect(settings.get_by_test_id("v6-note")).to_contain_text("option 59")
        for label in ("Gateway", "PXE next server", "PXE boot file"):
            expect(settings.locator("dt", has_text=label)).to_have_count(0)
        usage = page.locator("section", has=page.get_by_role("heading", name="Utilisation"))

        def stat(name: str) -> object:
            return usage.locator("dt", has_text=name).locator("xpath=following-sibling::dd[1]").first

        expect(stat("size")).to_have_text(SIZE)
        expect(stat("free")).to_have_text(SIZE)

        # A DUID reservation; no MAC or client id offered on an IPv6 subnet.
        res = page.locator("section", has=page.get_by_role("heading", name="Reservations", exact=True))
        res.get_by_role("button", name="New reservation").click()
        expect(res.get_by_label("MAC")).to_have_count(0)
        expect(res.get_by_label("Client id")).to_have_count(0)
        res.get_by_label("IP (empty: next free)").fill("2001:db8:1::10")
        res.get_by_label("DUID").fill(DUID)
        res.get_by_label("Hostname").fill("v6-host")
        res.get_by_role("button", name="Create reservation").click()
        expect(res.locator(".alert.ok")).to_contain_text("reservation created")
        expect(res.get_by_role("cell", name=DUID, exact=True)).to_be_visible()
        expect(stat("reserved")).to_have_text("1")
        expect(stat("free")).to_have_text("18446744073709551614")  # exact, one less
        held = page.locator("section", has=page.get_by_role("heading", name="Address map"))
        expect(held.get_by_role("row", name="2001:db8:1::10")).to_contain_text("reserved")

        # DHCPv6 options by name: 23 (RFC 3646) through its form.
        opts = page.locator("section", has=page.get_by_role("heading", name="Options", exact=True))
        opts.get_by_role("button", name="New option").click()
        opts.get_by_label("Option", exact=True).select_option(label="23 — DNS recursive name servers (RFC 3646)")
        opts.get_by_label("DNS server IPv6 addresses (comma separated)").fill("2001:db8:1::53")
        opts.get_by_role("button", name="Add option").click()
        expect(opts.get_by_role("cell", name="23 — DNS recursive name servers (RFC 3646)", exact=True)).to_be_visible()
        expect(opts.get_by_role("cell", name="2001:db8:1::53", exact=True)).to_be_visible()

        # A delegation pool, its size exact, and a delegated prefix reserved by DUID.
        pd = page.locator("section", has=page.get_by_role("heading", name="Delegation pools"))
        pd.get_by_role("button", name="New delegation pool").click()
        pd.get_by_label("Name").fill("cpe")
        pd.get_by_label("Prefix", exact=True).fill("2001:db8:100::/40")
        pd.get_by_label("Delegated length").fill("56")
        pd.get_by_role("button", name="Create delegation pool").click()
        row = pd.get_by_role("row", name="cpe")
        expect(row.get_by_role("cell", name="65536", exact=True)).to_be_visible()
        row.get_by_text("Reservations of cpe").click()
        pres = pd.locator("section", has=page.get_by_role("heading", name="Reserved prefixes of cpe"))
        pres.get_by_role("button", name="New delegated prefix reservation").click()
        pres.get_by_label("Delegated prefix (a /56)").fill("2001:db8:100:100::/56")
        pres.get_by_label("DUID of the requesting router").fill(ROUTER_DUID)
        pres.get_by_role("button", name="Create delegated prefix reservation").click()
        expect(pres.get_by_role("cell", name=ROUTER_DUID, exact=True)).to_be_visible()
        # A pool holding a reservation is not deleted (409, said); an empty one is.
        pd.get_by_role("button", name="Delete delegation pool cpe (2001:db8:100::/40)").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(pd.locator(".alert.error").first).to_contain_text("reservation")
        pd.get_by_role("button", name="New delegation pool").click()
        pd.get_by_label("Name").fill("spare")
        pd.get_by_label("Prefix", exact=True).fill("2001:db8:200::/40")
        pd.get_by_label("Delegated length").fill("48")
        pd.get_by_role("button", name="Create delegation pool").click()
        expect(pd.get_by_role("row", name="spare").get_by_role("cell", name="256", exact=True)).to_be_visible()
        pd.get_by_role("button", name="Delete delegation pool spare (2001:db8:200::/40)").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(pd.get_by_role("row", name="spare")).to_have_count(0)
        shot(page, "subnet-ipv6")
        page.wait_for_load_state("networkidle")
        expect(page.locator(".alert.error")).to_have_count(0)
        found = axe_violations(page)

        # The leases page has the DHCPv6 binding's columns.
        v.go("#/leases")
        for name in ("DUID", "IAID", "IA type", "Prefix length"):
            expect(page.get_by_role("columnheader", name=name, exact=True)).to_be_visible()
        assert v.dialogs == []
        return found

    violations = await browser.run(base, drive, token=tokens["operator"])
    assert violations == []
    reservations = (await admin.get(f"/subnets/{sid}/pd-pools")).json()["items"]
    assert [(p["prefix"], p["delegated_length"]) for p in reservations] == [("2001:db8:100::/40", 56)]


async def test_leases_page_shows_dhcpv6_bindings(seeded: dict, appliance: runtime.Running, relay6: Relay6,
                                                 tokens: dict, browser: BrowserThread, base: str) -> None:
    # A real binding from the DHCPv6 server: an address (IA_NA) and a delegated prefix (IA_PD).
    reply = await relay6.exchange(message(p.SOLICIT, 0x21, client_duid(7), pd=[], iaid=9, rapid=True))
    assert reply is not None and reply.msg_type == p.REPLY
    duid = client_duid(7).text

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/leases")
        for ia_type, length in (("na", "/128"), ("pd", "/56")):
            row = page.get_by_role("row").filter(has=page.get_by_role("cell", name=ia_type, exact=True))
            expect(row).to_have_count(1)
            for text in (duid, "9", length, "active"):
                expect(row.get_by_role("cell", name=text, exact=True)).to_be_visible()
        shot(page, "leases-ipv6")
        assert v.dialogs == []

    await browser.run(base, drive, token=tokens["viewer"])
