"""Which lease DNS rows still apply when delivered (dns/delivery.superseded): an add while
the lease is active under its name, a remove once it is not — ended, or renewed under
another name (migration 0020)."""

from __future__ import annotations

import pytest

from ipamd.dns.change import LeaseChange, dhcid_for
from ipamd.dns.delivery import superseded


def _change(op: str, name: str) -> LeaseChange:
    return LeaseChange(op=op, name=name, ip="2001:db8::10", zone="lan.example",
                       reverse_zone=None, ttl=60,
                       dhcid=dhcid_for(name, None, None, "00:03:00:01:02:00:00:00:00:01"))


@pytest.mark.parametrize(("op", "name", "state", "fqdn", "applies"), [
    ("add", "a.lan.example", "active", "a.lan.example", True),
    ("add", "a.lan.example", "active", "A.lan.example.", True),  # names compare as DNS does
    ("add", "a.lan.example", "active", "b.lan.example", False),  # renamed since: a late add
    ("add", "a.lan.example", "released", "a.lan.example", False),
    ("add", "a.lan.example", None, None, False),  # the lease is gone
    ("remove", "a.lan.example", "released", "a.lan.example", True),
    ("remove", "a.lan.example", None, None, True),
    ("remove", "a.lan.example", "active", "b.lan.example", True),  # the old name of a rename
    ("remove", "a.lan.example", "active", "a.lan.example", False),  # active again: add holds
])
def test_superseded(op: str, name: str, state: str | None, fqdn: str | None,
                    applies: bool) -> None:
    assert superseded(_change(op, name), state, fqdn) is not applies
