"""A client class's and a reservation's pages (docs/api-ipam.md, "Option scopes"): their
options listed and added through the per-code form, their fields edited; the API holds
what the pages made. The subnet page's effective options name each option's scope."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.harness import BrowserThread, Visit


async def _made(client: httpx.AsyncClient, path: str, body: dict) -> dict:
    reply = await client.post(path, json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


async def test_class_and_reservation_pages_edit_their_options(
    appliance: runtime.Running, tokens: dict, browser: BrowserThread, base: str,
    admin: httpx.AsyncClient,
) -> None:
    prefix = await _made(admin, "/prefixes", {"cidr": "127.78.0.0/16"})
    subnet = await _made(admin, "/subnets", {"prefix_id": prefix["id"], "cidr": "127.78.0.0/24",
                                             "gateway": "127.78.0.1"})
    res = await _made(admin, f"/subnets/{subnet['id']}/reservations",
                      {"ip": "127.78.0.50", "mac": "02:00:00:00:78:50"})
    uefi = await _made(admin, "/client-classes", {"name": "uefi", "match": "arch", "value": "7",
                                                  "boot_file": "grubx64.efi"})

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/client-classes")
        classes = page.locator("section", has=page.get_by_role("heading", name="Client classes"))
        expect(classes.get_by_role("cell", name="grubx64.efi", exact=True)).to_be_visible()
        classes.get_by_role("link", name="uefi", exact=True).click()
        expect(page.get_by_role("heading", name="Client class uefi")).to_be_visible()
        opts = page.locator("section", has=page.get_by_role("heading", name="Options for its clients"))
        opts.get_by_role("button", name="New option").click()
        opts.get_by_label("Option", exact=True).select_option("6")
        opts.get_by_label("DNS server addresses (comma separated)").fill("127.78.0.53")
        opts.get_by_role("button", name="Add option").click()
        expect(opts.get_by_role("cell", name="127.78.0.53", exact=True)).to_be_visible()
        card = page.locator("section", has=page.get_by_role("heading", name="Class", exact=True))
        card.get_by_role("button", name="Edit").click()
        card.get_by_label("Priority (lowest wins)").fill("5")
        card.get_by_role("button", name="Save").click()
        expect(page.locator("section", has=page.get_by_role("heading", name="Class", exact=True))
               .locator("dd", has_text="5")).to_be_visible()

        v.go(f"#/subnets/{subnet['id']}")
        # What the reserved client with option 93 = 7 would get, and from where.
        eff = page.locator("section", has=page.get_by_role("heading", name="Effective options"))
        eff.get_by_label("Client MAC").fill("02:00:00:00:78:50")
        eff.get_by_label("Architecture (option 93)").fill("7")
        eff.get_by_role("button", name="Show").click()
        shown = eff.get_by_test_id("effective")
        expect(shown).to_contain_text("Classes: uefi · Reservation: 127.78.0.50")
        expect(shown).to_contain_text("Boot file: grubx64.efi (class uefi)")
        expect(shown.get_by_role("row", name=re.compile("^6 — DNS servers"))).to_contain_text(
            "class uefi")
        expect(shown.get_by_role("row", name=re.compile("^1 — "))).to_contain_text("subnet")
        reservations = page.locator("section", has=page.get_by_role("heading", name="Reservations"))
        reservations.get_by_role("link", name="127.78.0.50", exact=True).click()
        expect(page.get_by_role("heading", name="Reservation 127.78.0.50")).to_be_visible()
        own = page.locator("section", has=page.get_by_role("heading", name="Options for this client"))
        own.get_by_role("button", name="New option").click()
        own.get_by_label("Option", exact=True).select_option("15")
        own.get_by_label("Domain name").fill("printers.example")
        own.get_by_role("button", name="Add option").click()
        expect(own.get_by_role("cell", name="printers.example", exact=True)).to_be_visible()
        assert v.dialogs == []

    await browser.run(base, drive, token=tokens["operator"])
    class_options = (await admin.get(f"/client-classes/{uefi['id']}/options")).json()["items"]
    assert [(o["code"], o["payload"]) for o in class_options] == [
        (6, {"addresses": ["127.78.0.53"]})]
    assert (await admin.get(f"/client-classes/{uefi['id']}")).json()["priority"] == 5
    own_options = (await admin.get(f"/reservations/{res['id']}/options")).json()["items"]
    assert [(o["code"], o["payload"]) for o in own_options] == [(15, {"value": "printers.example"})]
