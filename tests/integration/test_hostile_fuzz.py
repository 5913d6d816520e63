"""Every operation of the live OpenAPI document, fed a hostile corpus.

For each operation: every query parameter gets every hostile query value; the body gets
every hostile whole-body payload, and each of its fields in turn every hostile JSON value
(the other fields plausible, references pointing at real objects, so the value reaches as
deep as it can); path ids are real ones and unknown ones. Asserted for every answer: never
a 5xx, and every 4xx is the error envelope. Afterwards /health is still 200.

Deterministic (a fixed corpus, fixed ids, a fixed order) and bounded: a few thousand
requests on one keep-alive connection.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx

from tests.integration.ipam.test_schemathesis import _seed

UNKNOWN_ID = "018f2c1e-0000-7000-8000-00000000dead"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Query values, already percent-encoded (so invalid UTF-8 can be sent as it would arrive).
def _q(text: str) -> str:
    return quote(text, safe="")


QUERY_VALUES: list[str] = [
    _q("\x00"), _q("a\x00b"), _q("\x01\x1f\x7f"), _q("\u0085\u2028"),
    "%FF%FE", "%ED%A0%80",  # invalid UTF-8; the UTF-8-ish bytes of a lone surrogate
    "9" * 5000, "-" + "9" * 30, "1e30", "NaN", "-1", "0", "true",
    _q("0001-01-01T00:00:00+14:00"), _q("9999-12-31T23:59:59-14:00"), "10000-01-01",
    _q("9999-12-31T23:59:59"), "x" * 8000,
    _b64(b"\x00\xff garbage"), "!!!not-base64!!!",
    _b64(b'["2020-01-01T00:00:00Z", 1e30]'), _b64(b'["9999-12-31T23:59:59-14:00", 1]'),
    _b64(b"[" + b"9" * 5000 + b"]"), _b64(b"[" * 5000), _b64(b'["\\u0000"]'),
    _b64(b'["\\ud800", 1]'), _b64(b'[1, 2, 3, "018f2c1e-0000-7000-8000-00000000dead"]'),
    UNKNOWN_ID, "not-a-uuid", _q("10.0.0.0/33"), _q("::1/128"), _q("Europe/../../etc/passwd"),
]

# Whole request bodies.
RAW_BODIES: list[bytes] = [
    b"[" * 100_000,
    b"[" * 1000 + b"]" * 1000,
    b'{"a":' * 1000 + b"1" + b"}" * 1000,
    b'{"zz":' + b"9" * 5000 + b"}",
    b"\xff\xfe\x00\x00",
    b'{"name":"\xc3\x28"}',
    b'{"x": NaN}', b'{"x": -Infinity}', b'{"x": 1e400}',
    b'"\\ud800"', b"null", b"[]", b"123", b'{"a":1', b"\x00",
    b'{"\\u0000": 1}', b'{"\\ud800": 1}',
    b"{" + b'"k":' + b'"' + b"x" * 2_000_000 + b'"}',  # over api.max_body_bytes: 413
]

# JSON texts put in place of one field of an otherwise plausible body.
FIELD_VALUES: list[str] = [
    "9" * 5000, "-" + "9" * 30, "1e400", "1.5", "-1", "0", "true", "null", "{}", "[]",
    '"\\u0000"', '"a\\u0000b"', '"\\ud800"', '"x\\udfff"', '"\\u0001\\u001f\\u007f"',
    '"0001-01-01T00:00:00+14:00"', '"9999-12-31T23:59:59-14:00"', '"10000-01-01"',
    '"' + "x" * 100_000 + '"', "[" * 1000 + "]" * 1000, '["\\u0000"]', '{"\\u0000": 1}',
    f'"{UNKNOWN_ID}"', '"not-a-uuid"', '"10.0.0.0/33"',
]


# Idempotency-Key values on every POST (the one request header that reaches the database).
IDEMPOTENCY_KEYS: list[bytes] = [b"x" * 300, b"a b", "ключ-\u00ff".encode(), b"\x7f\x01", b"%00"]


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _plausible(name: str, schema: dict[str, Any], ids: dict[str, str]) -> Any:
    """A value that passes the field's own rules where the schema says enough."""
    if name in ids:
        return ids[name]
    options = schema.get("anyOf") or [schema]
    first = next((o for o in options if o.get("type") != "null"), options[0])
    if "examples" in first:
        return first["examples"][0]
    if "enum" in first:
        return first["enum"][0]
    if "const" in first:
        return first["const"]
    kind = first.get("type")
    if first.get("format") == "uuid":
        return UNKNOWN_ID
    if kind == "integer":
        return first.get("minimum", 1)
    if kind == "number":
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "fuzz"


