"""A subnet's bounds on a client's requested lease time (docs/api-ipam.md, "Lease time"):
stored, shown, validated on create and change (422 naming the field), IPv4 only."""

from __future__ import annotations

from tests.integration.ipam.helpers import created, error_of, prefix, subnet


async def test_bounds_are_stored_shown_and_optional(operator):
    plain = await subnet(operator, "10.20.1.0/24", lease_time_seconds=3600)
    assert plain["min_lease_time_seconds"] is None and plain["max_lease_time_seconds"] is None
    s = await subnet(operator, "10.20.2.0/24", lease_time_seconds=3600,
                     min_lease_time_seconds=600, max_lease_time_seconds=7200)
    assert (s["min_lease_time_seconds"], s["max_lease_time_seconds"]) == (600, 7200)
    assert (await operator.get(f"/subnets/{s['id']}")).json()["max_lease_time_seconds"] == 7200
    changed = await operator.patch(f"/subnets/{s['id']}", json={"max_lease_time_seconds": None})
    assert changed.status_code == 200 and changed.json()["max_lease_time_seconds"] is None
    assert changed.json()["min_lease_time_seconds"] == 600  # the other bound stays


async def test_bounds_must_hold_the_lease_time(operator):
    p = await prefix(operator, "10.20.0.0/16")
    body = {"prefix_id": p["id"], "cidr": "10.20.3.0/24", "lease_time_seconds": 3600}
    message = error_of(await operator.post("/subnets", json={
        **body, "min_lease_time_seconds": 7200}), 422, "validation_error")
    assert message.startswith("min_lease_time_seconds:") and "3600" in message
    message = error_of(await operator.post("/subnets", json={
        **body, "max_lease_time_seconds": 600}), 422, "validation_error")
    assert message.startswith("max_lease_time_seconds:") and "3600" in message
    for field, value in (("min_lease_time_seconds", 0), ("max_lease_time_seconds", -5),
                         ("max_lease_time_seconds", 2**31), ("min_lease_time_seconds", "1")):
        assert error_of(await operator.post("/subnets", json={**body, field: value}),
                        422, "validation_error").startswith(field)

    s = created(await operator.post("/subnets", json={
        **body, "min_lease_time_seconds": 600, "max_lease_time_seconds": 7200}))
    path = f"/subnets/{s['id']}"
    # A change of the lease time alone is judged against the stored bounds.
    assert error_of(await operator.patch(path, json={"lease_time_seconds": 9000}),
                    422, "validation_error").startswith("max_lease_time_seconds")
    assert error_of(await operator.patch(path, json={"lease_time_seconds": 300}),
                    422, "validation_error").startswith("min_lease_time_seconds")
    moved = await operator.patch(path, json={"lease_time_seconds": 9000,
                                             "max_lease_time_seconds": 9000})
    assert moved.status_code == 200, moved.text
    assert (await operator.get(path)).json()["lease_time_seconds"] == 9000


async def test_an_ipv6_subnet_refuses_the_bounds(operator):
    p = await prefix(operator, "2001:db8::/32")
    for field in ("min_lease_time_seconds", "max_lease_time_seconds"):
        message = error_of(await operator.post("/subnets", json={
            "prefix_id": p["id"], "cidr": "2001:db8:1::/64", field: 86_400}),
            422, "validation_error")
        assert message.startswith(f"{field}:") and "DHCPv6" in message
