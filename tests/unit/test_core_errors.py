"""Domain errors carry no HTTP; the API's one mapping gives each its status and code."""

from __future__ import annotations

import pytest

from ipamd.api.errors import from_domain
from ipamd.core import errors
from ipamd.ipam import dberrors


@pytest.mark.parametrize(("error", "status", "code", "message"), [
    (errors.bad_request("cursor: not ours"), 400, "bad_request", "cursor: not ours"),
    (errors.LicenseLimit("license limit: 5 of 5"), 402, "license_limit", "license limit: 5 of 5"),
    (errors.not_found("pool", "x"), 404, "not_found", "pool x does not exist"),
    (errors.conflict("overlaps"), 409, "conflict", "overlaps"),
    (errors.invalid("cidr", "must be IPv4"), 422, "validation_error", "cidr: must be IPv4"),
    (errors.Invalid("", "out of range"), 422, "validation_error", "out of range"),
])
def test_each_domain_error_has_one_status_and_code(error, status, code, message):
    mapped = from_domain(error)
    assert (mapped.status, mapped.code, mapped.message) == (status, code, message)
    assert mapped.body() == {"error": {"code": code, "message": message}}


def test_a_subclass_maps_like_its_parent():
    class Gone(errors.NotFound):
        pass

    assert from_domain(Gone("token t is already revoked")).status == 404


def test_database_refusals_become_domain_errors_with_the_same_words():
    class Fake(Exception):
        constraint_name = "subnets_v6_fields"

    refused = dberrors.translate(Fake())  # type: ignore[arg-type]
    assert isinstance(refused, errors.Invalid)
    assert (refused.field, refused.message) == (
        "gateway", "gateway: an IPv6 subnet has no gateway, next_server or boot_file")
    overlap = dberrors.translate(type("E", (Exception,), {"constraint_name": "subnets_no_overlap"})())
    assert isinstance(overlap, errors.Conflict)
    assert overlap.message == "cidr: overlaps another subnet of the same tenant"
    other = dberrors.translate(Fake.__base__())  # no constraint: data out of range
    assert isinstance(other, errors.Invalid)
    assert other.message == "a value is out of the range the database accepts"
