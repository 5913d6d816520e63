"""The Shared networks page and the subnet form's shared network field (docs/api-ipam.md,
"Shared networks"): a group made, two subnets joined from their own forms, the members shown
in the order the server tries them, the delete of a group with members refused with the
API's message, the description edited; the API holds what the pages made."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.harness import BrowserThread, Visit


async def _made(client: httpx.AsyncClient, path: str, body: dict) -> dict:
    reply = await client.post(path, json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


async def test_a_shared_network_made_joined_and_shown(
    appliance: runtime.Running, tokens: dict, browser: BrowserThread, base: str,
    admin: httpx.AsyncClient,
) -> None:
    prefix = await _made(admin, "/prefixes", {"cidr": "127.79.0.0/16"})
    first = await _made(admin, "/subnets", {"prefix_id": prefix["id"], "cidr": "127.79.4.0/24",
                                            "gateway": "127.79.4.1", "name": "overflow"})
    second = await _made(admin, "/subnets", {"prefix_id": prefix["id"], "cidr": "127.79.1.0/24",
                                             "gateway": "127.79.1.1"})

    def drive(v: Visit) -> None:
        page = v.page
        v.go("#/shared-networks")
        page.get_by_role("button", name="New shared network").click()
        page.get_by_label("Name", exact=True).fill("vlan-10")
        page.get_by_role("button", name="Create shared network").click()
        expect(page.get_by_role("cell", name="vlan-10", exact=True)).to_be_visible()
        for subnet in (first, second):  # each joins from its own form
            v.go(f"#/subnets/{subnet['id']}")
            page.get_by_role("button", name="Edit subnet").click()
            page.get_by_label("Shared network").select_option(label="vlan-10")
            page.get_by_role("button", name="Save").click()
            settings = page.locator("section", has=page.get_by_role("heading", name="Settings"))
            expect(settings.get_by_role("link", name="vlan-10", exact=True)).to_be_visible()
        v.go("#/shared-networks")
        members = page.get_by_test_id("members")
        expect(members).to_have_text("127.79.1.0/24, 127.79.4.0/24 (overflow)")  # by address
        page.get_by_role("button", name="Delete shared network vlan-10").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator(".alert.error")).to_contain_text("still has 2 subnets")
        page.get_by_role("button", name="Edit shared network vlan-10").click()
        page.get_by_label("Description").fill("floor 3, second /24")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_role("cell", name="floor 3, second /24", exact=True)).to_be_visible()
        assert v.dialogs == []

    await browser.run(base, drive, token=tokens["operator"])
    (group,) = (await admin.get("/shared-networks")).json()["items"]
    assert group["name"] == "vlan-10" and group["description"] == "floor 3, second /24"
    assert [s["id"] for s in group["subnets"]] == [second["id"], first["id"]]
    for subnet in (first, second):
        got = (await admin.get(f"/subnets/{subnet['id']}")).json()
        assert got["shared_network_id"] == group["id"]
