"""Property tests of the DHCPv6 codec, as tests/unit/test_dhcp_codec_fuzz.py does for DHCPv4.

- Whatever octets arrive, ``parse`` (and the relay unwrapping and accessors after it) fails
  with nothing but ``Malformed``.
- Whatever parses builds back to the very same octets (unknown options re-emitted as-is).
- Every message built from generated option values parses back equal, relays nested to
  the deepest a hop-count allows included.
"""

from __future__ import annotations

import struct
from ipaddress import IPv6Address

from hypothesis import event, given, settings
from hypothesis import strategies as st

from ipamd.dhcp6 import options as o
from ipamd.dhcp6 import relay as relay_chain
from ipamd.dhcp6.codec import Message, RelayMessage, RelayMsg, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.protocol import MAX_RELAY_DEPTH, REASONS, Malformed
from tests.support.fuzz import FUZZ, mutated
from tests.unit.dhcp6.wire import (
    DHCLIENT_SOLICIT,
    DHCRELAY_FORWARD,
    PERFDHCP_FORWARD,
    client,
    ia,
    iaaddr,
    iaprefix,
    opt,
    relay,
)

FUZZ_HEAVY = settings(FUZZ, max_examples=700)
FUZZ_CHAINS = settings(FUZZ, max_examples=250)  # up to nine generated messages each

ACCESSORS = ("client_duid", "server_duid", "ia_nas", "ia_pds", "requested_codes",
             "rapid_commit", "elapsed_hundredths", "type_name")


def _exercise(data: bytes) -> None:
    """Parse, unwrap, read; only Malformed may escape, and what parses rebuilds exactly."""
    try:
        message = parse(data)
    except Malformed as error:
        assert error.reason in REASONS
        event(f"drop:{error.reason}")  # --hypothesis-show-statistics shows the coverage
        return
    event("parsed")
    assert message.to_bytes() == data
    repr(message)
    try:
        inner = relay_chain.unwrap(message).message
    except Malformed as error:
        event(f"unwrap:{error.reason}")
        return
    for name in ACCESSORS:
        getattr(inner, name)


SEEDS = [
    DHCLIENT_SOLICIT,
    DHCRELAY_FORWARD,
    PERFDHCP_FORWARD,
    relay(12, 1, "2001:db8::1", "2001:db8:1::1", opt(18, b"if7"), opt(37, b"\0\0\x11\x8bR1"),
          opt(9, relay(12, 0, "::", "fe80::1", opt(79, b"\0\x01" + bytes(6)),
                       opt(9, DHCLIENT_SOLICIT)))),
    client(3, 77, opt(1, b"\0\x03\0\x01" + bytes(6)), opt(2, b"\0\x02\0\0\x09\xbfabc"),
           opt(3, ia(1, 0, 0, opt(5, iaaddr("2001:db8::9", 0, 0, opt(13, b"\0\0ok"))))),
           opt(25, ia(2, 0, 0, opt(26, iaprefix("2001:db8:100::", 56, 0, 0)))),
           opt(39, b"\x01\x04host\x07example\0"), opt(15, b"\0\x04iPXE"),
           opt(16, b"\0\0\x017\0\x08MSFT 5.0"), opt(56, opt(1, bytes(16)))),
]


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes(data: bytes) -> None:
    _exercise(data)
    if data:  # and as a message of each known type, past the first check
        _exercise(bytes((1 + data[0] % 13,)) + data[1:])


@FUZZ
@given(st.integers(0, 20), st.binary(max_size=3), st.binary(max_size=400))
def test_valid_header_random_options(msg_type: int, xid: bytes, tail: bytes) -> None:
    _exercise(bytes((msg_type,)) + xid.rjust(3, b"\0") + tail)


@FUZZ
@given(st.integers(0, 12), st.binary(min_size=32, max_size=32), st.binary(max_size=300))
def test_relay_header_random_options(hops: int, addresses: bytes, tail: bytes) -> None:
    _exercise(bytes((12, hops)) + addresses + tail)
    _exercise(bytes((12, hops)) + addresses + opt(9, tail))


# Codes with decoders drawn often; the rest arbitrary.
_CODES = st.one_of(st.sampled_from([*sorted(o.MESSAGE_OPTIONS), 5, 9, 26]),
                   st.integers(0, 0xFFFF))


