"""Idempotency-Key on IPAM creates (docs/api-ipam.md): replay, conflict, expiry."""

from __future__ import annotations

import pytest

from tests.integration.ipam.helpers import error_of, subnet


@pytest.mark.parametrize("resource", ["prefixes", "subnets", "pools", "excludes",
                                      "reservations"])
async def test_same_key_same_body_replays_the_original_201(operator, viewer, resource):
    s = await subnet(operator, "10.20.1.0/24")
    path, body, other = {
        "prefixes": ("/prefixes", {"cidr": "10.30.0.0/16"}, {"cidr": "10.31.0.0/16"}),
        "subnets": ("/subnets", {"prefix_id": s["prefix_id"], "cidr": "10.20.2.0/24"},
                    {"prefix_id": s["prefix_id"], "cidr": "10.20.3.0/24"}),
        "pools": (f"/subnets/{s['id']}/pools",
                  {"name": "a", "start_ip": "10.20.1.100", "end_ip": "10.20.1.110"},
                  {"name": "b", "start_ip": "10.20.1.120", "end_ip": "10.20.1.130"}),
        "excludes": (f"/subnets/{s['id']}/excludes",
                     {"start_ip": "10.20.1.5", "end_ip": "10.20.1.6"},
                     {"start_ip": "10.20.1.7", "end_ip": "10.20.1.8"}),
        "reservations": (f"/subnets/{s['id']}/reservations", {"mac": "02:00:00:00:00:01"},
                         {"mac": "02:00:00:00:00:02"}),
    }[resource]
    key = {"Idempotency-Key": f"create-{resource}"}
    first = await operator.post(path, json=body, headers=key)
    assert first.status_code == 201, first.text
    assert "Idempotent-Replayed" not in first.headers
    again = await operator.post(path, json=body, headers=key)
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "different request body" in error_of(
        await operator.post(path, json=other, headers=key), 409, "conflict")
    # Without the key the same body is a second create, refused as a duplicate.
    assert (await operator.post(path, json=body)).status_code == 409


async def test_a_key_expires_after_the_configured_time(operator, db):
    key = {"Idempotency-Key": "old"}
    first = await operator.post("/prefixes", json={"cidr": "10.30.0.0/16"}, headers=key)
    assert first.status_code == 201

    async def age(conn) -> None:
        await conn.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")

    await db.run(age)
    # Expired: the key is free again, so the request runs and meets the existing prefix.
    replay = await operator.post("/prefixes", json={"cidr": "10.30.0.0/16"}, headers=key)
    error_of(replay, 409, "conflict")
    fresh = await operator.post("/prefixes", json={"cidr": "10.32.0.0/16"}, headers=key)
    assert fresh.status_code == 201