def _bodies(doc: dict[str, Any], op: dict[str, Any], ids: dict[str, str]) -> Iterator[bytes]:
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return
    yield from RAW_BODIES
    schema = _resolve(doc, content["schema"])
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    base = {name: _plausible(name, prop, ids) for name, prop in properties.items()
            if name in required}
    for name, prop in properties.items():
        others = {k: v for k, v in base.items() if k != name}
        # Some plausible fields first, the hostile one last (its text spliced in raw).
        head = json.dumps(others)[:-1]
        for value in FIELD_VALUES:
            joiner = ", " if others else ""
            yield f'{head}{joiner}"{name}": {value}}}'.encode()
        del prop


def _paths(path: str, ids: dict[str, str]) -> list[str]:
    real = path
    unknown = path
    for name, value in ids.items():
        real = real.replace("{" + name + "}", value)
    while "{" in unknown:
        start = unknown.index("{")
        unknown = unknown[:start] + UNKNOWN_ID + unknown[unknown.index("}") + 1:]
    while "{" in real:  # an id nothing was seeded for
        start = real.index("{")
        real = real[:start] + UNKNOWN_ID + real[real.index("}") + 1:]
    return [real] if real == unknown else [real, unknown]


def _check(response: httpx.Response, what: str, failures: list[str]) -> None:
    status = response.status_code
    if status >= 500:
        failures.append(f"{status} {what}: {response.text[:200]}")
        return
    if status >= 400:
        try:
            body = response.json()
            ok = (set(body) == {"error"} and isinstance(body["error"].get("code"), str)
                  and isinstance(body["error"].get("message"), str) and body["error"]["message"])
        except (ValueError, AttributeError, TypeError):
            ok = False
        if not ok:
            failures.append(f"{status} without the envelope {what}: {response.text[:200]}")


async def _survey(admin: httpx.AsyncClient, ids: dict[str, str],
                  keep: Any = lambda path: True) -> int:
    """Every operation whose path ``keep`` takes, fed the corpus; asserts no failure and
    returns how many requests were sent."""
    doc = (await admin.get("/openapi.json")).json()
    operations = [(path, method, op) for path, item in doc["paths"].items()
                  for method, op in item.items() if keep(path)]
    # Deletes last, so the objects the other operations name still exist while they run.
    operations.sort(key=lambda entry: entry[1] == "delete")
    failures: list[str] = []
    sent = 0
    for path, method, op in operations:
        queries = [p["name"] for p in op.get("parameters", []) if p["in"] == "query"]
        for url in _paths(path, ids):
            response = await admin.request(method.upper(), url)
            _check(response, f"{method.upper()} {url}", failures)
            sent += 1
            for name in queries:
                for value in QUERY_VALUES:
                    target = f"{url}?{quote(name, safe='')}={value}"
                    response = await admin.request(method.upper(), target)
                    _check(response, f"{method.upper()} {target[:120]}", failures)
                    sent += 1
            if method == "post":
                for key in IDEMPOTENCY_KEYS:
                    response = await admin.post(url, content=b"{}", headers={
                        "Content-Type": "application/json", "Idempotency-Key": key})
                    _check(response, f"POST {url} Idempotency-Key {key!r}", failures)
                    sent += 1
            for body in _bodies(doc, op, ids):
                response = await admin.request(
                    method.upper(), url, content=body,
                    headers={"Content-Type": "application/json"},
                )
                _check(response, f"{method.upper()} {url} body {body[:80]!r}", failures)
                sent += 1
    assert not failures, f"{len(failures)} of {sent} answers failed:\n" + "\n".join(failures[:40])
    assert (await admin.get("/health")).status_code == 200
    assert (await admin.get("/tenants")).status_code == 200  # the database side still answers
    return sent


