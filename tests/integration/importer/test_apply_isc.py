"""`ipamd-import apply` of dhcpd.conf files against the real appliance (docs/migrating.md,
"From ISC dhcpd"): the worked site config and Debian's example apply cleanly, a second apply
creates nothing, and what was applied reads back — through the DHCP server's own merge
(`effective-options`) — with dhcpd's precedence (host > group > class > subnet)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from ipamd.importer import apply as applying
from ipamd.importer import cli, isc
from ipamd.runtime import Running
from tests.support.isc_site import SITE, generate, resolver, uncommented_example


async def audit_count(client: httpx.AsyncClient) -> int:
    reply = await client.get("/audit/count")
    assert reply.status_code == 200, reply.text
    return int(reply.json()["count"])


async def apply_isc(appliance: Running, token: str, path: str
                    ) -> tuple[int, applying.Report, str]:
    """`ipamd-import apply --format isc` with the tests' resolver, in a thread (it is
    synchronous) while the appliance serves in this trio run."""
    out = io.StringIO()
    code, report = await trio.to_thread.run_sync(
        lambda: cli.apply_file(path, appliance.url("http"), token, fmt="isc",
                               resolver=resolver, out=out))
    return code, report, out.getvalue()


async def applies_cleanly_twice(appliance: Running, token: str, viewer: httpx.AsyncClient,
                                path: str) -> None:
    planned = len(isc.read(path, resolver).objects)
    code, report, out = await apply_isc(appliance, token, path)
    problems = [e for e in report.entries if e.outcome != "created"]
    assert (code, report.stopped, problems) == (0, None, []), out
    assert report.count("created") == planned
    before = await audit_count(viewer)
    code, again, out = await apply_isc(appliance, token, path)
    assert code == 0, out
    assert (again.count("created"), again.count("exists")) == (0, planned), out
    assert await audit_count(viewer) == before  # nothing written the second time


async def test_the_site_config_applies_cleanly_and_a_second_apply_creates_nothing(
        appliance, tokens, viewer):
    await applies_cleanly_twice(appliance, tokens["operator"], viewer, str(SITE))


async def test_debians_example_applies_cleanly_and_a_second_apply_creates_nothing(
        appliance, tokens, viewer, tmp_path: Path):
    await applies_cleanly_twice(appliance, tokens["operator"], viewer,
                                uncommented_example(tmp_path))


# Seeds whose plans hold six kinds of object or more (pools, reservations, classes, the
# options of each scope, shared networks), found once by planning seeds 0-399.
RICH_SEEDS = (10, 24, 30, 58, 210, 300)


@pytest.mark.parametrize("seed", RICH_SEEDS)
async def test_generated_configurations_apply_every_planned_object(
        appliance, tokens, tmp_path: Path, seed: int):
    """What a plan holds is what the API takes: configurations made from the grammar the
    reader maps (tests/support/isc_site/generate.py) apply on a fresh appliance with no
    object invalid, in conflict or skipped."""
    path = tmp_path / "dhcpd.conf"
    path.write_text(generate.config(seed))
    planned = len(isc.read(str(path), resolver).objects)
    code, report, out = await apply_isc(appliance, tokens["operator"], str(path))
    problems = [e for e in report.entries if e.outcome != "created"]
    assert (code, report.stopped, problems) == (0, None, []), out
    assert report.count("created") == planned


async def items(client: httpx.AsyncClient, path: str) -> list[dict[str, Any]]:
    reply = await client.get(path, params={"limit": 1000})
    assert reply.status_code == 200, reply.text
    found: list[dict[str, Any]] = reply.json()["items"]
    return found


async def effective(client: httpx.AsyncClient, subnet_id: str, **query: str) -> dict[str, Any]:
    reply = await client.get(f"/subnets/{subnet_id}/effective-options", params=query)
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


async def test_the_applied_site_reads_back_as_dhcpd_served_it(appliance, tokens, viewer):
    code, _, out = await apply_isc(appliance, tokens["operator"], str(SITE))
    assert code == 0, out
    subnets = {s["cidr"]: s for s in await items(viewer, "/subnets")}
    office, lab = subnets["10.77.1.0/24"], subnets["10.77.3.0/24"]
    assert (office["lease_time_seconds"], office["min_lease_time_seconds"],
            office["max_lease_time_seconds"], office["gateway"], office["ntp_servers"]) == (
        600, 60, 7200, "10.77.1.1", ["10.77.0.123"])
    assert subnets["10.77.2.0/24"]["dhcp_enabled"] is False
    (campus,) = await items(viewer, "/shared-networks")
    assert {subnets["10.77.10.0/24"]["shared_network_id"],
            subnets["10.77.11.0/24"]["shared_network_id"]} == {campus["id"]}
    classes = {c["name"]: c for c in await items(viewer, "/client-classes")}
    pools = {p["start_ip"]: p for p in await items(viewer, f"/subnets/{office['id']}/pools")}
    assert pools["10.77.1.200"]["class_id"] == classes["pxe-bios"]["id"]
    assert pools["10.77.1.100"]["class_id"] is None
    kiosk = {r["ip"]: r for r in await items(viewer, f"/subnets/{lab['id']}/reservations")}
    assert (kiosk["10.77.3.12"]["mac"], kiosk["10.77.3.12"]["client_id"]) == (
        "02:00:00:00:03:12", "6b:69:6f:73:6b:2d:31:32")
    # the printer: its group's domain name and boot file beat the subnet's (dhcpd's host
    # scope), as the DHCP server's merge gives them
    printer = await effective(viewer, lab["id"], mac="02:00:00:00:03:10")
    by_code = {o["code"]: o for o in printer["options"]}
    assert (by_code[15]["scope"], by_code[15]["hex"]) == (
        "reservation", b"lab.site.example".hex(":"))
    assert (by_code[6]["scope"], printer["boot_file"]["value"]) == ("subnet", "lab.0")
    # a host without fixed-address keeps its boot file through its MAC class
    roaming = await effective(viewer, lab["id"], mac="02:00:00:00:03:14")
    assert roaming["reservation"] is None
    assert [c["name"] for c in roaming["classes"]] == ["host roaming"]
    assert (roaming["boot_file"]["value"], roaming["boot_file"]["scope"]) == ("roam.0", "class")
    # a PXE client gets the class's boot file and next server over the subnet's
    pxe = await effective(viewer, office["id"], mac="02:00:00:00:01:99",
                          vendor_class="PXEClient:Arch:00000:UNDI:002001")
    assert (pxe["boot_file"]["value"], pxe["next_server"]["value"]) == ("pxelinux.0",
                                                                        "10.77.1.5")
    vendor = next(o for o in pxe["options"] if o["code"] == 43)  # vendor-option-space PXE
    assert (vendor["scope"], vendor["hex"]) == ("class", "01:04:0a:4d:01:05")
