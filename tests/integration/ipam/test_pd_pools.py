"""Delegation pools (DHCPv6 IA_PD) as API resources: a prefix cut into delegated prefixes,
with excludes and DUID reservations of delegated prefixes (docs/api-ipam.md)."""

from __future__ import annotations

import pytest

from tests.integration.ipam.helpers import created, error_of, prefix, subnet

DUID_A = "00:03:00:01:02:00:00:00:00:0a"
DUID_B = "00:03:00:01:02:00:00:00:00:0b"


@pytest.fixture
def config_overrides():
    return {"license": {"tier": "community", "max_managed_ips": 4}}


async def _setup(operator) -> tuple[dict, dict]:
    top = await prefix(operator, "2001:db8::/32")
    link = await subnet(operator, "2001:db8:0:1::/64", parent="2001:db8::/32")
    return top, link


async def test_pool_rules(operator, viewer):
    _top, link = await _setup(operator)
    pools = f"/subnets/{link['id']}/pd-pools"
    pool = created(await operator.post(pools, json={
        "name": "cpe", "prefix": "2001:db8:100::/40", "delegated_length": 56}))
    assert (pool["prefix"], pool["delegated_length"], pool["size"]) == (
        "2001:db8:100::/40", 56, str(2**16))
    assert pool["subnet_id"] == link["id"]
    # A pool overlapping another (in any subnet of the tenant) is 409.
    assert error_of(await operator.post(pools, json={
        "name": "x", "prefix": "2001:db8:100:ff00::/56", "delegated_length": 60}),
        409, "conflict").startswith("prefix:")
    # Delegated prefixes are routed, never on a link: overlapping a subnet is 409.
    assert "subnet" in error_of(await operator.post(pools, json={
        "name": "x", "prefix": "2001:db8::/48", "delegated_length": 56}), 409, "conflict")
    # Inside one of the tenant's prefixes; the length longer than the pool's, at most 128.
    assert error_of(await operator.post(pools, json={
        "name": "x", "prefix": "2001:db9::/48", "delegated_length": 56}),
        422, "validation_error").startswith("prefix:")
    for length in (40, 32):
        assert error_of(await operator.post(pools, json={
            "name": "x", "prefix": "2001:db8:200::/40", "delegated_length": length}),
            422, "validation_error").startswith("delegated_length")
    assert error_of(await operator.post(pools, json={
        "name": "x", "prefix": "10.0.0.0/8", "delegated_length": 16}),
        422, "validation_error").startswith("prefix:")
    # IPv4 subnets have no delegation pools.
    v4 = await subnet(operator, "10.20.1.0/24")
    assert "IPv6" in error_of(await operator.post(f"/subnets/{v4['id']}/pd-pools", json={
        "name": "x", "prefix": "2001:db8:300::/40", "delegated_length": 56}), 409, "conflict")
    listed = (await viewer.get(pools)).json()
    assert [item["id"] for item in listed["items"]] == [pool["id"]]
    error_of(await viewer.get("/subnets/018f2c1e-0000-7000-8000-00000000dead/pd-pools"),
             404, "not_found")
    renamed = await operator.patch(f"/pd-pools/{pool['id']}", json={"name": "cpe-56"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "cpe-56"
    # A pool lies in a prefix of the tenant, the subnet's or another: that prefix cannot go
    # (nor shrink away from it) while no other prefix holds the pool.
    other = await prefix(operator, "2001:db9::/32")
    far = created(await operator.post(pools, json={
        "name": "far", "prefix": "2001:db9:1::/48", "delegated_length": 60}))
    for attempt in (operator.delete(f"/prefixes/{other['id']}"),
                    operator.patch(f"/prefixes/{other['id']}", json={"cidr": "2001:db9:8000::/33"})):
        assert "far" in error_of(await attempt, 409, "conflict")
    nested = await prefix(operator, "2001:db9::/40")
    assert (await operator.delete(f"/prefixes/{other['id']}")).status_code == 204
    assert "far" in error_of(await operator.delete(f"/prefixes/{nested['id']}"), 409, "conflict")
    assert (await operator.delete(f"/pd-pools/{far['id']}")).status_code == 204
    assert (await operator.delete(f"/prefixes/{nested['id']}")).status_code == 204
    # The subnet cannot go while it delegates.
    assert "delegation pool" in error_of(await operator.delete(f"/subnets/{link['id']}"),
                                         409, "conflict")
    assert (await operator.delete(f"/pd-pools/{pool['id']}")).status_code == 204
    error_of(await viewer.get(f"/pd-pools/{pool['id']}"), 404, "not_found")


async def test_excludes_and_duid_reservations(operator, viewer):
    _top, link = await _setup(operator)
    pool = created(await operator.post(f"/subnets/{link['id']}/pd-pools", json={
        "name": "cpe", "prefix": "2001:db8:100::/40", "delegated_length": 56}))
    pid = pool["id"]
    ex = created(await operator.post(f"/pd-pools/{pid}/excludes", json={
        "prefix": "2001:db8:100::/48"}))
    assert ex["size"] == "256"  # /56s in a /48
    assert error_of(await operator.post(f"/pd-pools/{pid}/excludes", json={
        "prefix": "2001:db8:100:ff00::/56"}), 409, "conflict").startswith("prefix:")
    for bad in ("2001:db8:200::/48", "2001:db8:101::/60", "2001:db8:100::/40"):
        assert error_of(await operator.post(f"/pd-pools/{pid}/excludes", json={
            "prefix": bad}), 422, "validation_error").startswith("prefix:")

    res = f"/pd-pools/{pid}/reservations"
    r = created(await operator.post(res, json={
        "prefix": "2001:db8:101:100::/56", "duid": "0003000102000000000A", "hostname": "cpe-1"}))
    assert (r["prefix"], r["duid"], r["hostname"]) == ("2001:db8:101:100::/56", DUID_A, "cpe-1")
    # One delegated prefix: its length is the pool's delegated_length.
    assert "/56" in error_of(await operator.post(res, json={
        "prefix": "2001:db8:101:200::/60", "duid": DUID_B}), 422, "validation_error")
    # Inside an exclude: 409; and an exclude may not cover a reservation.
    assert "exclude" in error_of(await operator.post(res, json={
        "prefix": "2001:db8:100:200::/56", "duid": DUID_B}), 409, "conflict")
    assert "reservation" in error_of(await operator.post(f"/pd-pools/{pid}/excludes", json={
        "prefix": "2001:db8:101::/48"}), 409, "conflict")
    # The prefix and the DUID are unique per pool.
    assert error_of(await operator.post(res, json={
        "prefix": "2001:db8:101:100::/56", "duid": DUID_B}), 409, "conflict").startswith("prefix")
    assert error_of(await operator.post(res, json={
        "prefix": "2001:db8:101:200::/56", "duid": "00-03-00-01-02-00-00-00-00-0A"}),
        409, "conflict").startswith("duid")
    error_of(await operator.post(res, json={"prefix": "2001:db8:101:200::/56"}),
             422, "validation_error")
    # A pool's PATCH keeps its children fitting.
    assert error_of(await operator.patch(f"/pd-pools/{pid}", json={"delegated_length": 60}),
                    409, "conflict").startswith("prefix/delegated_length")
    moved = await operator.patch(f"/pd-reservations/{r['id']}", json={
        "prefix": "2001:db8:101:300::/56"})
    assert moved.status_code == 200 and moved.json()["prefix"] == "2001:db8:101:300::/56"
    assert (await viewer.get(f"/pd-reservations/{r['id']}")).json()["hostname"] == "cpe-1"
    assert [i["id"] for i in (await viewer.get(res)).json()["items"]] == [r["id"]]
    assert "reservation" in error_of(await operator.delete(f"/pd-pools/{pid}"), 409, "conflict")

    # Reservations of delegated prefixes count against the license cap (4 here).
    for n in range(3):
        created(await operator.post(res, json={
            "prefix": f"2001:db8:102:{n}00::/56", "duid": f"00:03:00:01:02:00:00:00:01:{n:02x}"}))
    status = (await viewer.get("/license")).json()
    assert (status["managed_ips"], status["reservations"]) == (4, 4)
    error_of(await operator.post(res, json={
        "prefix": "2001:db8:103::/56", "duid": "00:03:00:01:02:00:00:00:02:00"}),
        402, "license_limit")
    error_of(await operator.post(f"/subnets/{link['id']}/assignments", json={"hostname": "a"}),
             402, "license_limit")

    # Audit entries name the objects.
    entries = (await viewer.get("/audit", params={"object_type": "pd_reservation"})).json()
    assert entries["items"], entries
    assert (await operator.delete(f"/pd-excludes/{ex['id']}")).status_code == 204
    assert (await operator.delete(f"/pd-reservations/{r['id']}")).status_code == 204
    error_of(await viewer.get(f"/pd-reservations/{r['id']}"), 404, "not_found")
