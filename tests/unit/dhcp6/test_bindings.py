"""dhcp6.bindings.BindingCache: the server's picture of live bindings, as the decision asks it."""

from __future__ import annotations

import uuid
from ipaddress import IPv6Address

from ipamd.dhcp6.bindings import BindingCache, binding_of
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.plan import Binding, IaType

A = IPv6Address
ONE = Duid.ll(bytes.fromhex("02005e100001"))
TWO = Duid.ll(bytes.fromhex("02005e100002"))
NOW = 1_000.0


def _na(duid: Duid, address: str, *, iaid: int = 1, state: str = "active",
        expires: float = NOW + 60) -> Binding:
    return Binding(IaType.NA, duid, iaid, A(address), 128, state, expires)


def _pd(duid: Duid, prefix: str, length: int, *, iaid: int = 1) -> Binding:
    return Binding(IaType.PD, duid, iaid, A(prefix), length, "active", NOW + 60)


def test_holder_finds_addresses_and_overlapping_prefixes_of_any_length() -> None:
    cache = BindingCache()
    cache.put(uuid.uuid4(), _na(ONE, "2001:db8::10"))
    cache.put(uuid.uuid4(), _pd(TWO, "2001:db8:4400:ab00::", 56))
    assert cache.holder(A("2001:db8::10"), 128, NOW).duid == ONE  # type: ignore[union-attr]
    assert cache.holder(A("2001:db8::11"), 128, NOW) is None
    # The /56 itself, a /64 inside it, the /48 around it: all overlap the binding.
    for address, length in (("2001:db8:4400:ab00::", 56), ("2001:db8:4400:ab42::", 64),
                            ("2001:db8:4400::", 48)):
        found = cache.holder(A(address), length, NOW)
        assert found is not None and found.duid == TWO, (address, length)
    assert cache.holder(A("2001:db8:4400:ac00::", ), 56, NOW) is None
    assert cache.holder(A("2001:db8:4401::"), 48, NOW) is None


def test_expired_bindings_hold_nothing_and_ia_lookup_wants_active() -> None:
    cache = BindingCache()
    cache.put(uuid.uuid4(), _na(ONE, "2001:db8::10", expires=NOW - 1))
    cache.put(uuid.uuid4(), _na(ONE, "2001:db8::20", iaid=2, state="declined"))
    assert cache.holder(A("2001:db8::10"), 128, NOW) is None
    assert cache.of(ONE, 1, IaType.NA, NOW) == []
    assert cache.holder(A("2001:db8::20"), 128, NOW) is not None  # probation holds it
    assert cache.of(ONE, 2, IaType.NA, NOW) == []  # but it is not the client's to renew


def test_put_replaces_the_holder_of_an_address_and_drop_forgets_everywhere() -> None:
    cache = BindingCache()
    first, second = uuid.uuid4(), uuid.uuid4()
    cache.put(first, _na(ONE, "2001:db8::10"))
    cache.put(second, _na(TWO, "2001:db8::10"))  # the database said TWO holds it now
    assert first not in cache and len(cache) == 1
    assert cache.of(ONE, 1, IaType.NA, NOW) == []
    cache.drop(second)
    assert len(cache) == 0 and cache.holder(A("2001:db8::10"), 128, NOW) is None
    cache.put(first, _pd(ONE, "2001:db8:4400::", 56))
    cache.drop_ia(ONE, 1, IaType.PD)
    assert cache.holder(A("2001:db8:4400::"), 48, NOW) is None


def test_a_prefix_look_up_sees_addresses_bound_before_and_after_its_first() -> None:
    """Addresses' starts are sorted only once a shorter prefix is looked up; bindings put
    and dropped before and after that first look-up are all seen."""
    cache = BindingCache()
    before, dropped = uuid.uuid4(), uuid.uuid4()
    cache.put(before, _na(ONE, "2001:db8:4400:ab00::10"))
    cache.put(dropped, _na(ONE, "2001:db8:4400:cd00::10", iaid=2))
    cache.drop(dropped)
    found = cache.holder(A("2001:db8:4400:ab00::"), 56, NOW)  # the first: sorts them
    assert found is not None and found.address == A("2001:db8:4400:ab00::10")
    assert cache.holder(A("2001:db8:4400:cd00::"), 56, NOW) is None
    cache.put(uuid.uuid4(), _na(TWO, "2001:db8:4400:ef00::20"))  # after it
    found = cache.holder(A("2001:db8:4400:ef00::"), 56, NOW)
    assert found is not None and found.duid == TWO
    cache.drop(before)
    assert cache.holder(A("2001:db8:4400:ab00::"), 56, NOW) is None
    cache.drop_ia(TWO, 1, IaType.NA)  # the last address: its length is forgotten
    assert cache.holder(A("2001:db8:4400::"), 48, NOW) is None
    cache.put(uuid.uuid4(), _na(ONE, "2001:db8:4400:ab00::30"))  # and sorted again
    assert cache.holder(A("2001:db8:4400::"), 48, NOW) is not None


def test_rows_of_the_lease_store_become_bindings() -> None:
    lease_id = uuid.uuid4()
    row = (lease_id, uuid.uuid4(), "2001:db8::10", 128, "active", ONE.text, 7, "na", NOW + 5)
    assert binding_of(row) == (lease_id, _na(ONE, "2001:db8::10", iaid=7, expires=NOW + 5))
    assert binding_of((lease_id, None, "10.0.0.1", 32, "active", None, None, None, NOW)) is None
    cache = BindingCache()
    assert cache.load([row]) == 1 and cache.counts() == {"active": 1}
