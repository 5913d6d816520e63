"""DNS pages: servers (admin writes; others see secret locations redacted), zones, a zone's
static records created, edited and deleted from the console and answered by the embedded DNS
server as `dig` sees it; the subnet form's DDNS server as a picker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.harness import BrowserThread, Visit, shot
from tests.integration.ipam.helpers import created
from tests.support.bind import DIG, free_port
from tests.support.daemons import dig_short

DNS_PORT = free_port()
ZONE = "lan.example"


@pytest.fixture
def config_overrides() -> dict[str, dict[str, Any]]:
    if not Path(DIG).exists():
        pytest.fail("dig is missing: `make system-test` installs bind9-dnsutils")
    return {"dns": {"enabled": True, "listen": [f"127.0.0.1:{DNS_PORT}"],
                    "ns_name": "ns1.lan.example", "hostmaster": "hostmaster.lan.example"}}


def answered(name: str, want: list[str], rtype: str = "A") -> None:
    """Wait (bounded) until the embedded server answers `name` with `want`."""
    got: list[str] = []
    for _ in range(100):
        got = dig_short(DNS_PORT, name, rtype)
        if got == want:
            return
        time.sleep(0.1)
    raise AssertionError(f"dig {name} {rtype}: {got}, wanted {want}")


async def test_dns_pages_and_records_seen_by_dig(
    appliance: runtime.Running, tokens: dict, admin: httpx.AsyncClient,
    browser: BrowserThread, base: str,
) -> None:
    prefix = created(await admin.post("/prefixes", json={"cidr": "127.78.0.0/16"}))
    subnet = created(await admin.post("/subnets", json={"prefix_id": prefix["id"],
                                                        "cidr": "127.78.1.0/24"}))

    def as_admin(v: Visit) -> None:
        page = v.page
        v.go("#/dns")
        page.get_by_role("button", name="New DNS server").click()
        page.get_by_label("Name", exact=True).fill("self")
        page.get_by_label("Adapter").select_option("embedded")
        page.get_by_role("button", name="Create DNS server").click()
        expect(page.get_by_role("cell", name="self", exact=True)).to_be_visible()
        # The API's field rules, shown beside the field: a secret reference, not a secret.
        page.get_by_role("button", name="New DNS server").click()
        page.get_by_label("Name", exact=True).fill("bind")
        page.get_by_label("Adapter").select_option("bind_tsig")
        page.get_by_label("Address (bind_tsig)").fill("127.0.0.1")
        page.get_by_label("TSIG key name (bind_tsig)").fill("ddns-key")
        page.get_by_label("Secret reference (env:NAME or file:/path)").fill("c2VjcmV0")
        page.get_by_role("button", name="Create DNS server").click()
        expect(page.locator(".field[data-field=secret_ref] .field-error")).not_to_be_empty()
        page.get_by_label("Secret reference (env:NAME or file:/path)").fill("env:IPAMD_TEST_TSIG")
        page.get_by_role("button", name="Create DNS server").click()
        expect(page.get_by_role("cell", name="env:IPAMD_TEST_TSIG", exact=True)).to_be_visible()
        # A zone on the embedded server, its server picked by name.
        page.get_by_role("button", name="New zone").click()
        page.get_by_label("Zone name").fill(ZONE)
        page.get_by_label("Server", exact=True).select_option(label="self (embedded)")
        page.get_by_role("button", name="Create zone").click()
        expect(page.get_by_role("link", name=ZONE, exact=True)).to_be_visible()
        expect(page.get_by_role("cell", name="self", exact=True)).to_have_count(2)

    await browser.run(base, as_admin, token=tokens["admin"])
    servers = {s["name"]: s for s in (await admin.get("/dns-servers")).json()["items"]}
    assert servers["bind"]["secret_ref"] == "env:IPAMD_TEST_TSIG"

    def as_operator(v: Visit) -> None:
        page = v.page
        v.go("#/dns")
        # Operators see where secrets live as (redacted), and no server writes.
        expect(page.get_by_role("cell", name="(redacted)", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="New DNS server")).to_have_count(0)
        expect(page.get_by_role("button", name="Delete DNS server bind")).to_have_count(0)
        expect(page.get_by_role("link", name="Work → DNS").first).to_have_attribute(
            "href", "#/work?kind=dns")
        page.get_by_role("link", name=ZONE, exact=True).click()
        expect(page.get_by_role("heading", name=f"Zone {ZONE}")).to_be_visible()
        page.get_by_role("button", name="New record").click()
        page.get_by_label("Name (@, relative or absolute in the zone)").fill("www")
        page.get_by_label("Type").select_option("A")
        page.get_by_label("Value").fill("not-an-address")
        page.get_by_role("button", name="Create record").click()
        expect(page.locator(".field[data-field=value] .field-error")).not_to_be_empty()
        page.get_by_label("Value").fill("127.77.9.9")
        page.get_by_role("button", name="Create record").click()
        expect(page.get_by_role("cell", name=f"www.{ZONE}", exact=True)).to_be_visible()
        answered(f"www.{ZONE}", ["127.77.9.9"])
        shot(page, "dns-zone")

        page.get_by_role("button", name=f"Edit record www.{ZONE} A").click()
        page.get_by_label("Value").fill("127.77.9.10")
        page.get_by_label("TTL (empty: the zone's default)").fill("120")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_role("cell", name="127.77.9.10", exact=True)).to_be_visible()
        answered(f"www.{ZONE}", ["127.77.9.10"])

        page.get_by_role("button", name=f"Delete record www.{ZONE} A").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text(f"www.{ZONE}")
        dialog.get_by_role("button", name="Delete").click()
        expect(page.get_by_role("cell", name=f"www.{ZONE}", exact=True)).to_have_count(0)
        answered(f"www.{ZONE}", [])

        # The subnet form picks the DDNS server by name and offers the known zones.
        v.go(f"#/subnets/{subnet['id']}")
        page.get_by_role("button", name="Edit subnet").click()
        page.get_by_label("DDNS adapter").select_option("embedded")
        page.get_by_label("DDNS server").select_option(label="self (embedded)")
        zone = page.get_by_label("DDNS forward zone")
        expect(page.locator(f"datalist#{zone.get_attribute('list')} option")).to_have_attribute(
            "value", ZONE)
        zone.fill(ZONE)
        page.get_by_role("button", name="Save").click()
        expect(page.locator("dl.kv").get_by_role("link", name="self")).to_be_visible()
        v.go("#/dns")
        expect(page.get_by_role("heading", name="Zones")).to_be_visible()
        shot(page, "dns")

    await browser.run(base, as_operator, token=tokens["operator"])
    changed = (await admin.get(f"/subnets/{subnet['id']}")).json()
    assert changed["ddns_server_id"] == servers["self"]["id"]
    assert changed["ddns_zone"] == ZONE and changed["ddns_adapter"] == "embedded"
    records = (await admin.get("/audit", params={"object_type": "dns_record"})).json()["items"]
    assert {a["action"] for a in records} == {"create", "update", "delete"}
