"""Races: next free address, one Idempotency-Key, overlapping creates."""

from __future__ import annotations

import trio

from tests.integration.ipam.helpers import created, subnet


async def _gather(count: int, call) -> list:
    results: list = [None] * count

    async def one(index: int) -> None:
        results[index] = await call(index)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for index in range(count):
                nursery.start_soon(one, index)
    return results


async def test_fifty_parallel_next_free_requests_get_fifty_addresses(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24", gateway="10.20.1.1")
    created(await operator.post(f"/subnets/{s['id']}/pools", json={
        "name": "dyn", "start_ip": "10.20.1.10", "end_ip": "10.20.1.19"}))

    async def take(index: int):
        if index % 2:
            return await operator.post(f"/subnets/{s['id']}/assignments",
                                       json={"hostname": f"host-{index}"})
        return await operator.post(f"/subnets/{s['id']}/reservations",
                                   json={"mac": f"02:00:00:00:01:{index:02x}"})

    responses = await _gather(50, take)
    assert [r.status_code for r in responses] == [201] * 50, [r.text for r in responses]
    addresses = [r.json()["ip"] for r in responses]
    assert len(set(addresses)) == 50
    # The lowest 50 hosts outside the gateway (.1) and the pool (.10-.19): .2-.9, .20-.61.
    expected = [f"10.20.1.{n}" for n in [*range(2, 10), *range(20, 62)]]
    assert sorted(addresses, key=lambda a: int(a.rsplit(".", 1)[1])) == expected
    usage = (await viewer.get(f"/subnets/{s['id']}/utilisation")).json()
    assert usage["used"] == 51 and usage["reserved"] == 25 and usage["assigned"] == 25


async def test_one_idempotency_key_makes_one_object_under_concurrency(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24")
    body = {"name": "dyn", "start_ip": "10.20.1.100", "end_ip": "10.20.1.199"}

    async def post(_: int):
        return await operator.post(f"/subnets/{s['id']}/pools", json=body,
                                   headers={"Idempotency-Key": "pool-once"})

    responses = await _gather(8, post)
    assert {r.status_code for r in responses} <= {201, 409}
    ok = [r.json() for r in responses if r.status_code == 201]
    assert ok and all(item == ok[0] for item in ok)
    listed = (await viewer.get(f"/subnets/{s['id']}/pools")).json()["items"]
    assert [p["id"] for p in listed] == [ok[0]["id"]]


async def test_overlapping_pools_created_at_once_one_wins(operator, viewer):
    s = await subnet(operator, "10.20.1.0/24")

    async def post(index: int):
        return await operator.post(f"/subnets/{s['id']}/pools", json={
            "name": f"p{index}", "start_ip": f"10.20.1.{100 + index}", "end_ip": "10.20.1.200"})

    responses = await _gather(6, post)
    assert sorted(r.status_code for r in responses) == [201] + [409] * 5
    assert all(r.json()["error"]["code"] == "conflict"
               for r in responses if r.status_code == 409)
