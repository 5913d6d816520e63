"""The lease cache's indexes and its resync journal; trusted relay matching."""

from __future__ import annotations

import uuid

from ipamd.dhcp.leasecache import Lease, LeaseCache
from ipamd.dhcp.relays import TrustedRelays
from tests.unit.dhcp.packets import ip

S = uuid.UUID("0192f000-0000-7000-8000-000000000001")


def _lease(n: int, key: bytes, state: str = "active") -> Lease:
    return Lease(uuid.uuid4(), S, n, state, key, 1e10)


def test_put_replaces_by_client_and_address() -> None:
    cache = LeaseCache()
    first = _lease(1, b"a", "offered")
    cache.put(first)
    moved = _lease(2, b"a")  # the client's new lease replaces its old one
    cache.put(moved)
    assert cache.client(S, b"a") is moved and cache.at(S, 1) is None
    taker = _lease(2, b"b")  # the database said address 2 is b's now
    cache.put(taker)
    assert cache.client(S, b"a") is None and cache.at(S, 2) is taker
    assert cache.counts() == {"offered": 0, "active": 1, "declined": 0}


def test_declined_holds_the_address_not_the_client() -> None:
    cache = LeaseCache()
    lease = _lease(5, b"a")
    cache.put(lease)
    cache.put(Lease(lease.lease_id, S, 5, "declined", b"a", 1e10))
    held = cache.at(S, 5)
    assert cache.client(S, b"a") is None and held is not None and held.state == "declined"
    assert len(cache) == 1
    cache.drop(lease.lease_id)
    assert cache.at(S, 5) is None and len(cache) == 0


def test_resync_keeps_changes_made_while_it_ran() -> None:
    cache = LeaseCache()
    old = _lease(1, b"old")
    gone = _lease(2, b"gone")
    cache.put(old)
    cache.put(gone)
    cache.begin_resync()
    fresh = _lease(3, b"new")  # committed by this node during the reload
    cache.put(fresh)
    cache.drop(old.lease_id)  # expired during the reload
    # The reload's snapshot predates both changes, and another node freed "gone".
    cache.finish_resync([old, _lease(9, b"other-node")])
    assert cache.at(S, 3) is fresh
    assert cache.at(S, 1) is None and cache.at(S, 2) is None
    assert cache.at(S, 9) is not None


def test_trusted_relays() -> None:
    relays = TrustedRelays(["10.77.1.1", "10.78.0.0/16", "2001:db8::1"])
    assert ip("10.77.1.1") in relays and ip("10.78.200.3") in relays
    assert ip("10.77.1.2") not in relays and ip("10.79.0.1") not in relays
    assert ip("10.78.200.3") in relays  # memoised answer
    assert "10.77.1.1" not in relays  # ints only
    assert not TrustedRelays([])


def test_offer_holds_lapse_oldest_first_and_a_renewed_hold_moves_to_the_end() -> None:
    holds = LeaseCache().holds
    holds.hold(S, 1, b"a", 100.0)
    holds.hold(S, 2, b"b", 110.0)
    holds.hold(S, 3, b"a", 120.0)  # the client's new hold replaces its first one
    assert holds.at(S, 1) is None and holds.client(S, b"a").ip == 3  # type: ignore[union-attr]
    holds.hold(S, 2, b"b", 130.0)  # a retransmitted Discover holds anew
    assert holds.lapse(119.0) == set() and len(holds) == 2
    assert holds.lapse(125.0) == {S}
    assert holds.client(S, b"a") is None and holds.at(S, 3) is None
    assert holds.client(S, b"b") is not None and holds.live(125.0) == 1
    assert holds.live(131.0) == 0  # lapsed, though not yet swept


def test_holds_are_counted_as_offered_and_survive_a_resync() -> None:
    cache = LeaseCache()
    cache.holds.hold(S, 7, b"h", 1e10)
    cache.put(_lease(1, b"a"))
    cache.begin_resync()
    cache.finish_resync([_lease(2, b"other-node")])
    assert cache.holds.at(S, 7) is not None  # memory only: the reload does not know it
    assert cache.counts() == {"offered": 1, "active": 1, "declined": 0}


def test_a_dropped_oldest_hold_does_not_hide_the_next_one_from_lapsing() -> None:
    holds = LeaseCache().holds
    holds.hold(S, 1, b"a", 100.0)
    holds.hold(S, 2, b"b", 110.0)
    holds.drop(S, b"a")  # acknowledged
    assert holds.lapse(105.0) == set() and holds.at(S, 2) is not None
    assert holds.lapse(111.0) == {S} and len(holds) == 0
    holds.hold(S, 3, b"c", 120.0)
    assert holds.lapse(121.0) == {S}


def test_counts_follow_puts_drops_and_resyncs() -> None:
    import uuid as _uuid

    from ipamd.dhcp.leasecache import Lease, LeaseCache

    cache = LeaseCache()
    subnet = _uuid.uuid4()
    first = Lease(_uuid.uuid4(), subnet, 10, "active", b"a", 1e12)
    cache.put(first)
    cache.put(Lease(_uuid.uuid4(), subnet, 11, "declined", b"b", 1e12))
    assert cache.counts() == {"offered": 0, "active": 1, "declined": 1}
    # The same client's new lease replaces its old one: still one active.
    cache.put(Lease(_uuid.uuid4(), subnet, 12, "active", b"a", 1e12))
    assert cache.counts() == {"offered": 0, "active": 1, "declined": 1}
    assert cache.drop(first.lease_id) is None  # already replaced: nothing counted twice
    cache.holds.hold(subnet, 14, b"d", 1.0)  # lapsed long ago (holds come in lapse order)
    cache.holds.hold(subnet, 13, b"c", 1e12)
    assert cache.counts() == {"offered": 1, "active": 1, "declined": 1}
    cache.begin_resync()
    cache.finish_resync([Lease(_uuid.uuid4(), subnet, 20, "active", b"x", 1e12)])
    assert cache.counts() == {"offered": 1, "active": 1, "declined": 0}
