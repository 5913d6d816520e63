"""dhcp6.engine: the DHCPv6 decision on crafted messages (RFC 8415 §18.3), no sockets, no SQL."""

from __future__ import annotations

from ipaddress import IPv6Address, IPv6Network

import pytest

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message, RelayMessage, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.engine import DROP_REASONS, ChangeKind, Decision, LeaseChange, decide
from ipamd.dhcp6.options import (
    ClientId,
    DnsServers,
    IaAddress,
    IaNa,
    IaPd,
    IaPrefix,
    OptionRequest,
    RapidCommit,
    RawOption,
    ServerId,
    StatusCode,
)
from ipamd.dhcp6.plan import (
    Binding,
    IaType,
    Lifetimes,
    Link,
    PdPool,
    Plan6,
    Pool6,
    Reservation6,
)
from ipamd.dhcp6.relay import unwrap, wrap
from tests.unit.dhcp6.bindings import MemoryBindings
from tests.unit.dhcp6.wire import DHCRELAY_FORWARD, DUID_EN, DUID_LLT

A = IPv6Address
N = IPv6Network
SERVER = Duid(DUID_EN)
CLIENT = Duid(DUID_LLT)
OTHER = Duid.ll(bytes.fromhex("02005e1000ff"))
NOW = 1_800_000_000.0
LATER = NOW + 3600
DNS = A("2001:db8::53").packed
DOMAINS = b"\x07example\x03com\x00"


def _link(**changes: object) -> Link:
    values: dict[str, object] = {
        "subnet_id": "s-77-1",
        "network": N("2001:db8:77:1::/64"),
        "lifetimes": Lifetimes(preferred=3000, valid=4000),
        "pools": (Pool6(A("2001:db8:77:1::100"), A("2001:db8:77:1::1ff")),),
        "pd_pools": (PdPool(N("2001:db8:4400::/48"), 56),),
        "options": {23: DNS, 24: DOMAINS},
    }
    values.update(changes)
    return Link(**values)  # type: ignore[arg-type]


def _msg(msg_type: int, *options: object, duid: Duid | None = CLIENT,
         server: Duid | None = None) -> Message:
    head: list[object] = []
    if duid is not None:
        head.append(ClientId(duid))
    if server is not None:
        head.append(ServerId(server))
    message = Message(msg_type, 0x00C0DE, [*head, *options])  # type: ignore[list-item]
    again = parse(message.to_bytes())  # what the server would see
    assert isinstance(again, Message)
    return again


def _decide(message: Message, link: Link | None = None, *bindings: Binding) -> Decision:
    return decide(message, _link() if link is None else link, MemoryBindings(*bindings),
                  SERVER, NOW)


def _bound(address: str, duid: Duid = CLIENT, iaid: int = 1, state: str = "active",
           ia_type: IaType = IaType.NA, length: int = 128) -> Binding:
    return Binding(ia_type, duid, iaid, A(address), length, state, LATER)


def _ia(reply: Message, index: int = 0) -> IaNa:
    return reply.ia_nas[index]


def _only_address(reply: Message, index: int = 0) -> IPv6Address:
    (given,) = [a for a in _ia(reply, index).addresses if a.valid]
    return given.address


# --------------------------------------------------------------------------- Solicit, Request


def test_solicit_gets_an_advertise_from_the_pool_and_nothing_is_written():
    decision = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0), OptionRequest((24, 23, 59))))
    reply = decision.reply
    assert reply is not None and decision.changes == () and decision.drop is None
    assert (reply.msg_type, reply.transaction_id) == (p.ADVERTISE, 0x00C0DE)
    assert reply.server_duid == SERVER and reply.client_duid == CLIENT
    ia = _ia(reply)
    (given,) = ia.addresses
    assert given.address in _link().pools[0]
    assert (given.preferred, given.valid) == (3000, 4000)
    assert (ia.t1, ia.t2) == (1500, 2400)  # RFC 8415 §21.4: 0.5 and 0.8 of preferred
    # what was asked for, in the client's order; 59 is not on the link
    assert [o.code for o in reply.options][-2:] == [24, 23]
    assert reply.first(RawOption) == RawOption(24, DOMAINS)


