"""Hand-built DHCPv6 octets for the codec's tests: nothing here uses the code under test."""

from __future__ import annotations

import struct
from ipaddress import IPv6Address


def opt(code: int, data: bytes = b"") -> bytes:
    """One option (RFC 8415 §21.1): 2-octet code, 2-octet length, data."""
    return struct.pack("!HH", code, len(data)) + data


def client(msg_type: int, xid: int, *options: bytes) -> bytes:
    """A client/server message (RFC 8415 §8): msg-type, 3-octet transaction-id, options."""
    return bytes((msg_type,)) + xid.to_bytes(3, "big") + b"".join(options)


def relay(msg_type: int, hops: int, link: str, peer: str, *options: bytes) -> bytes:
    """A relay message (RFC 8415 §9): msg-type, hop-count, link-address, peer-address."""
    return (bytes((msg_type, hops)) + IPv6Address(link).packed + IPv6Address(peer).packed
            + b"".join(options))


def ia(iaid: int, t1: int, t2: int, *options: bytes) -> bytes:
    """IA_NA / IA_PD data (RFC 8415 §21.4, §21.21)."""
    return struct.pack("!III", iaid, t1, t2) + b"".join(options)


def iaaddr(address: str, preferred: int, valid: int, *options: bytes) -> bytes:
    """IA Address data (RFC 8415 §21.6)."""
    return IPv6Address(address).packed + struct.pack("!II", preferred, valid) + b"".join(options)


def iaprefix(prefix: str, length: int, preferred: int, valid: int, *options: bytes) -> bytes:
    """IA Prefix data (RFC 8415 §21.22)."""
    return (struct.pack("!IIB", preferred, valid, length) + IPv6Address(prefix).packed
            + b"".join(options))


def name(text: str) -> bytes:
    """An absolute domain name in uncompressed wire format (RFC 1035 §3.1)."""
    return b"".join(bytes((len(p),)) + p.encode() for p in text.rstrip(".").split(".")) + b"\0"


MAC = bytes.fromhex("02005e100001")
# DUID-LLT (RFC 8415 §11.2): type 1, hardware type 1 (Ethernet), time, MAC.
DUID_LLT = bytes.fromhex("00010001") + (0x2E5B1C00).to_bytes(4, "big") + MAC
# DUID-EN (§11.3): type 2, enterprise 2495 (ISC), identifier.
DUID_EN = bytes.fromhex("0002") + (2495).to_bytes(4, "big") + bytes.fromhex("0102030405060708")
# DUID-LL (§11.4): type 3, hardware type 1, MAC.
DUID_LL = bytes.fromhex("00030001") + MAC
# DUID-UUID (RFC 6355): type 4, 16 octets.
DUID_UUID = bytes.fromhex("0004") + bytes.fromhex("9f0bd52f8e0c4a0fb5a7c7d53c3e2a11")

# What dhclient -6 (ISC DHCP 4.4) puts in a Solicit: its DUID-LLT, an ORO, Elapsed Time 0 and
# an IA_NA whose IAID is the last four octets of the MAC, T1 = T2 = 0 (RFC 8415 §18.2.1).
DHCLIENT_SOLICIT = client(
    1, 0x5A0C11,
    opt(1, DUID_LLT),
    opt(6, struct.pack("!HHH", 23, 24, 39)),
    opt(8, b"\0\0"),
    opt(3, ia(int.from_bytes(MAC[2:], "big"), 0, 0)),
)
# Debian's `dhcrelay -6 -l veth-c -u 2001:db8:77::1%veth-s`: hop-count 0, link-address the
# first global address of the -l interface, peer-address the client's link-local source,
# and only the Relay Message option (no Interface-Id without -I, no option 79).
DHCRELAY_FORWARD = relay(12, 0, "2001:db8:77:1::1", "fe80::5eff:fe10:1", opt(9, DHCLIENT_SOLICIT))

# perfdhcp's Solicit (Kea's TestControl::sendSolicit6 and its option factories): Elapsed
# Time 0, Rapid Commit (-c), Client Identifier (DUID-LLT), ORO {23, 24}, IA_NA with IAID 1,
# T1 3600, T2 5400.
PERFDHCP_SOLICIT = client(
    1, 0x00ABCD,
    opt(8, b"\0\0"),
    opt(14),
    opt(1, DUID_LLT),
    opt(6, struct.pack("!HH", 23, 24)),
    opt(3, ia(1, 3600, 5400)),
)
# `perfdhcp -6 -A1 -l <if>`: one Relay-forward, hop-count 0, link-address and peer-address
# both the interface's global address, only option 9.
PERFDHCP_FORWARD = relay(12, 0, "2001:db8:77::2", "2001:db8:77::2", opt(9, PERFDHCP_SOLICIT))
