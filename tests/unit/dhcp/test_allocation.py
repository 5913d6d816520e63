"""The plan's address rules and the free-address picker."""

from __future__ import annotations

import uuid

from ipamd.dhcp.freepool import AddressPicker
from ipamd.dhcp.plan import subtract
from tests.unit.dhcp.envs import make_plan, pool_row, subnet_row
from tests.unit.dhcp.packets import ip

GOLD = uuid.UUID("0192f000-0000-7000-8000-0000000000aa")


def test_subtract_ranges() -> None:
    assert subtract([(1, 10)], [(3, 4), (8, 20)]) == ((1, 2), (5, 7))
    assert subtract([(1, 10)], [(0, 100)]) == ()
    assert subtract([(1, 10)], []) == ((1, 10),)


def test_pool_segments_skip_excludes_network_broadcast_and_gateway() -> None:
    plan = make_plan([subnet_row("10.77.1.0/24", gateway="10.77.1.5")],
                     [pool_row("10.77.1.0", "10.77.1.255")],
                     excludes=[("10.77.1.10", "10.77.1.19")])
    subnet = next(iter(plan.subnets.values()))
    (pool,) = subnet.pools
    assert pool.segments == ((ip("10.77.1.1"), ip("10.77.1.4")), (ip("10.77.1.6"), ip("10.77.1.9")),
                             (ip("10.77.1.20"), ip("10.77.1.254")))
    assert pool.size == 4 + 4 + 235
    assert not subnet.usable(ip("10.77.1.0")) and not subnet.usable(ip("10.77.1.255"))
    assert not subnet.usable(ip("10.77.1.5")) and not subnet.usable(ip("10.77.1.12"))
    assert subnet.usable(ip("10.77.1.20")) and not subnet.usable(ip("10.77.2.20"))


def test_dynamic_ok_respects_classes_reservations_and_assignments() -> None:
    plan = make_plan(pools=[pool_row("10.77.1.100", "10.77.1.109"),
                            pool_row("10.77.1.200", "10.77.1.209", class_id=GOLD)],
                     reservations=[{"ip": "10.77.1.101", "mac": "00:00:00:00:00:01"}],
                     assignments=["10.77.1.102"])
    subnet = next(iter(plan.subnets.values()))
    assert subnet.dynamic_ok(ip("10.77.1.100"), frozenset())
    assert not subnet.dynamic_ok(ip("10.77.1.101"), frozenset())  # someone's reservation
    assert not subnet.dynamic_ok(ip("10.77.1.102"), frozenset())  # a static assignment
    assert not subnet.dynamic_ok(ip("10.77.1.200"), frozenset())  # class pool, no class
    assert subnet.dynamic_ok(ip("10.77.1.200"), frozenset({GOLD}))
    assert not subnet.dynamic_ok(ip("10.77.1.150"), frozenset({GOLD}))  # outside pools


def test_picker_round_robin_skipping_held_pending_offered_and_blocked() -> None:
    plan = make_plan(pools=[pool_row("10.77.1.100", "10.77.1.105")],
                     reservations=[{"ip": "10.77.1.101", "mac": "00:00:00:00:00:01"}])
    subnet = next(iter(plan.subnets.values()))
    picker = AddressPicker()
    held = {ip("10.77.1.102")}
    offered = {ip("10.77.1.104")}
    pending: set[int] = set()
    first = picker.pick(subnet, frozenset(), held, pending, offered)
    assert first == ip("10.77.1.100")
    pending.add(first)
    second = picker.pick(subnet, frozenset(), held, pending, offered)
    assert second == ip("10.77.1.103")
    pending.add(second)
    third = picker.pick(subnet, frozenset(), held, pending, offered)
    assert third == ip("10.77.1.105")
    pending.add(third)
    assert picker.pick(subnet, frozenset(), held, pending, offered) is None  # full
    pending.discard(first)
    # Still marked full until something in the subnet is freed.
    assert picker.pick(subnet, frozenset(), held, pending, offered) is None
    picker.freed(subnet.id)
    assert picker.pick(subnet, frozenset(), held, pending, offered) == first


def test_picker_prefers_the_clients_class_pools_then_open_pools() -> None:
    plan = make_plan(pools=[pool_row("10.77.1.100", "10.77.1.100"),
                            pool_row("10.77.1.200", "10.77.1.200", class_id=GOLD)])
    subnet = next(iter(plan.subnets.values()))
    picker = AddressPicker()
    assert picker.pick(subnet, frozenset({GOLD}), set(), set(), set()) == ip("10.77.1.200")
    assert picker.pick(subnet, frozenset(), set(), set(), set()) == ip("10.77.1.100")
    assert picker.pick(subnet, frozenset({GOLD}), {ip("10.77.1.200")}, set(), set()) == \
        ip("10.77.1.100")
    assert picker.pick(subnet, frozenset(), {ip("10.77.1.100")}, set(), set()) is None


def test_picker_walks_segments_and_wraps() -> None:
    plan = make_plan(pools=[pool_row("10.77.1.10", "10.77.1.20")],
                     excludes=[("10.77.1.12", "10.77.1.18")])
    subnet = next(iter(plan.subnets.values()))
    picker = AddressPicker()
    got = [picker.pick(subnet, frozenset(), set(), set(), set()) for _ in range(6)]
    assert got == [ip(a) for a in ("10.77.1.10", "10.77.1.11", "10.77.1.19", "10.77.1.20",
                                    "10.77.1.10", "10.77.1.11")]


def test_nodes_with_different_names_start_their_walk_apart() -> None:
    """Two nodes on one database must not walk a pool in lockstep (docs/scale-out.md): each starts
    at a stable place of its own; one unnamed node starts at the pool's start."""
    import uuid as _uuid

    from ipamd.dhcp.freepool import _spread_start

    pool_id = _uuid.UUID("01920000-0000-7000-8000-000000000001")
    a, b = (_spread_start(name, pool_id, 15_000) for name in ("node-a", "node-b"))
    assert a != b
    assert _spread_start("node-a", pool_id, 15_000) == a  # stable across processes
    assert _spread_start("", pool_id, 15_000) == 0
