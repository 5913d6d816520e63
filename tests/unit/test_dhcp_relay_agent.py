"""Option 82 sub-options (RFC 3046, 3527, 3993, 5107)."""

from __future__ import annotations

import struct

import pytest

from ipamd.dhcp import relay_agent as ra
from ipamd.dhcp.codec import DhcpMessage, parse
from ipamd.dhcp.options import MalformedPacket, ip_from_str
from ipamd.dhcp.relay_agent import RelayAgentInfo, parse_relay_agent_info

MAC = bytes.fromhex("0019b9f1a2b3")
# Cisco-style circuit-id (VLAN 4, module 0, port 4) and remote-id (MAC type + MAC).
CIRCUIT = b"\x00\x04\x00\x04\x00\x04"
REMOTE = b"\x00\x06" + MAC


def sub(code: int, value: bytes) -> bytes:
    return bytes((code, len(value))) + value


def test_parse_all_known_suboptions_and_unknown_raw() -> None:
    value = (
        sub(1, CIRCUIT)
        + sub(2, REMOTE)
        + sub(9, b"\x00\x00\x0d\xe9\x02\x01\x00")  # vendor-specific: kept raw
        + sub(5, bytes((192, 0, 2, 0)))
        + sub(6, b"subscriber-42")
        + sub(11, bytes((192, 0, 2, 1)))
        + sub(151, b"\x00vrf-red")
    )
    info = parse_relay_agent_info(value)
    assert info.circuit_id == CIRCUIT
    assert info.remote_id == REMOTE
    assert info.link_selection == ip_from_str("192.0.2.0")
    assert info.subscriber_id == b"subscriber-42"
    assert info.server_id_override == ip_from_str("192.0.2.1")
    assert info.other == [(9, b"\x00\x00\x0d\xe9\x02\x01\x00"), (151, b"\x00vrf-red")]


def test_only_circuit_id() -> None:
    info = parse_relay_agent_info(sub(1, b"eth0/1"))
    assert info == RelayAgentInfo(circuit_id=b"eth0/1")
    assert info.remote_id is None and info.link_selection is None and info.other == []


def test_empty_value_and_empty_suboption() -> None:
    assert parse_relay_agent_info(b"") == RelayAgentInfo()
    assert parse_relay_agent_info(b"\x01\x00").circuit_id == b""


def test_duplicate_known_suboption_goes_to_other() -> None:
    info = parse_relay_agent_info(sub(1, b"a") + sub(1, b"b") + sub(5, b"\x0a\0\0\0") * 2)
    assert info.circuit_id == b"a"
    assert info.link_selection == ip_from_str("10.0.0.0")
    assert info.other == [(1, b"b"), (5, b"\x0a\0\0\0")]


def test_to_bytes_canonical_order_exact() -> None:
    info = RelayAgentInfo(
        circuit_id=b"c",
        remote_id=b"r",
        link_selection=ip_from_str("10.1.0.0"),
        subscriber_id=b"s",
        server_id_override=ip_from_str("10.1.0.1"),
        other=[(200, b"x"), (9, b"")],
    )
    assert info.to_bytes() == (
        b"\x01\x01c\x02\x01r\x05\x04\x0a\x01\x00\x00\x06\x01s\x0b\x04\x0a\x01\x00\x01"
        b"\xc8\x01x\x09\x00"
    )


@pytest.mark.parametrize(
    "info",
    [
        RelayAgentInfo(),
        RelayAgentInfo(circuit_id=CIRCUIT, remote_id=REMOTE),
        RelayAgentInfo(link_selection=0, server_id_override=0xFFFFFFFF),
        RelayAgentInfo(subscriber_id=b"x" * 255, other=[(0, b"pad?"), (255, b"end?")]),
    ],
)
def test_roundtrip(info: RelayAgentInfo) -> None:
    assert parse_relay_agent_info(info.to_bytes()) == info


def test_suboption_too_long_to_encode() -> None:
    with pytest.raises(ValueError):
        RelayAgentInfo(circuit_id=b"x" * 256).to_bytes()


@pytest.mark.parametrize(
    "value",
    [
        b"\x01",  # no length byte
        b"\x01\x05abc",  # runs past the end
        sub(1, b"ok") + b"\x02",
        sub(5, b"\x0a\x00\x00"),  # link-selection must be 4 bytes
        sub(11, b"\x0a\x00\x00\x00\x00"),  # server-id-override must be 4 bytes
    ],
)
def test_malformed(value: bytes) -> None:
    with pytest.raises(MalformedPacket) as exc_info:
        parse_relay_agent_info(value)
    assert exc_info.value.reason == "bad_relay_agent"


def test_equality_and_repr() -> None:
    a = RelayAgentInfo(circuit_id=b"x", other=[(9, b"v")])
    assert a == RelayAgentInfo(circuit_id=b"x", other=[(9, b"v")])
    assert a != RelayAgentInfo(circuit_id=b"y", other=[(9, b"v")])
    assert a != "x"
    assert "circuit_id=b'x'" in repr(a) and "other=" in repr(a)
    assert repr(RelayAgentInfo()) == "RelayAgentInfo()"


def _relayed_discover(option82: bytes) -> bytes:
    head = bytes((1, 1, 6, 1)) + struct.pack("!IHH", 0xABCD, 0, 0)
    head += bytes(12) + bytes((10, 9, 8, 1)) + MAC.ljust(16, b"\0") + bytes(192)
    opts = b"\x63\x82\x53\x63" + b"\x35\x01\x01" + sub(82, option82) + b"\xff"
    return (head + opts).ljust(300, b"\0")


def test_message_accessor_and_reply_echo() -> None:
    value = sub(2, REMOTE) + sub(1, CIRCUIT) + sub(11, bytes((10, 9, 8, 2)))
    req = parse(_relayed_discover(value))
    info = req.relay_agent_info
    assert info is not None
    assert (info.circuit_id, info.remote_id) == (CIRCUIT, REMOTE)
    assert info.server_id_override == ip_from_str("10.9.8.2")
    reply = DhcpMessage.reply_to(req, 2, server_id=info.server_id_override)
    out = reply.to_bytes()
    back = parse(out)
    assert back.options[82] == value  # echoed byte-for-byte, original order
    assert back.server_id == ip_from_str("10.9.8.2")
    assert back.relay_agent_info == info


def test_message_accessor_malformed() -> None:
    req = parse(_relayed_discover(b"\x01\x09short"))
    with pytest.raises(MalformedPacket) as exc_info:
        _ = req.relay_agent_info
    assert exc_info.value.reason == "bad_relay_agent"


def test_suboption_constants() -> None:
    assert (ra.CIRCUIT_ID, ra.REMOTE_ID, ra.LINK_SELECTION) == (1, 2, 5)
    assert (ra.SUBSCRIBER_ID, ra.SERVER_ID_OVERRIDE) == (6, 11)