async def test_every_operation_survives_the_hostile_corpus(appliance, admin, tokens) -> None:
    ids = await _seed(admin)
    ids["webhook_id"] = UNKNOWN_ID
    sent = await _survey(admin, ids)
    assert sent > 3000  # every operation was reached, not skipped


async def _seed_v6(admin: httpx.AsyncClient) -> dict[str, str]:
    async def made(path: str, body: dict[str, Any]) -> str:
        reply = await admin.post(path, json=body)
        assert reply.status_code == 201, reply.text
        return str(reply.json()["id"])

    prefix_id = await made("/prefixes", {"cidr": "2001:db8:20::/48"})
    sid = await made("/subnets", {"prefix_id": prefix_id, "cidr": "2001:db8:20:1::/64"})
    pd_pool_id = await made(f"/subnets/{sid}/pd-pools", {
        "name": "cpe", "prefix": "2001:db8:20:100::/56", "delegated_length": 60})
    return {
        "pd_pool_id": pd_pool_id,
        "pd_exclude_id": await made(f"/pd-pools/{pd_pool_id}/excludes", {
            "prefix": "2001:db8:20:100::/60"}),
        "pd_reservation_id": await made(f"/pd-pools/{pd_pool_id}/reservations", {
            "prefix": "2001:db8:20:110::/60", "duid": "00:03:00:01:02:00:00:00:00:60"}),
        "prefix": "2001:db8:20:120::/60",
        "subnet_id": sid, "prefix_id": prefix_id,
        "pool_id": await made(f"/subnets/{sid}/pools", {
            "name": "dyn", "start_ip": "2001:db8:20:1::1000", "end_ip": "2001:db8:20:1::ffff"}),
        "exclude_id": await made(f"/subnets/{sid}/excludes", {
            "start_ip": "2001:db8:20:1::10", "end_ip": "2001:db8:20:1::1f"}),
        "reservation_id": await made(f"/subnets/{sid}/reservations", {
            "ip": "2001:db8:20:1::50", "duid": "00:03:00:01:02:00:00:00:00:50"}),
        "assignment_id": await made(f"/subnets/{sid}/assignments", {
            "ip": "2001:db8:20:1::60", "hostname": "static-60"}),
        "option_id": await made(f"/subnets/{sid}/options", {
            "code": 23, "payload": {"addresses": ["2001:db8:20::53"]}}),
        # Plausible values of the other fields, so each hostile one meets an IPv6 object.
        "start_ip": "2001:db8:20:1::2000", "end_ip": "2001:db8:20:1::2fff",
        "ip": "2001:db8:20:1::70", "duid": "00:03:00:01:02:00:00:00:00:70",
    }


async def test_ipv6_objects_survive_the_hostile_corpus(appliance, admin, tokens) -> None:
    """The same corpus over every operation on an IPv6 subnet and its children, delegation
    pools included."""
    ids = await _seed_v6(admin)
    scoped = ("{subnet_id}", "{prefix_id}", "{pool_id}", "{exclude_id}", "{reservation_id}",
              "{assignment_id}", "{option_id}", "{pd_")
    sent = await _survey(admin, ids, lambda path: any(name in path for name in scoped))
    assert sent > 1000