def test_the_request_after_it_gets_the_same_address_and_commits_it():
    advertised = _only_address(_decide(_msg(p.SOLICIT, IaNa(1, 0, 0))).reply)
    decision = _decide(_msg(p.REQUEST, IaNa(1, 0, 0, (IaAddress(advertised, 0, 0),)),
                            server=SERVER))
    reply = decision.reply
    assert reply is not None and reply.msg_type == p.REPLY
    assert _only_address(reply) == advertised
    assert decision.changes == (LeaseChange(ChangeKind.GRANT, IaType.NA, CLIENT, 1, advertised,
                                            128, "s-77-1", 3000, 4000),)


def test_without_the_hint_the_request_lands_on_the_same_address_too():
    # positions are hashed from (DUID, IAID): no hold is needed between Advertise and Request
    advertised = _only_address(_decide(_msg(p.SOLICIT, IaNa(9, 0, 0))).reply)
    decision = _decide(_msg(p.REQUEST, IaNa(9, 0, 0), server=SERVER))
    assert _only_address(decision.reply) == advertised


def test_rapid_commit_answers_a_solicit_with_a_committed_reply():
    decision = _decide(_msg(p.SOLICIT, RapidCommit(), IaNa(1, 0, 0)))
    assert decision.reply is not None and decision.reply.msg_type == p.REPLY
    assert decision.reply.rapid_commit
    assert [c.kind for c in decision.changes] == [ChangeKind.GRANT]
    # §18.3.1: only if the server is configured to; otherwise the usual Advertise
    refused = _decide(_msg(p.SOLICIT, RapidCommit(), IaNa(1, 0, 0)), _link(rapid_commit=False))
    assert refused.reply is not None and refused.reply.msg_type == p.ADVERTISE
    assert not refused.reply.rapid_commit and refused.changes == ()


def test_a_reservation_gives_the_reserved_address_and_keeps_it_from_others():
    reserved = A("2001:db8:77:1::100")
    link = _link(pools=(Pool6(reserved, A("2001:db8:77:1::101")),),
                 reservations=(Reservation6(CLIENT, address=reserved),))
    assert _only_address(_decide(_msg(p.SOLICIT, IaNa(1, 0, 0)), link).reply) == reserved
    others = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0), duid=OTHER), link).reply
    assert _only_address(others) == A("2001:db8:77:1::101")
    # even asked for by name, another client's reserved address is not given
    asked = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0, (IaAddress(reserved, 0, 0),)), duid=OTHER),
                    link).reply
    assert _only_address(asked) == A("2001:db8:77:1::101")


def test_an_exhausted_pool_says_no_addrs_avail_in_the_ia():
    link = _link(pools=(Pool6(A("2001:db8:77:1::100"), A("2001:db8:77:1::100")),))
    taken = _bound("2001:db8:77:1::100", duid=OTHER)
    for msg_type, server in ((p.SOLICIT, None), (p.REQUEST, SERVER)):
        decision = _decide(_msg(msg_type, IaNa(4, 0, 0), server=server), link, taken)
        assert decision.reply is not None and decision.changes == ()
        ia = _ia(decision.reply)
        assert (ia.t1, ia.t2, ia.addresses) == (0, 0, [])
        assert ia.status == StatusCode(p.STATUS_NO_ADDRS_AVAIL, "no addresses available")


def test_excluded_and_declined_addresses_are_skipped():
    pool = Pool6(A("2001:db8:77:1::100"), A("2001:db8:77:1::102"))
    link = _link(pools=(pool,), excludes=(Pool6(A("2001:db8:77:1::100"),
                                                A("2001:db8:77:1::100")),))
    declined = _bound("2001:db8:77:1::101", duid=OTHER, state="declined")
    reply = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0)), link, declined).reply
    assert _only_address(reply) == A("2001:db8:77:1::102")
    full = _link(pools=(Pool6(A("2001:db8:77:1::100"), A("2001:db8:77:1::101")),),
                 excludes=link.excludes)
    reply = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0)), full, declined).reply
    assert _ia(reply).addresses == [] and _ia(reply).status is not None


def test_a_hint_in_a_pool_is_honoured_and_one_outside_is_not():
    hint = A("2001:db8:77:1::1aa")
    reply = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0, (IaAddress(hint, 0, 0),)))).reply
    assert _only_address(reply) == hint
    outside = A("2001:db8:77:1::9")
    reply = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0, (IaAddress(outside, 0, 0),)))).reply
    assert _only_address(reply) != outside


def test_two_ias_of_one_client_get_two_addresses():
    link = _link(pools=(Pool6(A("2001:db8:77:1::100"), A("2001:db8:77:1::101")),))
    decision = _decide(_msg(p.REQUEST, IaNa(1, 0, 0), IaNa(2, 0, 0), server=SERVER), link)
    assert decision.reply is not None
    assert {_only_address(decision.reply, 0), _only_address(decision.reply, 1)} == {
        A("2001:db8:77:1::100"), A("2001:db8:77:1::101")}
    assert [c.iaid for c in decision.changes] == [1, 2]


