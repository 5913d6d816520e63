"""Sign-in, the first-token bootstrap on loopback, and what each role is offered."""

from __future__ import annotations

import re
import time

import httpx
from playwright.sync_api import expect

from ipamd import runtime
from tests.browser.harness import BrowserThread, Visit, shot
from tests.browser.test_quality import axe_source, axe_violations


async def test_bootstrap_first_token_on_loopback(appliance: runtime.Running,
                                                 browser: BrowserThread, base: str) -> None:
    source = axe_source()

    def drive(v: Visit) -> str:
        page = v.page
        page.add_init_script(source)
        v.go()
        expect(page.get_by_role("heading", name="Welcome to ipamd")).to_be_visible()
        assert axe_violations(page) == []
        page.get_by_label("Token name").fill("first admin")
        page.get_by_role("button", name="Create the first admin token").click()
        secret = page.get_by_label("Admin token secret").input_value()
        assert secret.startswith("service_live_")
        expect(page.get_by_role("button", name="Copy")).to_be_visible()
        shot(page, "bootstrap")
        assert axe_violations(page) == []
        page.get_by_role("button", name="Continue signed in with this token").click()
        expect(page.get_by_test_id("who-name")).to_have_text("first admin")
        expect(page.get_by_test_id("who-role")).to_have_text("admin")
        # The secret lives in this tab's sessionStorage only; no cookie was ever set.
        assert page.evaluate("sessionStorage.getItem('ipamd.token')") == secret
        assert page.context.cookies() == []
        return secret

    secret = await browser.run(base, drive)
    async with httpx.AsyncClient(base_url=base + "/api/v1") as client:
        me = await client.get("/whoami", headers={"Authorization": f"Bearer {secret}"})
        assert me.status_code == 200 and me.json()["role"] == "admin"
        # The window is closed now: without a token the console is asked to sign in.
        assert (await client.get("/whoami")).status_code == 401

    def after(v: Visit) -> None:
        v.go()
        expect(v.page.get_by_label("API token")).to_be_visible()
        expect(v.page.get_by_text("Welcome to ipamd")).to_have_count(0)

    await browser.run(base, after)


async def test_sign_in_shows_name_and_role_and_hides_by_role(
    appliance: runtime.Running, tokens: dict[str, str], browser: BrowserThread, base: str
) -> None:
    def drive(role: str) -> callable:
        def inner(v: Visit) -> dict:
            page = v.page
            started = time.perf_counter()
            v.go("#/prefixes")
            token = page.get_by_label("API token")
            expect(token).to_be_visible()
            usable = time.perf_counter() - started
            assert token.get_attribute("type") == "password"
            token.fill("service_live_wrong")
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("alert")).to_contain_text("invalid token")
            token.fill(tokens[role])
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_test_id("who-name")).to_have_text(role)
            expect(page.get_by_test_id("who-role")).to_have_text(role)
            expect(page.get_by_role("heading", name="Prefixes and subnets")).to_be_visible()
            # The page's h1 comes before its Prefixes section (the tenant list loads first);
            # the section's h2 and its write button are put in together, so wait for the h2.
            expect(page.get_by_role("heading", name="Prefixes", exact=True)).to_be_visible()
            nav = page.get_by_role("navigation", name="Main")
            links = nav.get_by_role("link").all_inner_texts()
            writes = page.get_by_role("button", name="New prefix").count()
            shot(page, f"prefixes-{role}")
            # Back to sign-in on sign-out; the token is gone from the tab.
            page.get_by_role("button", name="Sign out").click()
            expect(page.get_by_label("API token")).to_be_visible()
            assert page.evaluate("sessionStorage.getItem('ipamd.token')") is None
            return {"links": links, "writes": writes, "usable": usable}
        return inner

    seen = {role: await browser.run(base, drive(role)) for role in ("viewer", "operator", "admin")}
    assert seen["viewer"]["writes"] == 0
    assert seen["operator"]["writes"] == 1 and seen["admin"]["writes"] == 1
    for role in ("viewer", "operator"):
        assert "Webhooks" not in seen[role]["links"] and "Tokens" not in seen[role]["links"]
    assert {"Webhooks", "Tokens", "Dashboard", "Leases", "Work"} <= set(seen["admin"]["links"])
    print("sign-in page usable after", {r: round(s["usable"], 3) for r, s in seen.items()}, "s")


async def test_forbidden_is_shown_as_the_api_says(
    appliance: runtime.Running, tokens: dict[str, str], browser: BrowserThread, base: str
) -> None:
    def drive(v: Visit) -> None:
        v.go("#/tokens")  # a deep link to an admin page, as an operator
        expect(v.page.get_by_role("alert")).to_contain_text(
            re.compile("needs the admin role; the token is operator"))

    await browser.run(base, drive, token=tokens["operator"])
