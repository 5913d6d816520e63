"""dhcp6.engine and the Client FQDN option (39, RFC 4704): the name registered with the
addresses' changes, and the flags of the answer saying what the server will do."""

from __future__ import annotations

from ipaddress import IPv6Address

import pytest

from ipamd.core import dnswire
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.engine import ChangeKind, decide, fqdn_flags
from ipamd.dhcp6.options import ClientFqdn, IaNa, IaPd, OptionRequest, RapidCommit
from tests.unit.dhcp6.bindings import MemoryBindings
from tests.unit.dhcp6.test_engine import NOW, SERVER, _link, _msg

ZONE = "lan.example"


def _ask(flags: int, name: str, *, oro: tuple[int, ...] = (39,), zone: str | None = ZONE,
         absolute: bool = False):  # type: ignore[no-untyped-def]
    fqdn = ClientFqdn(flags, dnswire.labels_of(name), absolute)
    message = _msg(p.SOLICIT, RapidCommit(), OptionRequest(oro), fqdn, IaNa(1, 0, 0, ()),
                   IaPd(2, 0, 0, ()))
    return decide(message, _link(ddns_zone=zone), MemoryBindings(), SERVER, NOW)


@pytest.mark.parametrize(("client", "updates", "ours"), [
    (p.FQDN_S, True, p.FQDN_S),  # asked to update: does, no override
    (0, True, p.FQDN_S | p.FQDN_O),  # client would update AAAA itself: server overrides
    (p.FQDN_N, False, p.FQDN_N),
    (p.FQDN_S, False, p.FQDN_N | p.FQDN_O),  # cannot update: says so, S overridden
])
def test_flags(client: int, updates: bool, ours: int) -> None:
    assert fqdn_flags(client, updates) == ours


def test_the_name_goes_with_the_address_and_the_answer_says_what_is_done() -> None:
    decision = _ask(p.FQDN_S, "laptop")
    assert decision.reply is not None
    by_type = {change.ia_type.name: change for change in decision.changes}
    assert by_type["NA"].kind is ChangeKind.GRANT and by_type["NA"].fqdn == "laptop.lan.example"
    assert by_type["PD"].fqdn is None  # a delegated prefix gets no name
    answer = decision.reply.first(ClientFqdn)
    assert answer is not None and answer.flags == p.FQDN_S
    assert (answer.name, answer.absolute) == ("laptop.lan.example.", True)


def test_a_name_outside_the_zone_keeps_its_first_label() -> None:
    decision = _ask(0, "laptop.elsewhere.example", absolute=True)
    assert [c.fqdn for c in decision.changes if c.ia_type.name == "NA"] == \
        ["laptop.lan.example"]


@pytest.mark.parametrize(("flags", "zone"), [(p.FQDN_N, ZONE), (p.FQDN_S, None)])
def test_no_update_no_name_and_n_answered(flags: int, zone: str | None) -> None:
    decision = _ask(flags, "laptop", zone=zone)
    assert all(change.fqdn is None for change in decision.changes)
    assert decision.reply is not None
    answer = decision.reply.first(ClientFqdn)
    assert answer is not None and answer.flags & p.FQDN_N and not answer.flags & p.FQDN_S
    assert answer.name == "laptop"  # echoed as the client wrote it


def test_no_answer_unless_asked_for_in_the_option_request() -> None:
    decision = _ask(p.FQDN_S, "laptop", oro=(23,))
    assert decision.reply is not None and decision.reply.first(ClientFqdn) is None
    assert [c.fqdn for c in decision.changes if c.ia_type.name == "NA"] == \
        ["laptop.lan.example"]
    assert isinstance(decision.changes[0].address, IPv6Address)