def test_a_slash_64_pool_is_probed_not_enumerated():
    link = _link(pools=(Pool6(A("2001:db8:77:1::"), A("2001:db8:77:1:ffff:ffff:ffff:ffff")),))
    reply = _decide(_msg(p.SOLICIT, IaNa(1, 0, 0)), link).reply
    assert _only_address(reply) in link.network


def test_a_request_moves_a_client_to_its_new_reservation_and_retires_the_old_address():
    old, new = A("2001:db8:77:1::150"), A("2001:db8:77:1::1f0")
    link = _link(reservations=(Reservation6(CLIENT, address=new),))
    decision = _decide(_msg(p.REQUEST, IaNa(1, 0, 0, (IaAddress(old, 0, 0),)), server=SERVER),
                       link, _bound(str(old)))
    ia = _ia(decision.reply)
    assert [(a.address, a.valid) for a in ia.addresses] == [(new, 4000), (old, 0)]
    assert [(c.kind, c.address) for c in decision.changes] == [(ChangeKind.GRANT, new)]


def test_requesting_what_it_holds_renews_it():
    held = A("2001:db8:77:1::150")
    decision = _decide(_msg(p.REQUEST, IaNa(1, 0, 0), server=SERVER), None, _bound(str(held)))
    assert [(c.kind, c.address) for c in decision.changes] == [(ChangeKind.RENEW, held)]


# --------------------------------------------------------------------------- prefix delegation


def test_a_delegated_prefix_from_the_delegation_pool():
    decision = _decide(_msg(p.REQUEST, IaPd(7, 0, 0, (IaPrefix(0, 0, 56, A("::")),)),
                            server=SERVER))
    reply = decision.reply
    assert reply is not None
    (pd,) = reply.ia_pds
    (prefix,) = pd.prefixes
    assert prefix.prefix_length == 56 and prefix.network.subnet_of(N("2001:db8:4400::/48"))
    assert (prefix.preferred, prefix.valid, pd.t1, pd.t2) == (3000, 4000, 1500, 2400)
    (change,) = decision.changes
    assert (change.kind, change.ia_type, change.iaid, change.prefix_length) == (
        ChangeKind.GRANT, IaType.PD, 7, 56)
    assert change.address == prefix.prefix


def test_a_reserved_prefix_and_an_exhausted_delegation_pool():
    mine = N("2001:db8:4400:ab00::/56")
    link = _link(reservations=(Reservation6(CLIENT, prefix=mine),))
    reply = _decide(_msg(p.SOLICIT, IaPd(1, 0, 0)), link).reply
    assert reply is not None and reply.ia_pds[0].prefixes[0].network == mine
    small = _link(pd_pools=(PdPool(N("2001:db8:4400::/56"), 56),))
    taken = _bound("2001:db8:4400::", duid=OTHER, ia_type=IaType.PD, length=56)
    reply = _decide(_msg(p.SOLICIT, IaPd(1, 0, 0)), small, taken).reply
    assert reply is not None
    assert reply.ia_pds[0].status == StatusCode(p.STATUS_NO_PREFIX_AVAIL, "no prefixes available")


def test_a_prefix_hint_inside_the_pool_is_honoured():
    hint = N("2001:db8:4400:1200::/56")
    reply = _decide(_msg(p.SOLICIT, IaPd(1, 0, 0, (IaPrefix(0, 0, 56, hint.network_address),))))
    assert reply.reply is not None and reply.reply.ia_pds[0].prefixes[0].network == hint


# --------------------------------------------------------------------------- Renew, Rebind


def test_renew_extends_the_binding_and_zeroes_what_it_does_not_hold():
    held, stray = A("2001:db8:77:1::150"), A("2001:db8:77:1::151")
    message = _msg(p.RENEW, IaNa(1, 0, 0, (IaAddress(held, 0, 0), IaAddress(stray, 0, 0))),
                   server=SERVER)
    decision = _decide(message, None, _bound(str(held)))
    ia = _ia(decision.reply)
    assert [(a.address, a.preferred, a.valid) for a in ia.addresses] == [
        (held, 3000, 4000), (stray, 0, 0)]
    assert [(c.kind, c.address, c.valid) for c in decision.changes] == [
        (ChangeKind.RENEW, held, 4000)]


