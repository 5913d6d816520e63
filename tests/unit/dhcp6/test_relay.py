"""dhcp6.relay: Relay-forward chains unwrapped, Relay-replies built (RFC 8415 §19)."""

from __future__ import annotations

from ipaddress import IPv6Address

import pytest

from ipamd.dhcp6 import options as o
from ipamd.dhcp6.codec import Message, RelayMessage, parse
from ipamd.dhcp6.protocol import Malformed
from ipamd.dhcp6.relay import RelayHop, unwrap, wrap, wrap_bytes
from tests.unit.dhcp6.wire import (
    DHCLIENT_SOLICIT,
    DHCRELAY_FORWARD,
    DUID_EN,
    MAC,
    PERFDHCP_FORWARD,
    PERFDHCP_SOLICIT,
    client,
    opt,
    relay,
)

REPLY = client(7, 0x5A0C11, opt(2, DUID_EN))


def _reply() -> Message:
    message = parse(REPLY)
    assert isinstance(message, Message)
    return message


def test_a_message_not_relayed_has_no_hops():
    relayed = unwrap(parse(DHCLIENT_SOLICIT))
    assert relayed.message == parse(DHCLIENT_SOLICIT) and relayed.hops == ()
    assert not relayed.relayed
    assert relayed.link_address is None and relayed.peer_address is None
    assert wrap(_reply(), relayed.hops) == _reply()


def test_dhcrelay_one_hop_names_the_link_and_the_client():
    relayed = unwrap(parse(DHCRELAY_FORWARD))
    assert relayed.message == parse(DHCLIENT_SOLICIT)
    (hop,) = relayed.hops
    assert hop == RelayHop(0, IPv6Address("2001:db8:77:1::1"), IPv6Address("fe80::5eff:fe10:1"))
    assert relayed.link_address == IPv6Address("2001:db8:77:1::1")
    assert relayed.peer_address == IPv6Address("fe80::5eff:fe10:1")
    assert relayed.client_link_layer is None  # dhcrelay -6 sends no option 79
    # RFC 8415 §19.3: a Relay-reply with the forward's hop-count, link- and peer-address.
    expected = relay(13, 0, "2001:db8:77:1::1", "fe80::5eff:fe10:1", opt(9, REPLY))
    assert wrap(_reply(), relayed.hops).to_bytes() == expected


def test_perfdhcp_a1_is_its_own_link_and_peer():
    relayed = unwrap(parse(PERFDHCP_FORWARD))
    assert relayed.message == parse(PERFDHCP_SOLICIT)
    assert relayed.link_address == relayed.peer_address == IPv6Address("2001:db8:77::2")


def _two_relays() -> bytes:
    # A relay on the client's link (Interface-Id, option 79, remote-id, subscriber-id),
    # then an aggregation relay with its own Interface-Id and remote-id.
    first = relay(12, 0, "2001:db8:77:1::1", "fe80::5eff:fe10:1",
                  opt(18, b"access-7"), opt(79, b"\x00\x01" + MAC),
                  opt(37, (4491).to_bytes(4, "big") + b"line-7"), opt(38, b"cust-42"),
                  opt(9, DHCLIENT_SOLICIT))
    return relay(12, 1, "2001:db8:77::1", "2001:db8:77:1::1", opt(37, bytes(3) + b"\x09agg"),
                 opt(9, first), opt(18, b"uplink-2"))


def test_two_relays_outermost_first_and_the_innermost_facts_win():
    relayed = unwrap(parse(_two_relays()))
    outer, inner = relayed.hops
    assert (outer.hop_count, inner.hop_count) == (1, 0)
    assert relayed.interface_ids == [b"uplink-2", b"access-7"]
    assert relayed.link_address == IPv6Address("2001:db8:77:1::1")  # the client's link
    assert relayed.peer_address == IPv6Address("fe80::5eff:fe10:1")
    assert relayed.remote_id == o.RemoteId(4491, b"line-7")
    assert relayed.subscriber_id == b"cust-42"
    link_layer = relayed.client_link_layer
    assert link_layer is not None and link_layer.mac == MAC.hex(":")