@st.composite
def _option_area(draw: st.DrawFn, max_options: int, depth: int = 0) -> bytes:
    """Mostly well-framed options, some with lying lengths, nested ones built the same way."""
    out = bytearray()
    for _ in range(draw(st.integers(0, max_options))):
        code = draw(_CODES)
        if code in (3, 25) and depth < 2:
            value = draw(st.binary(min_size=12, max_size=12)) + draw(_option_area(3, depth + 1))
        elif code in (5, 26) and depth < 3:
            value = draw(st.binary(min_size=24, max_size=25)) + draw(_option_area(2, depth + 1))
        elif code == 9 and depth < 2:
            value = draw(st.sampled_from(SEEDS))
        else:
            value = draw(st.binary(max_size=40))
        length = len(value) if draw(st.integers(0, 9)) else draw(st.integers(0, 0xFFFF))
        out += struct.pack("!HH", code, length) + value
    if draw(st.booleans()):
        out += draw(st.binary(max_size=6))
    return bytes(out)


@FUZZ_HEAVY
@given(_option_area(10), st.sampled_from((1, 3, 7, 11, 12, 13)))
def test_structured_options(area: bytes, msg_type: int) -> None:
    if msg_type in (12, 13):
        _exercise(relay(msg_type, 0, "2001:db8::1", "fe80::1", area))
    else:
        _exercise(client(msg_type, 0x123456, area))


@FUZZ
@given(mutated(SEEDS, (0, 1, 3, 5, 9, 12, 13, 25, 26, 0x3F, 0xC0, 255)))
def test_mutated_valid_packets(data: bytes) -> None:
    _exercise(data)


def test_seeds_are_valid() -> None:
    for seed in SEEDS:
        message = parse(seed)
        assert message.to_bytes() == seed
        relay_chain.unwrap(message)


# --------------------------------------------------------------------------- generated values

_u8 = st.integers(0, 0xFF)
_u16 = st.integers(0, 0xFFFF)
_u32 = st.integers(0, 0xFFFFFFFF)
_address = st.integers(0, (1 << 128) - 1).map(IPv6Address)
_duid = st.one_of(
    st.builds(lambda hw, t, ll: Duid.llt(ll, t, hw), _u16, _u32, st.binary(min_size=1, max_size=20)),
    st.builds(Duid.en, _u32, st.binary(min_size=1, max_size=30)),
    st.builds(lambda hw, ll: Duid.ll(ll, hw), _u16, st.binary(min_size=1, max_size=20)),
    st.binary(min_size=16, max_size=16).map(lambda raw: Duid(b"\x00\x04" + raw)),
    st.tuples(st.integers(5, 0xFFFF), st.binary(min_size=1, max_size=60))
    .map(lambda kv: Duid(kv[0].to_bytes(2, "big") + kv[1])),
)
_labels = st.lists(st.binary(min_size=1, max_size=20), max_size=5).map(tuple)
_status = st.builds(o.StatusCode, _u16, st.text(max_size=20))


def _raw(exclude: set[int]) -> st.SearchStrategy[o.RawOption]:
    return st.builds(o.RawOption, _u16.filter(lambda c: c not in exclude),
                     st.binary(max_size=30))


_leaf = st.lists(st.one_of(_status, _raw(set(o.LEAF_OPTIONS))), max_size=2).map(tuple)
_ia_address = st.builds(o.IaAddress, _address, _u32, _u32, _leaf)
_ia_prefix = st.builds(o.IaPrefix, _u32, _u32, st.integers(0, 128), _address, _leaf)
_ia_na = st.builds(o.IaNa, _u32, _u32, _u32, st.lists(
    st.one_of(_ia_address, _status, _raw(set(o.IA_NA_OPTIONS))), max_size=3).map(tuple))
_ia_pd = st.builds(o.IaPd, _u32, _u32, _u32, st.lists(
    st.one_of(_ia_prefix, _status, _raw(set(o.IA_PD_OPTIONS))), max_size=3).map(tuple))
_ntp_sub = st.one_of(
    st.tuples(st.sampled_from((1, 2)), st.binary(min_size=16, max_size=16)),
    _labels.map(lambda labels: (3, b"".join(bytes((len(x),)) + x for x in labels) + b"\0")),
    st.tuples(st.integers(4, 0xFFFF), st.binary(max_size=10)),
)
_fqdn = st.builds(o.ClientFqdn, _u8, _labels, st.booleans())