def test_renew_of_an_ia_never_bound_gets_no_binding():
    # Authoritative: RFC 8415 §18.3.4 NoBinding, nothing created.
    message = _msg(p.RENEW, IaNa(1, 0, 0, (IaAddress(A("2001:db8:77:1::150"), 0, 0),)),
                   server=SERVER)
    decision = _decide(message)
    assert decision.changes == ()
    assert _ia(decision.reply).status == StatusCode(p.STATUS_NO_BINDING, "no binding for this IA")
    # the binding is looked for first: off-link addresses without one are NoBinding too
    elsewhere = _msg(p.RENEW, IaNa(1, 0, 0, (IaAddress(A("2001:db8:99::5"), 0, 0),)),
                     server=SERVER)
    ia = _ia(_decide(elsewhere).reply)
    assert ia.addresses == [] and ia.status is not None
    assert ia.status.status == p.STATUS_NO_BINDING


def test_rebind_extends_or_zeroes_or_says_no_binding():
    held = A("2001:db8:77:1::150")
    bound = _decide(_msg(p.REBIND, IaNa(1, 0, 0, (IaAddress(held, 0, 0),))), None,
                    _bound(str(held)))
    assert [c.kind for c in bound.changes] == [ChangeKind.RENEW]
    elsewhere = A("2001:db8:99::5")  # §18.3.5: off the link, lifetimes 0
    moved = _decide(_msg(p.REBIND, IaNa(1, 0, 0, (IaAddress(elsewhere, 0, 0),))))
    assert [(a.address, a.valid) for a in _ia(moved.reply).addresses] == [(elsewhere, 0)]
    unknown = _decide(_msg(p.REBIND, IaNa(1, 0, 0, (IaAddress(held, 0, 0),))))
    assert _ia(unknown.reply).status is not None
    assert _ia(unknown.reply).status.status == p.STATUS_NO_BINDING


def test_renew_of_a_delegated_prefix():
    held = _bound("2001:db8:4400:1200::", ia_type=IaType.PD, length=56)
    message = _msg(p.RENEW, IaPd(1, 0, 0, (IaPrefix(0, 0, 56, held.address),)), server=SERVER)
    decision = _decide(message, None, held)
    assert [(c.kind, c.ia_type, c.prefix_length) for c in decision.changes] == [
        (ChangeKind.RENEW, IaType.PD, 56)]
    nothing = _decide(_msg(p.RENEW, IaPd(2, 0, 0), server=SERVER), None, held)
    assert nothing.reply is not None and nothing.reply.ia_pds[0].status is not None


# --------------------------------------------------------------------------- Release, Decline


def test_release_ends_the_listed_bindings_and_answers_success():
    held = A("2001:db8:77:1::150")
    message = _msg(p.RELEASE, IaNa(1, 0, 0, (IaAddress(held, 0, 0),)), IaNa(2, 0, 0),
                   server=SERVER)
    decision = _decide(message, None, _bound(str(held)))
    reply = decision.reply
    assert reply is not None
    assert reply.first(StatusCode) == StatusCode(p.STATUS_SUCCESS, "released")
    (nothing,) = reply.ia_nas  # §18.3.7: only IAs without a binding come back, NoBinding
    assert nothing.iaid == 2 and nothing.status is not None
    assert decision.changes == (LeaseChange(ChangeKind.RELEASE, IaType.NA, CLIENT, 1, held, 128,
                                            "s-77-1", 0, 0),)
    assert reply.first(DnsServers) is None and reply.first(RawOption) is None


def test_decline_declines_addresses_not_prefixes():
    held = A("2001:db8:77:1::150")
    prefix = _bound("2001:db8:4400:1200::", ia_type=IaType.PD, length=56)
    message = _msg(p.DECLINE, IaNa(1, 0, 0, (IaAddress(held, 0, 0),)),
                   IaPd(1, 0, 0, (IaPrefix(0, 0, 56, prefix.address),)), server=SERVER)
    decision = _decide(message, None, _bound(str(held)), prefix)
    assert [(c.kind, c.ia_type) for c in decision.changes] == [(ChangeKind.DECLINE, IaType.NA)]
    assert decision.reply is not None
    assert decision.reply.first(StatusCode) == StatusCode(p.STATUS_SUCCESS, "declined")


def test_releasing_another_clients_address_changes_nothing():
    theirs = A("2001:db8:77:1::150")
    message = _msg(p.RELEASE, IaNa(1, 0, 0, (IaAddress(theirs, 0, 0),)), server=SERVER)
    decision = _decide(message, None, _bound(str(theirs), duid=OTHER))
    assert decision.changes == () and _ia(decision.reply).status is not None


