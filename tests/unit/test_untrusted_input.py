"""Untrusted input at its decoding points: JSON bodies, cursors, times, stored text."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import uuid

import pytest
from pydantic import ValidationError

from ipamd.api import paging, untrusted
from ipamd.api.errors import ApiError, from_domain, from_validation
from ipamd.api.instant import parse_rfc3339
from ipamd.api.routes.history import parse_time
from ipamd.api.routes.tenants import TenantCreate, TenantQuery
from ipamd.api.routes.tokens import TokenCreate
from ipamd.core.errors import DomainError


def _refused(data: bytes | str) -> untrusted.Refused:
    with pytest.raises(untrusted.Refused) as caught:
        untrusted.parse_json(data)
    return caught.value


# --- item 1: integer literals over the digit limit / out of range --------------------------

def test_a_5000_digit_integer_is_a_422_not_a_value_error() -> None:
    error = _refused('{"cidr":"10.9.0.0/16","zz":' + "9" * 5000 + "}")
    assert error.status == 422 and "out of range" in error.message


@pytest.mark.parametrize("literal", [str(2**63), str(-(2**63) - 1), "1" + "0" * 30])
def test_integers_beyond_64_bits_are_refused(literal: str) -> None:
    assert _refused(f"[{literal}]").status == 422


@pytest.mark.parametrize("literal", [str(2**63 - 1), str(-(2**63)), "0", "-1"])
def test_64_bit_integers_are_kept(literal: str) -> None:
    assert untrusted.parse_json(f"[{literal}]") == [int(literal)]


@pytest.mark.parametrize("text", ["[NaN]", "[Infinity]", "[-Infinity]"])
def test_nan_and_infinity_are_not_json(text: str) -> None:
    assert _refused(text).status == 400


def test_a_float_that_overflows_is_refused() -> None:
    assert _refused("[1e400]").status == 422
    assert untrusted.parse_json("[1.5e3]") == [1500.0]


# --- item 2: deep nesting never recurses ------------------------------------------------

# No timings in pass/fail tests: the hang guard (a recursive or quadratic reader takes
# minutes on these bodies; the flat scan milliseconds) is the test's timeout.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["[" * 1000 + "]" * 1000, "[" * 100_000, "{\"a\":" * 5000])
def test_deep_nesting_is_a_400_without_recursion(text: str) -> None:
    error = _refused(text)
    assert error.status == 400 and "nested deeper than 64" in error.message


def test_nesting_up_to_the_limit_is_fine_and_brackets_in_strings_do_not_count() -> None:
    deep = "[" * 64 + "]" * 64
    assert untrusted.parse_json(deep) is not None
    assert untrusted.depth("[" * 65 + "]" * 65) == 65
    assert untrusted.parse_json(json.dumps({"a": "[" * 500 + '\\"{' * 100})) is not None


def test_invalid_utf8_and_bad_syntax_are_400() -> None:
    assert _refused(b'{"name":"\xff\xfe"}').status == 400
    assert _refused(b'{"name":').status == 400


# --- items 3 and 4: text Postgres cannot store --------------------------------------------

def test_unstorable_finds_nul_and_lone_surrogates_by_path() -> None:
    assert untrusted.unstorable({"a": "ok", "b": ["x", {"c": "n\x00"}]}) == "b[1].c"
    assert untrusted.unstorable({"d": "\ud800"}) == "d"
    assert untrusted.unstorable({"k\x00": 1}) == repr("k\x00")
    assert untrusted.unstorable({"a": "tab\tand é ok", "n": 5}) is None


def _message(model: type, data: dict) -> ApiError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return from_validation(caught.value)


def test_body_strings_with_nul_are_a_422_naming_the_field() -> None:
    error = _message(TenantCreate, {"name": "ok", "description": "a\x00b"})
    assert error.status == 422 and error.message.startswith("description: must not contain NUL")
    error = _message(TenantCreate, {"name": "\ud800"})
    assert error.status == 422 and error.message.startswith("name:")


def test_query_strings_with_nul_are_a_400_naming_the_parameter() -> None:
    with pytest.raises(ValidationError) as caught:
        TenantQuery.model_validate({"name": "\x00"})
    error = from_validation(caught.value, "query")
    assert error.status == 400 and error.message.startswith("name: must not contain NUL")


@pytest.mark.parametrize("name", ["a\x00b", "a\x01b", "line\nbreak", "del\x7f", "c1\x85"])
def test_token_names_refuse_control_characters_like_tenant_names(name: str) -> None:
    for model in (TokenCreate, TenantCreate):
        data = {"name": name, "role": "viewer"} if model is TokenCreate else {"name": name}
        error = _message(model, data)
        assert error.status == 422 and error.message.startswith("name:"), error.message


# --- item 5: times that UTC (and Postgres through asyncpg) cannot hold --------------------

@pytest.mark.parametrize("text", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_instants_beyond_utc_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_rfc3339(text)
    error = _message(TokenCreate, {"name": "t", "role": "viewer", "expires_at": text})
    assert error.status == 422 and error.message.startswith("expires_at: out of range")


def test_instants_at_the_edge_are_kept_in_utc() -> None:
    value = parse_rfc3339("9999-12-31T09:59:59-14:00")
    assert value == dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


def _as_api(error: BaseException) -> ApiError:
    """What the client sees: domain refusals pass through the API's one mapping."""
    return from_domain(error) if isinstance(error, DomainError) else error  # type: ignore[return-value]


