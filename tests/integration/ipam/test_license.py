"""The license cap: reservations + assignments; 402 license_limit; race-free at the edge."""

from __future__ import annotations

import pytest
import trio

from tests.integration.ipam.helpers import created, error_of, subnet


@pytest.fixture
def config_overrides():
    return {"license": {"tier": "community", "max_managed_ips": 3}}


async def test_cap_counts_reservations_and_assignments(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24")
    sid = s["id"]
    created(await operator.post(f"/subnets/{sid}/reservations", json={"mac": "02:00:00:00:00:01"}))
    created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "a"}))
    status = (await viewer.get("/license")).json()
    assert status == {"tier": "community", "max_managed_ips": 3, "managed_ips": 2,
                      "reservations": 1, "assignments": 1, "available": 1}
    # Pools, excludes and options are not managed IPs.
    created(await operator.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "10.20.1.100", "end_ip": "10.20.1.200"}))
    last = created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "b"}))
    message = error_of(await operator.post(f"/subnets/{sid}/reservations", json={
        "mac": "02:00:00:00:00:02"}), 402, "license_limit")
    assert "3 of 3" in message
    error_of(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "c"}),
             402, "license_limit")
    # Deleting one frees its slot.
    assert (await operator.delete(f"/assignments/{last['id']}")).status_code == 204
    created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "c"}))


async def test_two_concurrent_creates_at_the_edge_one_201_one_402(operator):
    s = await subnet(operator, "10.20.1.0/24")
    sid = s["id"]
    created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "a"}))
    created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "b"}))
    for round_ in range(3):  # repeat the race; each round ends at the edge again
        results: list = []

        async def reserve(index: int, round_: int = round_, results: list = results) -> None:
            results.append(await operator.post(f"/subnets/{sid}/reservations", json={
                "mac": f"02:00:00:00:{round_:02x}:{index:02x}"}))

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(reserve, 1)
                nursery.start_soon(reserve, 2)
        assert sorted(r.status_code for r in results) == [201, 402], [r.text for r in results]
        winner = next(r for r in results if r.status_code == 201).json()
        assert (await operator.delete(f"/reservations/{winner['id']}")).status_code == 204


async def test_cap_counts_ipv6_reservations_and_assignments(operator, viewer):
    p = created(await operator.post("/prefixes", json={"cidr": "2001:db8:20::/48"}))
    s = created(await operator.post("/subnets", json={"prefix_id": p["id"],
                                                      "cidr": "2001:db8:20:1::/64"}))
    sid = s["id"]
    created(await operator.post(f"/subnets/{sid}/reservations", json={
        "duid": "00:03:00:01:02:00:00:00:00:01"}))
    created(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "a"}))
    v4 = await subnet(operator, "10.20.1.0/24")
    created(await operator.post(f"/subnets/{v4['id']}/assignments", json={"hostname": "b"}))
    status = (await viewer.get("/license")).json()
    assert (status["managed_ips"], status["reservations"], status["assignments"]) == (3, 1, 2)
    message = error_of(await operator.post(f"/subnets/{sid}/reservations", json={
        "ip": "2001:db8:20:1::99", "duid": "00:03:00:01:02:00:00:00:00:02"}),
        402, "license_limit")
    assert "3 of 3" in message
    error_of(await operator.post(f"/subnets/{sid}/assignments", json={"hostname": "c"}),
             402, "license_limit")
