"""`ipamd-import apply` against the real appliance (docs/migrating.md): every kea-doc example
that plans objects applies cleanly on a fresh appliance, a second apply creates nothing, a
conflict is reported and never overwritten, and a file that cannot be read writes nothing."""

from __future__ import annotations

import ipaddress

import pytest
import trio

from ipamd.importer import cli, kea
from tests.integration.importer.helpers import EXAMPLES, apply, audit_count, with_objects

EXAMPLES_WITH_OBJECTS = with_objects()


@pytest.mark.parametrize("example", EXAMPLES_WITH_OBJECTS)
async def test_an_example_applies_cleanly_and_a_second_apply_creates_nothing(
        appliance, tokens, viewer, example):
    path = str(EXAMPLES / example)
    planned = len(kea.read(path).objects)
    code, report, out = await apply(appliance, tokens["operator"], path)
    problems = [e for e in report.entries if e.outcome != "created"]
    assert (code, report.stopped, problems) == (0, None, []), out
    assert report.count("created") == planned
    before = await audit_count(viewer)
    code, again, out = await apply(appliance, tokens["operator"], path)
    assert code == 0, out
    assert (again.count("created"), again.count("exists")) == (0, planned), out
    assert all(e.detail == "made by an earlier run" for e in again.entries)
    assert await audit_count(viewer) == before  # nothing written the second time


async def test_what_was_applied_is_what_kea_serves(appliance, tokens, viewer):
    """several-subnets and reservations, read back through the API."""
    await apply(appliance, tokens["operator"], str(EXAMPLES / "kea4/reservations.json"))
    (subnet,) = (await viewer.get("/subnets")).json()["items"]
    assert (subnet["cidr"], subnet["lease_time_seconds"]) == ("192.0.2.0/24", 4000)
    reservations = (await viewer.get(f"/subnets/{subnet['id']}/reservations")).json()["items"]
    assert sorted((r["ip"], r["mac"], r["next_server"], r["boot_file"])
                  for r in reservations) == [
        ("192.0.2.201", "1a:1b:1c:1d:1e:1f", None, None),
        ("192.0.2.205", "0a:0b:0c:0d:0e:0f", "192.0.2.1", "/dev/null")]
    (pool,) = (await viewer.get(f"/subnets/{subnet['id']}/pools")).json()["items"]
    assert (pool["start_ip"], pool["end_ip"]) == ("192.0.2.1", "192.0.2.200")


async def test_shared_network_members_join_their_group(appliance, tokens, viewer):
    code, _, out = await apply(appliance, tokens["operator"],
                               str(EXAMPLES / "kea4/shared-network.json"))
    assert code == 0, out
    (group,) = (await viewer.get("/shared-networks")).json()["items"]
    subnets = {s["cidr"]: s for s in (await viewer.get("/subnets")).json()["items"]}
    assert subnets["10.0.0.0/8"]["shared_network_id"] == group["id"]
    assert subnets["192.0.2.0/24"]["shared_network_id"] == group["id"]
    assert subnets["192.0.3.0/24"]["shared_network_id"] is None


async def test_another_token_finds_what_is_there_and_never_overwrites_it(
        appliance, tokens, viewer, operator):
    path = str(EXAMPLES / "kea4/several-subnets.json")
    await apply(appliance, tokens["operator"], path)
    (first,) = [s for s in (await viewer.get("/subnets")).json()["items"]
                if s["cidr"] == "192.0.2.0/24"]
    patched = await operator.patch(f"/subnets/{first['id']}", json={"lease_time_seconds": 60})
    assert patched.status_code == 200, patched.text
    before = await audit_count(viewer)
    # The admin token's keys are not the operator's: every create meets a 409, and each
    # object there is recognised as the planned one.
    code, report, out = await apply(appliance, tokens["admin"], path)
    assert code == 0, out
    assert report.count("exists") == len(report.entries) == 9
    details = {e.key: e.detail for e in report.entries}
    assert details["subnet:192.0.2.0/24"] == ("already there; kept as it is (it differs from "
                                             "the plan in lease_time_seconds)")
    assert details["subnet:192.0.3.0/24"] == "already there; kept as it is"
    after = (await viewer.get(f"/subnets/{first['id']}")).json()
    assert after["lease_time_seconds"] == 60  # never overwritten
    assert await audit_count(viewer) == before


async def test_a_conflict_is_reported_skipped_and_left_alone(appliance, tokens, viewer,
                                                             operator):
    prefix = (await operator.post("/prefixes", json={"cidr": "192.0.2.0/24"})).json()
    subnet = (await operator.post("/subnets", json={
        "prefix_id": prefix["id"], "cidr": "192.0.2.0/24"})).json()
    theirs = await operator.post(f"/subnets/{subnet['id']}/pools", json={
        "name": "theirs", "start_ip": "192.0.2.150", "end_ip": "192.0.2.250"})
    assert theirs.status_code == 201, theirs.text
    code, report, out = await apply(appliance, tokens["operator"],
                                    str(EXAMPLES / "kea4/several-subnets.json"))
    assert code == 1, out
    outcomes = {e.key: e.outcome for e in report.entries}
    assert outcomes["subnet:192.0.2.0/24"] == "exists"
    assert outcomes["pool:192.0.2.0/24:192.0.2.1-192.0.2.200"] == "conflict"
    assert "conflict: pool:192.0.2.0/24:192.0.2.1-192.0.2.200 [" in out
    assert report.count("created") == 6  # the other two scopes
    pools = (await viewer.get(f"/subnets/{subnet['id']}/pools")).json()["items"]
    assert [(p["name"], p["start_ip"], p["end_ip"]) for p in pools] == [
        ("theirs", "192.0.2.150", "192.0.2.250")]


@pytest.mark.parametrize("text", ['{ "Dhcp4": { "subnet4": [ { "subnet": "10.77.1.0/24",',
                                  "\x00\x01garbage"])
async def test_a_file_that_cannot_be_read_writes_nothing(appliance, tokens, viewer, tmp_path,
                                                         text):
    path = tmp_path / "broken.json"
    path.write_text(text)
    before = await audit_count(viewer)
    code = await trio.to_thread.run_sync(lambda: cli.main([
        "apply", str(path), "--format", "kea", "--url", appliance.url("http"),
        "--token-file", str(_token_file(tmp_path, tokens["operator"]))]))
    assert code == 3
    assert await audit_count(viewer) == before
    assert (await viewer.get("/prefixes")).json()["items"] == []


async def test_the_command_reads_the_token_file_and_never_prints_it(
        appliance, tokens, viewer, tmp_path, capfd):
    token_file = _token_file(tmp_path, tokens["operator"])
    code = await trio.to_thread.run_sync(lambda: cli.main([
        "apply", str(EXAMPLES / "kea4/single-subnet.json"), "--url", appliance.url("http"),
        "--token-file", str(token_file)]))
    out, err = capfd.readouterr()
    assert code == 0, out + err
    assert tokens["operator"] not in out + err
    assert "3 created, 0 exists, 0 conflict, 0 invalid, 0 skipped (of 3 planned)" in out
    (subnet,) = (await viewer.get("/subnets")).json()["items"]
    assert ipaddress.ip_network(subnet["cidr"]) == ipaddress.ip_network("192.0.2.0/24")


async def test_a_wrong_token_stops_at_once(appliance, tokens):
    code, report, out = await apply(appliance, "service_live_not-a-token",
                                    str(EXAMPLES / "kea4/single-subnet.json"))
    assert code == 5 and report.entries == []
    assert report.stopped is not None and report.stopped.startswith("401"), out


def _token_file(tmp_path, token: str):
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path