REFUSED = (ApiError, DomainError)


def test_history_times_out_of_range_in_the_answer_zone_are_400() -> None:
    import zoneinfo

    with pytest.raises(REFUSED) as caught:
        parse_time("at", "9999-12-31T23:00:00Z", zoneinfo.ZoneInfo("Pacific/Kiritimati"))
    refused = _as_api(caught.value)
    assert refused.status == 400 and "out of range" in refused.message
    with pytest.raises(REFUSED):
        parse_time("at", "0001-01-01T00:00", zoneinfo.ZoneInfo("Asia/Tokyo"))


# --- item 6: forged cursors ---------------------------------------------------------------

def _cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


FORGED = [
    _cursor(b'["2020-01-01T00:00:00Z", 1e30]'),
    _cursor(b'["2020-01-01T00:00:00Z", ' + b"9" * 5000 + b"]"),
    _cursor(b'["2020-01-01T00:00:00Z", 18446744073709551616]'),
    _cursor(b'["2020-01-01T00:00:00Z", true]'),
    _cursor(b'["9999-12-31T23:59:59-14:00", 1]'),
    _cursor(b'["0001-01-01T00:00:00+14:00", 1]'),
    _cursor(b'["2020-01-01T00:00:00", 1]'),
    _cursor(b'["2020-01-01T00:00:00\\u0000Z", 1]'),
    _cursor(b"[" * 100_000),
    _cursor(b'["\\ud800", 1]'),
    _cursor(b"\xff\xfe"),
    "!!!not base64!!!",
    "A",
]


@pytest.mark.parametrize("cursor", FORGED)
def test_forged_history_cursors_are_400(cursor: str) -> None:
    with pytest.raises(REFUSED) as caught:
        paging.decode_cursor(cursor, [dt.datetime, int])
    refused = _as_api(caught.value)
    assert refused.status == 400 and refused.code == "bad_request"
    assert "invalid cursor" in refused.message


def test_forged_uuid_and_text_cursors_are_400() -> None:
    cases: list[tuple[bytes, list[type]]] = [
        (b'["\\u0000"]', [str]), (b"[1]", [uuid.UUID]), (b'["x"]', [uuid.UUID]),
        (b'["10.0.0.256"]', [ipaddress.IPv4Address]), (b'[["10.0.0.1"]]', [ipaddress.IPv4Address]),
    ]
    for raw, types in cases:
        with pytest.raises(REFUSED) as caught:
            paging.decode_cursor(_cursor(raw), types)
        assert _as_api(caught.value).status == 400


def test_a_real_cursor_round_trips() -> None:
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    cursor = paging.encode_cursor([when, 42])
    assert paging.decode_cursor(cursor, [dt.datetime, int]) == [when, 42]


ADVERSARIAL = {
    "unterminated string": "[" * 65 + '"' + "a" * 1_000_000,
    "escaped quotes, unterminated": "[" * 65 + '"\\' * 500_000,
    "backslash-quote pairs": "[" * 65 + '\\"' * 500_000,
    "only quotes": "[" * 65 + '"' * 1_000_000,
    "trailing backslashes": "[" * 65 + '"' + "\\" * 1_000_000,
    "strings and brackets": '["' + "]]]" + '["' * 200_000,
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_the_depth_scan_ends_on_adversarial_bodies(text: str) -> None:
    # A backtracking string pattern took minutes on the escaped-quotes body (quadratic).
    assert _refused(text).status == 400