# --------------------------------------------------------------------------- Confirm, Information


def test_confirm_on_and_off_the_link():
    on = _msg(p.CONFIRM, IaNa(1, 0, 0, (IaAddress(A("2001:db8:77:1::150"), 0, 0),)))
    reply = _decide(on).reply
    assert reply is not None and reply.first(StatusCode).status == p.STATUS_SUCCESS
    assert reply.ia_nas == []
    off = _msg(p.CONFIRM, IaNa(1, 0, 0, (IaAddress(A("2001:db8:99::1"), 0, 0),)))
    assert _decide(off).reply.first(StatusCode).status == p.STATUS_NOT_ON_LINK
    assert _decide(_msg(p.CONFIRM, IaNa(1, 0, 0))).drop == "nothing_to_confirm"


def test_information_request_gets_what_it_asks_for():
    reply = _decide(_msg(p.INFORMATION_REQUEST, OptionRequest((23,)), duid=None)).reply
    assert reply is not None and reply.msg_type == p.REPLY
    assert reply.client_duid is None and reply.server_duid == SERVER
    assert reply.raw(23) == [DNS] and reply.raw(24) == []
    unknown_link = decide(_msg(p.INFORMATION_REQUEST, OptionRequest((23,))), None,
                          MemoryBindings(), SERVER, NOW)
    assert unknown_link.reply is not None and unknown_link.reply.raw(23) == []


# --------------------------------------------------------------------------- drops


def test_invalid_messages_and_unknown_links_are_dropped_with_a_reason():
    assert _decide(_msg(p.SOLICIT, IaNa(1, 0, 0), duid=None)).drop == "no_client_id"
    assert _decide(_msg(p.REQUEST, IaNa(1, 0, 0), server=OTHER)).drop == "not_for_us"
    lost = decide(_msg(p.SOLICIT, IaNa(1, 0, 0)), None, MemoryBindings(), SERVER, NOW)
    assert (lost.drop, lost.reply) == ("no_link", None)
    assert {"no_client_id", "not_for_us", "no_link", "nothing_to_confirm"} <= DROP_REASONS


# --------------------------------------------------------------------------- the plan


def test_the_plan_picks_the_most_specific_link():
    wide = _link(subnet_id="wide", network=N("2001:db8:77::/48"))
    narrow = _link(subnet_id="narrow")
    plan = Plan6((wide, narrow))
    assert plan.link_for(A("2001:db8:77:1::1")) is narrow
    assert plan.link_for(A("2001:db8:77:2::1")) is wide
    assert plan.link_for(A("2001:db8:99::1")) is None and plan.link_for(None) is None


def test_plan_values_refuse_nonsense():
    with pytest.raises(ValueError, match="preferred lifetime"):
        Lifetimes(preferred=10, valid=5)
    with pytest.raises(ValueError, match="ends before"):
        Pool6(A("::2"), A("::1"))
    with pytest.raises(ValueError, match="cannot delegate"):
        PdPool(N("2001:db8::/48"), 40)
    assert Lifetimes(preferred=100, valid=200, t1=90, t2=60).timers() == (60, 60)
    assert PdPool(N("2001:db8::/48"), 56).count == 256
    assert PdPool(N("2001:db8::/48"), 56).nth(255) == N("2001:db8:0:ff00::/56")


# --------------------------------------------------------------------------- end to end, pure


def test_a_relayed_solicit_through_codec_relay_and_engine():
    # What the server will do per packet: parse, unwrap, pick the link, decide, wrap.
    message = parse(DHCRELAY_FORWARD)
    relayed = unwrap(message)
    link = _link(subnet_id="s-77-1")
    plan = Plan6((link,))
    decision = decide(relayed.message, plan.link_for(relayed.link_address), MemoryBindings(),
                      SERVER, NOW)
    assert decision.reply is not None
    answer = parse(wrap(decision.reply, relayed.hops).to_bytes())
    assert isinstance(answer, RelayMessage) and answer.msg_type == p.RELAY_REPL
    inner = answer.relayed
    assert isinstance(inner, Message) and inner.msg_type == p.ADVERTISE
    assert inner.transaction_id == 0x5A0C11
    assert _only_address(inner) in link.pools[0]
    assert inner.raw(23) == [DNS] and inner.raw(24) == [DOMAINS]  # the client's ORO