OPTION_VALUES = st.one_of(
    st.builds(o.ClientId, _duid), st.builds(o.ServerId, _duid), _ia_na, _ia_pd,
    st.builds(o.OptionRequest, st.lists(_u16, max_size=6).map(tuple)),
    st.builds(o.Preference, _u8), st.builds(o.ElapsedTime, _u16), _status,
    st.just(o.RapidCommit()), st.just(o.ReconfigureAccept()),
    st.builds(o.UserClass, st.lists(st.binary(max_size=10), max_size=3).map(tuple)),
    st.builds(o.VendorClass, _u32, st.lists(st.binary(max_size=10), max_size=3).map(tuple)),
    st.builds(o.VendorOpts, _u32, st.binary(max_size=20)),
    st.builds(o.InterfaceId, st.binary(max_size=20)),
    st.builds(o.DnsServers, st.lists(_address, max_size=3).map(tuple)),
    st.builds(o.DomainList, st.lists(_labels.filter(bool), max_size=3).map(tuple)),
    st.builds(o.RemoteId, _u32, st.binary(min_size=1, max_size=20)),
    st.builds(o.SubscriberId, st.binary(min_size=1, max_size=20)),
    # an empty partial name is the flags alone: the same option as ClientFqdn(flags)
    _fqdn.map(lambda f: f if f.labels or f.absolute else o.ClientFqdn(f.flags)),
    st.builds(o.NtpServer, st.lists(_ntp_sub, max_size=3).map(tuple)),
    st.builds(o.BootfileUrl, st.text(st.characters(max_codepoint=127), max_size=40)),
    st.builds(o.ClientLinkLayer, _u16, st.binary(min_size=1, max_size=20)),
    st.builds(o.SolMaxRt, _u32),
    _raw(set(o.MESSAGE_OPTIONS) | {9}),
)
_messages = st.builds(Message, st.integers(1, 11), st.integers(0, (1 << 24) - 1),
                      st.lists(OPTION_VALUES, max_size=8))
_relay_options = st.lists(st.one_of(
    st.builds(o.InterfaceId, st.binary(max_size=12)),
    st.builds(o.RemoteId, _u32, st.binary(min_size=1, max_size=12)),
    st.builds(o.SubscriberId, st.binary(min_size=1, max_size=12)),
    st.builds(o.ClientLinkLayer, _u16, st.binary(min_size=1, max_size=8)),
    _raw(set(o.MESSAGE_OPTIONS) | {9}),
), max_size=3)


@st.composite
def _relayed(draw: st.DrawFn) -> Message | RelayMessage:
    """A client message inside 0..MAX_RELAY_DEPTH Relay-forwards (or -replies)."""
    message: Message | RelayMessage = draw(_messages)
    kind = draw(st.sampled_from((12, 13)))
    for hops in range(draw(st.integers(0, MAX_RELAY_DEPTH))):
        options: list[o.Option] = draw(_relay_options)
        options.insert(draw(st.integers(0, len(options))), RelayMsg(message))
        message = RelayMessage(kind, hops, draw(_address), draw(_address), options)
    return message


def _round_trip(message: Message | RelayMessage) -> None:
    wire = message.to_bytes()
    assert parse(wire) == message
    assert parse(wire).to_bytes() == wire


@FUZZ_HEAVY
@given(_messages)
def test_generated_messages_round_trip(message: Message) -> None:
    _round_trip(message)


@FUZZ_CHAINS
@given(_relayed())
def test_generated_relay_chains_round_trip(message: Message | RelayMessage) -> None:
    _round_trip(message)


@FUZZ_CHAINS
@given(_relayed())
def test_a_forward_chain_unwraps_and_its_reply_wraps_hop_for_hop(
        message: Message | RelayMessage) -> None:
    forwards: list[RelayMessage] = []
    current: Message | RelayMessage | None = message
    while isinstance(current, RelayMessage):
        forwards.append(current)
        current = current.relayed
    if forwards and forwards[0].msg_type == 13:
        return  # a Relay-reply chain: test_relay.py shows unwrap refusing it
    unwrapped = relay_chain.unwrap(parse(message.to_bytes()))
    assert unwrapped.message == current
    assert [(h.hop_count, h.link_address, h.peer_address) for h in unwrapped.hops] == [
        (f.hop_count, f.link_address, f.peer_address) for f in forwards]
    answer = parse(relay_chain.wrap(Message(7, 1), unwrapped.hops).to_bytes())
    for forward in forwards:
        assert isinstance(answer, RelayMessage) and answer.msg_type == 13
        assert (answer.hop_count, answer.link_address, answer.peer_address) == (
            forward.hop_count, forward.link_address, forward.peer_address)
        assert answer.interface_id == forward.interface_id  # RFC 8415 §19.3: echoed
        assert {opt.code for opt in answer.options} <= {9, 18}
        answer = answer.relayed
    assert answer == Message(7, 1)


@FUZZ_CHAINS
@given(_relayed())
def test_one_relay_more_than_the_limit_is_refused(message: Message | RelayMessage) -> None:
    depth = 0
    current: Message | RelayMessage | None = message
    while isinstance(current, RelayMessage):
        depth, current = depth + 1, current.relayed
    wrapped = message
    for hops in range(MAX_RELAY_DEPTH + 1 - depth):
        wrapped = RelayMessage(12, hops, IPv6Address(1), IPv6Address(2), [RelayMsg(wrapped)])
    try:
        parse(wrapped.to_bytes())
    except Malformed as error:
        assert error.reason == "relay_too_deep"
    else:
        raise AssertionError("a chain of ten relay messages parsed")
