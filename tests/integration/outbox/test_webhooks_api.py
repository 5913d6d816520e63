"""/webhooks over HTTP: admin only, validation (URL rules, secret_ref, topics), audit."""

import uuid

import pytest

HOOK = {"name": "siem", "url": "https://hooks.example.com/ipamd", "secret_ref": "env:HOOK_SECRET"}


@pytest.fixture
def hosts_file(tmp_path):
    path = tmp_path / "hosts"
    path.write_text(
        "169.254.169.254 rebind.test\n127.0.0.1 fine.test\n"
        "10.1.1.1 mixed.test\nfd00:ec2::254 mixed.test\n"
    )
    return path


@pytest.fixture
def config_overrides(hosts_file):
    return {"outbox": {"hosts_file": str(hosts_file)}}


async def test_crud_round_trip(admin):
    made = await admin.post("/webhooks", json={**HOOK, "topics": "lease.granted, ipam.audit"})
    assert made.status_code == 201, made.text
    hook = made.json()
    assert hook["topics"] == "lease.granted,ipam.audit"
    assert hook["secret_ref"] == "env:HOOK_SECRET" and hook["previous_secret_ref"] is None
    assert hook["enabled"] is True
    uuid.UUID(hook["id"])

    default = await admin.post("/webhooks", json={**HOOK, "name": "all"})
    assert default.json()["topics"] == "*"

    listed = await admin.get("/webhooks", params={"limit": 1})
    assert listed.status_code == 200
    assert [h["id"] for h in listed.json()["items"]] == [hook["id"]]
    rest = await admin.get("/webhooks", params={"cursor": listed.json()["next_cursor"]})
    assert [h["name"] for h in rest.json()["items"]] == ["all"]
    assert rest.json()["next_cursor"] is None

    one = await admin.get(f"/webhooks/{hook['id']}")
    assert one.json() == hook

    changed = await admin.patch(f"/webhooks/{hook['id']}", json={
        "secret_ref": "file:/etc/ipamd/new.secret", "previous_secret_ref": "env:HOOK_SECRET",
        "enabled": False,
    })
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert body["secret_ref"] == "file:/etc/ipamd/new.secret"
    assert body["previous_secret_ref"] == "env:HOOK_SECRET" and body["enabled"] is False
    assert body["name"] == "siem" and body["updated_at"] > hook["updated_at"]

    ended = await admin.patch(f"/webhooks/{hook['id']}", json={"previous_secret_ref": None})
    assert ended.json()["previous_secret_ref"] is None

    gone = await admin.delete(f"/webhooks/{hook['id']}")
    assert gone.status_code == 204
    assert (await admin.get(f"/webhooks/{hook['id']}")).status_code == 404
    assert (await admin.delete(f"/webhooks/{hook['id']}")).status_code == 404
    assert (await admin.patch(f"/webhooks/{hook['id']}", json={"name": "x"})).status_code == 404


async def test_operator_and_viewer_get_403_on_every_webhook_route(admin, operator, viewer):
    hook = (await admin.post("/webhooks", json=HOOK)).json()
    path = f"/webhooks/{hook['id']}"
    for client in (operator, viewer):
        for method, url, body in (
            ("GET", "/webhooks", None),
            ("POST", "/webhooks", {**HOOK, "name": "other"}),
            ("GET", path, None),
            ("PATCH", path, {"name": "renamed"}),
            ("DELETE", path, None),
        ):
            reply = await client.request(method, url, json=body)
            assert reply.status_code == 403, (method, url, reply.text)
            assert reply.json()["error"]["code"] == "forbidden"
            assert "env:HOOK_SECRET" not in reply.text
    assert (await admin.get(path)).json()["name"] == "siem"  # untouched


async def test_unauthenticated_gets_401(admin, anon):
    assert (await anon.get("/webhooks")).status_code == 401


