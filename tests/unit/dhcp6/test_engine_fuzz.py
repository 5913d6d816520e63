"""Property tests of the DHCPv6 decision: whatever a client sends, ``decide`` returns a drop or
a reply that encodes, and never hands out what is not its to hand out."""

from __future__ import annotations

from ipaddress import IPv6Address, IPv6Network

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.engine import DROP_REASONS, MAX_IAS, ChangeKind, decide
from ipamd.dhcp6.options import (
    ClientId,
    IaAddress,
    IaNa,
    IaPd,
    IaPrefix,
    Option,
    OptionRequest,
    RapidCommit,
    ServerId,
)
from ipamd.dhcp6.plan import Binding, IaType, Lifetimes, Link, PdPool, Pool6, Reservation6
from tests.unit.dhcp6.bindings import MemoryBindings
from tests.unit.dhcp6.test_codec_fuzz import OPTION_VALUES

FUZZ = settings(max_examples=1000, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SERVER = Duid.en(2495, b"server")
CLIENTS = [Duid.ll(bytes((2, 0, 0, 0, 0, n))) for n in range(1, 5)]
NOW = 1_800_000_000.0
NET = IPv6Network("2001:db8:77:1::/64")
POOL = Pool6(IPv6Address("2001:db8:77:1::100"), IPv6Address("2001:db8:77:1::107"))
EXCLUDED = IPv6Address("2001:db8:77:1::103")
PD = PdPool(IPv6Network("2001:db8:4400::/62"), 64)  # four /64s
LINK = Link("s1", NET, Lifetimes(300, 600), (POOL,), (PD,),
            excludes=(Pool6(EXCLUDED, EXCLUDED),),
            reservations=(Reservation6(CLIENTS[0], address=IPv6Address("2001:db8:77:1::105"),
                                       prefix=IPv6Network("2001:db8:4400:2::/64")),),
            options={23: IPv6Address("2001:db8::53").packed})

_near = st.one_of(st.integers(0x100, 0x10A).map(lambda n: IPv6Address(int(POOL.first) - 0x100 + n)),
                  st.integers(0, (1 << 128) - 1).map(IPv6Address))
_prefix_hint = st.one_of(st.integers(0, 5).map(lambda n: PD.nth(n % PD.count).network_address),
                         st.just(IPv6Address(0)),
                         st.integers(0, (1 << 128) - 1).map(IPv6Address))
_ia_na = st.builds(IaNa, st.integers(0, 3), st.integers(0, 10), st.integers(0, 10),
                   st.lists(st.builds(IaAddress, _near, st.integers(0, 9), st.integers(0, 9)),
                            max_size=3).map(tuple))
_ia_pd = st.builds(IaPd, st.integers(0, 3), st.just(0), st.just(0),
                   st.lists(st.builds(IaPrefix, st.just(0), st.just(0), st.integers(0, 128),
                                      _prefix_hint), max_size=2).map(tuple))
_duid = st.one_of(st.just(SERVER), st.just(SERVER), st.sampled_from(CLIENTS))
_binding = st.one_of(
    st.builds(lambda d, i, n, s: Binding(IaType.NA, d, i, POOL.nth(n), 128, s, NOW + 60),
              st.sampled_from(CLIENTS), st.integers(0, 3), st.integers(0, POOL.size - 1),
              st.sampled_from(("active", "active", "declined"))),
    st.builds(lambda d, i, n: Binding(IaType.PD, d, i, PD.nth(n).network_address, 64,
                                      "active", NOW + 60),
              st.sampled_from(CLIENTS), st.integers(0, 3), st.integers(0, PD.count - 1)),
)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    msg_type = draw(st.one_of(st.sampled_from(sorted(p.CLIENT_TYPES)), st.integers(1, 13),
                              st.sampled_from(sorted(p.CLIENT_TYPES))))
    options: list[Option] = []
    if draw(st.integers(0, 9)):
        options.append(ClientId(draw(st.sampled_from(CLIENTS))))
    # mostly what RFC 8415 §16 asks of the type, sometimes not
    wants_server = msg_type in (p.REQUEST, p.RENEW, p.RELEASE, p.DECLINE)
    if wants_server == bool(draw(st.integers(0, 6))):
        options.append(ServerId(draw(_duid)))
    options += draw(st.lists(st.one_of(_ia_na, _ia_pd), max_size=4))
    if draw(st.booleans()):
        options.append(RapidCommit())
    if draw(st.booleans()):
        options.append(OptionRequest((23, 24)))
    options += draw(st.lists(OPTION_VALUES, max_size=2))  # anything else a client may add
    return Message(msg_type, draw(st.integers(0, (1 << 24) - 1)), options)


@FUZZ
@given(_message(), st.lists(_binding, max_size=8))
def test_decide_answers_or_drops_and_never_gives_away_what_is_held(
        message: Message, rows: list[Binding]) -> None:
    # one live binding per address, as the lease store's unique index keeps it
    unique: dict[IPv6Network, Binding] = {}
    for row in rows:
        unique.setdefault(row.prefix, row)
    rows = list(unique.values())
    decision = decide(message, LINK, MemoryBindings(*rows), SERVER, NOW)
    if decision.reply is None:
        assert decision.drop in DROP_REASONS and decision.changes == ()
        event(f"drop:{decision.drop}")
        return
    event(f"reply:{decision.reply.msg_type}")
    event("changes" if decision.changes else "no changes")
    wire = decision.reply.to_bytes()
    assert len(wire) < 65_000 and parse(wire).to_bytes() == wire
    if decision.changes:
        assert decision.reply.msg_type == p.REPLY
    duid = message.client_duid
    held = {r.prefix: r for r in rows}
    for change in decision.changes:
        assert change.duid == duid
        prefix = IPv6Network((change.address, change.prefix_length))
        holder = held.get(prefix)
        if change.kind is ChangeKind.GRANT:
            assert holder is None or (holder.duid, holder.iaid) == (duid, change.iaid)
            assert change.address != EXCLUDED
            if change.ia_type is IaType.NA:
                assert change.address in POOL or change.address == LINK.reservations[0].address
                assert duid == CLIENTS[0] or change.address != LINK.reservations[0].address
            else:
                assert PD.holds(prefix)
        else:  # renew, release, decline: only the client's own bindings
            assert holder is not None and holder.duid == duid and holder.iaid == change.iaid
    grants = [(c.address, c.prefix_length) for c in decision.changes]
    assert len(grants) == len(set(grants))


def test_too_many_ias_is_dropped() -> None:
    message = Message(p.SOLICIT, 1, [ClientId(CLIENTS[1]),
                                     *(IaNa(n, 0, 0) for n in range(MAX_IAS + 1))])
    assert decide(message, LINK, MemoryBindings(), SERVER, NOW).drop == "too_many_ias"
    message.options.pop()
    assert decide(message, LINK, MemoryBindings(), SERVER, NOW).reply is not None


def test_two_ias_with_one_iaid_are_dropped() -> None:
    # RFC 8415 §12: an IAID is unique among a client's IAs of one type; IA_NA 1 and IA_PD 1
    # are two different IAs.
    twice = Message(p.REQUEST, 1, [ClientId(CLIENTS[1]), ServerId(SERVER), IaNa(1, 0, 0),
                                   IaNa(1, 0, 0)])
    assert decide(twice, LINK, MemoryBindings(), SERVER, NOW).drop == "duplicate_iaid"
    both = Message(p.REQUEST, 1, [ClientId(CLIENTS[1]), ServerId(SERVER), IaNa(1, 0, 0),
                                  IaPd(1, 0, 0)])
    assert decide(both, LINK, MemoryBindings(), SERVER, NOW).reply is not None
