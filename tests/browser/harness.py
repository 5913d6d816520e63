"""Playwright (sync API) on one thread of its own, driven from trio tests.

Playwright's sync objects belong to the thread that made them, and the appliance under test
runs on the test's trio loop: so the browser lives on a dedicated thread and each test hands
it a function to run there (``await browser.run(fn)``) while trio keeps serving the API.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

CHROMIUM = os.environ.get("IPAMD_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("IPAMD_BROWSER_ARTIFACTS", "/tmp/ipamd-browser-artifacts"))
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=Translate,OptimizationHints,MediaRouter,NetworkTimeServiceQuerying",
]


def chromium_available() -> bool:
    return shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists()


@dataclass
class Visit:
    """One browser context: its page and every request it made."""

    page: Any
    base: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def go(self, route: str = "") -> None:
        self.page.goto(self.base + "/" + route)

    def outside(self) -> list[str]:
        """Requests to anything but this origin's /api/v1 and the console's files."""
        bad = []
        origin = urllib.parse.urlsplit(self.base)
        for url in self.requests:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme in ("data", "blob"):
                continue
            if (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc):
                bad.append(url)
        return bad


class BrowserThread:
    def __init__(self) -> None:
        self.jobs: queue.Queue[Any] = queue.Queue()
        self.thread = threading.Thread(target=self._main, name="playwright", daemon=True)
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread.start()
        self.ready.wait(60)
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        from playwright.sync_api import sync_playwright

        try:
            pw = sync_playwright().start()  # its own asyncio loop, on this thread
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except BaseException as error:  # report to the waiting fixture
            self.error = error
            self.ready.set()
            return
        self.browser = browser
        self.ready.set()
        while True:
            job = self.jobs.get()
            if job is None:
                break
            fn, done = job
            try:
                done.put((True, fn(browser)))
            except BaseException as error:  # handed back to the test
                done.put((False, error))
        browser.close()
        pw.stop()

    def call(self, fn: Callable[[Any], Any]) -> Any:
        done: queue.Queue[Any] = queue.Queue()
        self.jobs.put((fn, done))
        ok, value = done.get()
        if not ok:
            raise value
        return value

    async def run(self, base: str, fn: Callable[[Visit], Any], *, token: str | None = None,
                  viewport: tuple[int, int] = (1280, 860)) -> Any:
        """Run fn(visit) in a fresh context (own sessionStorage), optionally signed in."""

        def job(browser: Any) -> Any:
            context = browser.new_context(
                viewport={"width": viewport[0], "height": viewport[1]},
                accept_downloads=True, service_workers="block",
            )
            try:
                page = context.new_page()
                page.set_default_timeout(15_000)
                visit = Visit(page, base)
                page.on("request", lambda r: visit.requests.append(r.url))
                page.on("console", lambda m: visit.console_errors.append(m.text)
                        if m.type == "error" else None)
                page.on("dialog", lambda d: (visit.dialogs.append(d.message), d.dismiss()))
                if token is not None:
                    page.add_init_script(
                        f"sessionStorage.setItem('ipamd.token', {token!r});"
                    )
                return fn(visit)
            finally:
                context.close()

        return await trio.to_thread.run_sync(self.call, job)

    def close(self) -> None:
        self.jobs.put(None)
        self.thread.join(30)


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