URL_CASES = [
    ("http://hooks.example.com/x", "plain http is allowed only for localhost"),
    ("ftp://hooks.example.com/x", "scheme must be https"),
    ("https://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("https://[fd00:ec2::254]/", "cloud metadata"),
    ("https://[fe80::1]/", "link-local"),
    ("https://169.254.1.1/", "link-local"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://[::]/", "unspecified"),
    ("https://239.1.1.1/", "multicast"),
    ("https://[ff05::1]/", "multicast"),
    ("https://[::ffff:169.254.169.254]/", "IPv6 form of 169.254.169.254"),
    ("https://[64:ff9b::169.254.169.254]/", "IPv6 form of 169.254.169.254"),
    ("https://[2002:a9fe:a9fe::]/", "IPv6 form of 169.254.169.254"),
    ("https://metadata.google.internal/", "cloud metadata"),
    ("https://2852039166/", "numeric host"),
    ("https://user:pw@hooks.example.com/", "credentials"),
    # names resolved at create time (hosts file): any forbidden answer refuses the URL
    ("https://rebind.test/", "rebind.test resolves to 169.254.169.254"),
    ("https://mixed.test/", "mixed.test resolves to fd00:ec2::254"),
]


async def test_url_rules_at_create_and_update(admin):
    # One appliance for every case (each case is a request, not a new appliance).
    hook = (await admin.post("/webhooks", json=HOOK)).json()
    for url, message in URL_CASES:
        refused = await admin.post("/webhooks", json={**HOOK, "name": "other", "url": url})
        assert refused.status_code == 422, (url, refused.text)
        error = refused.json()["error"]
        assert error["code"] == "validation_error", url
        assert error["message"].startswith("url: ") and message in error["message"], (
            url, error["message"])
        patched = await admin.patch(f"/webhooks/{hook['id']}", json={"url": url})
        assert patched.status_code == 422, (url, patched.text)
        assert message in patched.json()["error"]["message"], url
    assert (await admin.get(f"/webhooks/{hook['id']}")).json()["url"] == HOOK["url"]


async def test_http_localhost_and_resolvable_names_are_accepted(admin):
    for i, url in enumerate(("http://localhost:9000/x", "https://fine.test/x",
                             "https://no-such-name.invalid/x")):
        made = await admin.post("/webhooks", json={**HOOK, "name": f"ok-{i}", "url": url})
        assert made.status_code == 201, (url, made.text)


FIELD_CASES = [
    ({"secret_ref": "hunter2"}, "secret_ref: must be env:<VARIABLE_NAME>"),
    ({"secret_ref": "file:relative"}, "secret_ref: file: needs an absolute path"),
    ({"previous_secret_ref": "plain"}, "previous_secret_ref: must be env:"),
    ({"previous_secret_ref": "env:HOOK_SECRET"}, "previous_secret_ref: must differ"),
    ({"topics": "lease.granted,dns.updated"}, "topics: unknown topic 'dns.updated'"),
    ({"topics": "*,ipam.audit"}, "topics: '*' means every topic and stands alone"),
    ({"topics": ""}, "topics: give a comma-separated list"),
    ({"name": "   "}, "name: must not be empty"),
    # NUL is refused for every body string before any field rule (Postgres cannot store it).
    ({"name": "nul\u0000byte"}, "name: must not contain NUL"),
    ({"name": "bell\u0007"}, "name: must not contain control characters"),
    ({"secret_ref": "env:A\u0000"}, "secret_ref: must not contain NUL"),
    ({"secret_ref": "file:/a\u0000b"}, "secret_ref: must not contain NUL"),
    ({"secret_ref": "file:/a\u0001b"}, "secret_ref: file: path contains control characters"),
    ({"name": 5}, "name: "),
    ({"enabled": "yes"}, "enabled: "),
    ({"extra": 1}, "extra: unknown field"),
]


async def test_field_validation(admin):
    for body, message in FIELD_CASES:
        refused = await admin.post("/webhooks", json={**HOOK, **body})
        assert refused.status_code == 422, (body, refused.text)
        assert message in refused.json()["error"]["message"], (body, refused.text)
    assert (await admin.get("/webhooks")).json()["items"] == []


async def test_required_fields_and_nulls(admin):
    refused = await admin.post("/webhooks", json={"name": "x"})
    assert refused.status_code == 422
    message = refused.json()["error"]["message"]
    assert "url: required" in message and "secret_ref: required" in message
    hook = (await admin.post("/webhooks", json=HOOK)).json()
    nulled = await admin.patch(f"/webhooks/{hook['id']}", json={"url": None})
    assert nulled.status_code == 422 and "url: must not be null" in nulled.text
    same = await admin.patch(f"/webhooks/{hook['id']}",
                             json={"previous_secret_ref": "env:HOOK_SECRET"})
    assert same.status_code == 422 and "must differ" in same.text


async def test_duplicate_name_is_409(admin):
    assert (await admin.post("/webhooks", json=HOOK)).status_code == 201
    dup = await admin.post("/webhooks", json=HOOK)
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "conflict"
    other = (await admin.post("/webhooks", json={**HOOK, "name": "other"})).json()
    renamed = await admin.patch(f"/webhooks/{other['id']}", json={"name": "siem"})
    assert renamed.status_code == 409


async def test_idempotency_key_replays_the_create(admin):
    headers = {"Idempotency-Key": "hook-1"}
    first = await admin.post("/webhooks", json=HOOK, headers=headers)
    again = await admin.post("/webhooks", json=HOOK, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"]
    other = await admin.post("/webhooks", json={**HOOK, "name": "x"}, headers=headers)
    assert other.status_code == 409


async def test_audit_entries_never_carry_secret_refs(admin, viewer):
    hook = (await admin.post("/webhooks", json={**HOOK, "secret_ref": "file:/etc/s/hook.key"}))
    hook_id = hook.json()["id"]
    await admin.patch(f"/webhooks/{hook_id}", json={"previous_secret_ref": "env:OLD_KEY"})
    await admin.delete(f"/webhooks/{hook_id}")
    entries = (await viewer.get("/audit", params={"object_type": "webhook"})).json()["items"]
    assert [e["action"] for e in entries] == ["delete", "update", "create"]
    text = str(entries)
    assert "/etc/s/hook.key" not in text and "OLD_KEY" not in text
    assert entries[2]["after"]["secret_ref"] == "(redacted)"
    assert entries[2]["after"]["url"] == HOOK["url"]
