"""The "As of" map: plan reconstruction from the audit trail, layering, run-length ranges."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import uuid

from ipamd.ipam import address_map
from ipamd.ipam.address_map import PlanVersion

T = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
D = dt.timedelta(days=1)
NET = ipaddress.IPv4Network("10.77.1.0/24")


def ip(last: int) -> int:
    return int(NET.network_address) + last


def test_base_ranges_layer_excludes_over_pools_and_merge():
    spans = [(ip(10), ip(100), "pool"), (ip(50), ip(60), "excluded"),
             (ip(101), ip(110), "pool"), (ip(250), ip(300), "excluded")]  # clipped at the end
    ranges = address_map.base_ranges(ip(0), ip(255), spans)
    assert ranges == [
        (ip(0), ip(9), "free"), (ip(10), ip(49), "pool"), (ip(50), ip(60), "excluded"),
        (ip(61), ip(110), "pool"),  # two adjacent pools read as one run
        (ip(111), ip(249), "free"), (ip(250), ip(255), "excluded"),
    ]
    assert address_map.base_ranges(ip(0), ip(255), []) == [(ip(0), ip(255), "free")]


def test_counts_move_overlaid_addresses_out_of_their_ranges():
    ranges = [(ip(0), ip(9), "free"), (ip(10), ip(255), "pool")]
    held = [1, 2, 10, 11, 12, 13, 14, 255]  # two in the free range, six in the pool
    planned = [(3, "assigned"), (20, "reserved")]
    counts = address_map.count_states(ranges, ip(0), held, 1, planned)
    assert counts == {"free": 10 - 2 - 1, "pool": 246 - 6 - 1, "excluded": 0,
                      "assigned": 1, "reserved": 1, "declined": 1, "leased": 7}
    assert sum(counts.values()) == 256


def _version(kind, oid, at, action, before=None, after=None):
    return PlanVersion(kind, oid, at, action, before, after)


def first_after(audit, at):
    """What the map's SQL selects: each object's first entry after the moment."""
    found = {}
    for entry in sorted(audit, key=lambda e: e.at):
        if entry.at > at:
            found.setdefault((entry.object_type, entry.object_id), entry)
    return list(found.values())


def plan(current, audit, at):
    return address_map.plan_at(current, first_after(audit, at), at)


def test_plan_at_replays_the_audit_trail():
    pool_v1 = {"id": "p", "start_ip": "10.77.1.10", "end_ip": "10.77.1.20"}
    pool_v2 = {"id": "p", "start_ip": "10.77.1.10", "end_ip": "10.77.1.90"}
    gone = {"id": "r", "ip": "10.77.1.5", "mac": "02:00:00:00:00:05"}
    audit = [
        _version("pool", "p", T - 10 * D, "create", after=pool_v1),
        _version("pool", "p", T + D, "update", before=pool_v1, after=pool_v2),
        _version("reservation", "r", T - 5 * D, "create", after=gone),
        _version("reservation", "r", T - D, "delete", before=gone),
        _version("exclude", "e", T + 2 * D, "create", after={"id": "e"}),
    ]
    current = [("pool", {**pool_v2, "created_at": T - 10 * D}),
               ("exclude", {"id": "e", "created_at": T + 2 * D})]
    assert plan(current, audit, T) == [("pool", pool_v1)]  # before its update; no exclude yet
    assert sorted(plan(current, audit, T - 2 * D), key=str) == [
        ("pool", pool_v1), ("reservation", gone)]  # the deleted reservation, from its delete
    assert plan(current, audit, T - 20 * D) == []  # before anything was made
    now = plan(current, audit, T + 3 * D)
    assert ("pool", current[0][1]) in now and ("exclude", current[1][1]) in now
    assert plan(current, audit, T + D) == [current[0]]  # an entry at the moment is applied


def test_plan_at_before_the_first_audited_change_uses_its_before():
    # The creation is past audit retention; the first entry left is an update.
    old = {"id": "a", "ip": "10.77.1.7", "hostname": "old",
           "created_at": (T - 100 * D).isoformat()}
    new = {**old, "hostname": "new"}
    audit = [_version("assignment", "a", T + D, "update", before=old, after=new)]
    assert plan([("assignment", new)], audit, T) == [("assignment", old)]
    # created after the moment asked: not there yet
    assert plan([], audit, T - 200 * D) == []


def test_plan_at_takes_unaudited_current_rows_by_creation_time():
    row = {"id": uuid.uuid4(), "start_ip": "10.77.1.1", "end_ip": "10.77.1.2", "created_at": T}
    assert address_map.plan_at([("exclude", row)], [], T) == [("exclude", row)]
    assert address_map.plan_at([("exclude", row)], [], T - D) == []


def test_plan_layers_priorities():
    plan = [
        ("pool", {"start_ip": "10.77.1.100", "end_ip": "10.77.1.199"}),
        ("exclude", {"start_ip": "10.77.1.150", "end_ip": "10.77.1.159"}),
        ("assignment", {"ip": "10.77.1.120", "hostname": "static"}),
        ("reservation", {"ip": "10.77.1.120", "mac": "02:00:00:00:00:01", "hostname": "r"}),
        ("assignment", {"ip": "10.77.1.151", "hostname": "ünïcode \"q\""}),
        ("reservation", {"ip": "10.77.2.1", "mac": "02:00:00:00:00:09"}),  # outside: ignored
    ]
    ranges, points = address_map.plan_layers(NET, plan)
    assert [(a - ip(0), b - ip(0), s) for a, b, s in ranges] == [
        (0, 99, "free"), (100, 149, "pool"), (150, 159, "excluded"), (160, 199, "pool"),
        (200, 255, "free")]
    assert sorted(points) == [120, 151]
    assert points[120][0] == "reserved"  # a reservation outranks an assignment
    assert json.loads(points[120][1]) == ["10.77.1.120", "02:00:00:00:00:01", "r", "reserved"]
    assert json.loads(points[151][1]) == ["10.77.1.151", None, 'ünïcode "q"', "assigned"]
