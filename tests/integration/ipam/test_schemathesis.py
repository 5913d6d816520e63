"""Schemathesis over every operation of the OpenAPI document, against the live appliance.

Real objects are created first and their ids fixed as path parameters, so item routes
run their real logic (not only 404s). The token_id parameter is a throwaway token's, so
DELETE /tokens/{token_id} cannot revoke the run's own admin token. Bounded: a fixed
example count and seed; IPAMD_SCHEMATHESIS_EXAMPLES raises it for a longer local run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

from tests.integration.ipam.helpers import created, subnet

CHECKS = ",".join([
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
])


async def _seed(admin) -> dict[str, str]:
    s = await subnet(admin, "10.20.1.0/24", gateway="10.20.1.1")
    sid = s["id"]
    klass = created(await admin.post("/client-classes", json={
        "name": "pxe", "match": "vendor_class", "value": "PXEClient"}))
    ids = {
        "subnet_id": sid,
        "prefix_id": s["prefix_id"],
        "class_id": klass["id"],
        "tenant_id": created(await admin.post("/tenants", json={"name": "spare"}))["id"],
        "pool_id": created(await admin.post(f"/subnets/{sid}/pools", json={
            "name": "dyn", "start_ip": "10.20.1.100", "end_ip": "10.20.1.199",
            "class_id": klass["id"]}))["id"],
        "exclude_id": created(await admin.post(f"/subnets/{sid}/excludes", json={
            "start_ip": "10.20.1.10", "end_ip": "10.20.1.19"}))["id"],
        "reservation_id": created(await admin.post(f"/subnets/{sid}/reservations", json={
            "ip": "10.20.1.50", "mac": "02:00:00:00:00:50", "hostname": "res-50"}))["id"],
        "assignment_id": created(await admin.post(f"/subnets/{sid}/assignments", json={
            "ip": "10.20.1.60", "hostname": "static-60"}))["id"],
        "option_id": created(await admin.post(f"/subnets/{sid}/options", json={
            "code": 6, "payload": {"addresses": ["10.20.1.53"]}}))["id"],
        "token_id": created(await admin.post("/tokens", json={
            "name": "throwaway", "role": "viewer"}))["id"],
        "shared_network_id": created(await admin.post("/shared-networks", json={
            "name": "link-1"}))["id"],
    }
    return ids


async def test_schemathesis_finds_nothing(appliance, admin, tokens, tmp_path):
    ids = await _seed(admin)
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        "[parameters]\n" + "".join(f'"path.{name}" = "{value}"\n' for name, value in ids.items())
    )
    binary = Path(sys.executable).parent / "schemathesis"
    argv = [
        str(binary), "--config-file", str(config), "run",
        appliance.url("http") + "/api/v1/openapi.json",
        "--header", f"Authorization: Bearer {tokens['admin']}",
        "--checks", CHECKS,
        "--max-examples", os.environ.get("IPAMD_SCHEMATHESIS_EXAMPLES", "8"),
        "--phases", "examples,coverage,fuzzing",
        "--seed", "20251121",
        # One worker: with two, CPython 3.11's ast (used by hypothesis to describe lambdas)
        # can fail with "AST constructor recursion depth mismatch" when parsing in threads.
        "--workers", "1",
        "--request-timeout", "20",
        "--suppress-health-check", "all",
        "--no-shrink",
        "--report-dir", str(tmp_path / "report"),
    ]
    with trio.fail_after(280):
        result = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, check=False
        )
    output = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
    print(output[-3000:])  # the summary, for the CI log
    assert result.returncode == 0, output[-20000:]
    assert "passed" in output, output[-5000:]
