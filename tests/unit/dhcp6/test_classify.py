"""dhcp6.classify: the client-class match kinds over DHCPv6's options 16, 15 and 79."""

from __future__ import annotations

from ipaddress import IPv6Address, IPv6Network

import pytest

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.classify import ClientClass6, classify
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.options import Option, UserClass, VendorClass
from ipamd.dhcp6.plan import Link, Pool6


def _msg(*options: Option) -> Message:
    return Message(p.SOLICIT, 1, list(options))


PXE = VendorClass(343, (b"PXEClient:Arch:00007:UNDI:003016",))


@pytest.mark.parametrize(("match", "value", "options", "mac", "hit"), [
    ("vendor_class", "PXEClient", (PXE,), None, True),  # any enterprise, item prefix
    ("vendor_class", "343:PXEClient:Arch", (PXE,), None, True),  # enterprise:text
    ("vendor_class", "344:PXEClient", (PXE,), None, False),  # other enterprise
    ("vendor_class", "Arch", (PXE,), None, False),  # not a prefix of any item
    ("vendor_class", "PXEClient", (), None, False),
    ("vendor_class", "b", (VendorClass(1, (b"a", b"bc")),), None, True),  # second item
    ("user_class", "lab", (UserClass((b"x", b"lab")),), None, True),
    ("user_class", "la", (UserClass((b"lab",)),), None, False),  # equality, not prefix
    ("user_class", "lab", (PXE,), None, False),
    ("mac_prefix", "00:1a:2b", (), "00:1a:2b:3c:4d:5e", True),
    ("mac_prefix", "00:1a:2c", (), "00:1a:2b:3c:4d:5e", False),
    ("mac_prefix", "00:1a:2b", (), None, False),  # no RFC 6939 option: no MAC
])
def test_match_kinds(match: str, value: str, options: tuple[Option, ...], mac: str | None,
                     hit: bool) -> None:
    found = classify(_msg(*options), (ClientClass6("c1", match, value),), mac)
    assert (found == {"c1"}) is hit


def test_a_kept_pool_is_open_only_to_its_class_and_comes_first() -> None:
    kept = Pool6(IPv6Address("2001:db8::10"), IPv6Address("2001:db8::1f"), "phones")
    open_pool = Pool6(IPv6Address("2001:db8::100"), IPv6Address("2001:db8::1ff"))
    link = Link("s", IPv6Network("2001:db8::/64"), pools=(open_pool, kept))
    assert link.pools_for(frozenset({"phones"})) == [kept, open_pool]
    assert link.pools_for(frozenset()) == [open_pool]
    assert link.kept_from(IPv6Address("2001:db8::11"), frozenset())
    assert not link.kept_from(IPv6Address("2001:db8::11"), frozenset({"phones"}))
    assert not link.kept_from(IPv6Address("2001:db8::101"), frozenset())
    assert not link.in_pool(IPv6Address("2001:db8::11"))
