"""Applying a file with `ipamd-import` against the test's appliance (its loopback face)."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import trio

from ipamd.importer import apply as applying
from ipamd.importer import cli, kea
from ipamd.runtime import Running

EXAMPLES = Path("/usr/share/doc/kea/examples")  # Debian's kea-doc (Makefile TEST_PACKAGES)


def with_objects() -> list[str]:
    """The kea-doc examples whose plans create something."""
    out = []
    for path in sorted([*(EXAMPLES / "kea4").glob("*.json"), *(EXAMPLES / "kea6").glob("*.json")]):
        if kea.read(str(path)).objects:
            out.append(str(path.relative_to(EXAMPLES)))
    return out


async def apply(appliance: Running, token: str, path: str) -> tuple[int, applying.Report, str]:
    """`ipamd-import apply` as the command runs it, in a thread (it is synchronous) while the
    appliance serves in this trio run."""
    out = io.StringIO()
    code, report = await trio.to_thread.run_sync(
        lambda: cli.apply_file(path, appliance.url("http"), token, out=out))
    return code, report, out.getvalue()


async def audit_count(client: httpx.AsyncClient) -> int:
    reply = await client.get("/audit/count")
    assert reply.status_code == 200, reply.text
    return int(reply.json()["count"])
