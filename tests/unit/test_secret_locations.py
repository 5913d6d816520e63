"""The one rule for secrets (core/secret_locations): which fields say where a secret lives,
their redaction, and — over every route of the API — that the rule's name test catches every
such field and that only admins may write one."""

from __future__ import annotations

import re
from typing import Any

from ipamd.api import app, openapi
from ipamd.core.secret_locations import REDACTED, is_location, redacted, scrub, shown_to

# Words that mark a field as holding a secret or where one lives.
CREDENTIAL = re.compile(r"secret|keytab|password|routing_key|_ref$|_path$|key_file|credential")


def test_redaction_keeps_shape_and_nulls() -> None:
    value = {"name": "ad", "secret_ref": "file:/etc/k", "keytab_path": None,
             "settings": {"password_ref": "env:P", "to": ["a@b"]},
             "items": [{"previous_secret_ref": "env:Q", "port": 53}]}
    assert redacted(value) == {
        "name": "ad", "secret_ref": REDACTED, "keytab_path": None,
        "settings": {"password_ref": REDACTED, "to": ["a@b"]},
        "items": [{"previous_secret_ref": REDACTED, "port": 53}]}
    assert shown_to("admin", value) is value
    assert shown_to("operator", value) == shown_to("viewer", value) == redacted(value)
    assert redacted(None) is None and redacted("file:/x") == "file:/x"  # only by field name


def test_scrub_takes_out_a_reference_and_what_it_points_at() -> None:
    text = "Key table file '/etc/ipamd/ad.keytab' not found; env:TSIG_KEY unset; TSIG_KEY"
    assert scrub(text, ["/etc/ipamd/ad.keytab", "env:TSIG_KEY", None]) == (
        "Key table file '(redacted)' not found; (redacted) unset; (redacted)")
    assert scrub("file:/run/k is 0644", ["file:/run/k"]) == "(redacted) is 0644"
    # Only whole names: a variable named like part of a word leaves the word alone.
    assert scrub("KEYTAB missing", ["env:KEY"]) == "KEYTAB missing"


def _properties(doc: dict[str, Any], schema: dict[str, Any], seen: set[str]) -> set[str]:
    """Every property name in a schema, through $refs, unions, items and nested objects."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return set()
        seen.add(name)
        return _properties(doc, doc["components"]["schemas"][name], seen)
    names: set[str] = set()
    for key, sub in schema.get("properties", {}).items():
        names.add(key)
        names |= _properties(doc, sub, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            names |= _properties(doc, sub, seen)
    if isinstance(schema.get("items"), dict):
        names |= _properties(doc, schema["items"], seen)
    return names


def test_every_location_field_of_the_api_is_caught_and_only_admins_write_one() -> None:
    routes = app.all_routes()
    doc = openapi.build(routes, app.API_PREFIX)
    everywhere: set[str] = set()
    for route in routes:
        item = doc["paths"][route.path][route.method.lower()]
        body = item.get("requestBody", {}).get("content", {}).get("application/json")
        written = _properties(doc, body["schema"], set()) if body else set()
        if any(is_location(name) for name in written):
            assert route.role == "admin", f"{route.method} {route.path} writes a secret location"
        everywhere |= written
        for answer in item["responses"].values():
            for content in answer.get("content", {}).values():
                everywhere |= _properties(doc, content.get("schema", {}), set())
    credential_like = {name for name in everywhere if CREDENTIAL.search(name)}
    # A token's secret is returned once, at creation, to the admin who minted it: a secret,
    # not a location, and never stored (only its hash).
    assert credential_like - {"token"} <= {n for n in everywhere if is_location(n)}, (
        "fields that look like secret locations but are not caught by is_location: "
        f"{sorted(n for n in credential_like if not is_location(n))}")
    assert {"secret_ref", "previous_secret_ref", "keytab_path"} <= everywhere