def test_the_reply_echoes_each_interface_id_at_its_level_and_nothing_else():
    answer = parse(wrap(_reply(), unwrap(parse(_two_relays())).hops).to_bytes())
    expected = relay(
        13, 1, "2001:db8:77::1", "2001:db8:77:1::1", opt(18, b"uplink-2"),
        opt(9, relay(13, 0, "2001:db8:77:1::1", "fe80::5eff:fe10:1", opt(18, b"access-7"),
                     opt(9, REPLY))))
    assert answer.to_bytes() == expected


@pytest.mark.parametrize("forward", [PERFDHCP_FORWARD, DHCRELAY_FORWARD, "two relays"])
def test_wrap_bytes_writes_what_wrap_builds(forward: bytes | str):
    # The server sends wrap_bytes' octets; they must be wrap()'s, hop for hop.
    data = _two_relays() if forward == "two relays" else forward
    assert isinstance(data, bytes)
    hops = unwrap(parse(data)).hops
    assert wrap_bytes(REPLY, hops) == wrap(_reply(), hops).to_bytes()
    assert wrap_bytes(REPLY, ()) == REPLY


def test_wrap_bytes_refuses_an_answer_too_long_for_its_relay_message_option():
    hops = unwrap(parse(PERFDHCP_FORWARD)).hops
    with pytest.raises(ValueError, match="at most 65535"):
        wrap_bytes(bytes(65_536), hops)


def test_a_lightweight_relay_leaves_the_link_to_the_next_one():
    # RFC 6221 §5.1: an LDRA sets link-address to the unspecified address.
    ldra = relay(12, 0, "::", "fe80::5eff:fe10:1", opt(18, b"port-3"), opt(9, DHCLIENT_SOLICIT))
    packet = relay(12, 1, "2001:db8:77:1::1", "fe80::1", opt(9, ldra))
    relayed = unwrap(parse(packet))
    assert relayed.link_address == IPv6Address("2001:db8:77:1::1")
    only_ldra = unwrap(parse(ldra))
    assert only_ldra.link_address is None and only_ldra.relayed


def test_a_hop_count_above_the_limit_is_refused():
    # RFC 8415 §19.1.2: a relay drops a Relay-forward whose hop-count is already 8, so 8 is
    # the most a server sees.
    assert unwrap(parse(relay(12, 8, "2001:db8::1", "fe80::1", opt(9, DHCLIENT_SOLICIT))))
    with pytest.raises(Malformed) as caught:
        unwrap(parse(relay(12, 9, "2001:db8::1", "fe80::1", opt(9, DHCLIENT_SOLICIT))))
    assert caught.value.reason == "hop_limit"


@pytest.mark.parametrize("options", [
    b"", opt(18, b"x"), opt(9, DHCLIENT_SOLICIT) + opt(9, DHCLIENT_SOLICIT)])
def test_a_relay_message_needs_exactly_one_relay_message_option(options: bytes):
    with pytest.raises(Malformed) as caught:
        unwrap(parse(relay(12, 0, "2001:db8::1", "fe80::1", options)))
    assert caught.value.reason == "no_relay_message"


@pytest.mark.parametrize("packet", [
    relay(13, 0, "2001:db8::1", "fe80::1", opt(9, DHCLIENT_SOLICIT)),
    relay(12, 1, "2001:db8::1", "fe80::1",
          opt(9, relay(13, 0, "2001:db8::1", "fe80::1", opt(9, DHCLIENT_SOLICIT)))),
])
def test_a_relay_reply_has_no_place_in_what_a_server_receives(packet: bytes):
    with pytest.raises(Malformed) as caught:
        unwrap(parse(packet))
    assert caught.value.reason == "bad_relay_nesting"


def test_relay_hop_of_reads_one_relay_message():
    outer = parse(_two_relays())
    assert isinstance(outer, RelayMessage)
    hop = RelayHop.of(outer)
    assert hop.interface_id == b"uplink-2" and hop.remote_id == o.RemoteId(9, b"agg")
    assert hop.subscriber_id is None and hop.client_link_layer is None
