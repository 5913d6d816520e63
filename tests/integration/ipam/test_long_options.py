"""Options over 255 octets through the API (docs/api-ipam.md, "Long options"): taken up to
900 octets, refused past it with the size in the message."""

from __future__ import annotations

from tests.integration.ipam.helpers import created, error_of, subnet


async def test_long_values_are_taken_up_to_the_bound(operator):
    s = await subnet(operator, "10.20.1.0/24")
    path = f"/subnets/{s['id']}/options"
    domains = [f"s{i:03d}.example.com" for i in range(50)]  # 900 octets on the wire
    made = created(await operator.post(path, json={"code": 119,
                                                   "payload": {"domains": domains}}))
    assert made["payload"] == {"domains": domains}
    assert (await operator.get(f"/options/{made['id']}")).json()["payload"]["domains"] == domains
    created(await operator.post(path, json={"code": 43, "payload": {"hex": "ab" * 900}}))
    message = error_of(await operator.post(path, json={
        "code": 121, "payload": {"routes": [
            {"destination": f"10.{i}.0.0/16", "router": "10.20.1.1"} for i in range(129)]}}),
        422, "validation_error")  # 7 octets a route: 903
    assert message.startswith("payload") and "903 octets" in message and "900" in message
    message = error_of(await operator.post(path, json={
        "code": 224, "payload": {"hex": "00" * 901}}), 422, "validation_error")
    assert message.startswith("payload") and "900 octets" in message
