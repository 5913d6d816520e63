"""DHCPv4 option codes, message types and typed option value helpers.

Everything here works on option *values* (the bytes after code and length).
Addresses are plain ``int`` (network byte order value, as ``int(IPv4Address)``)
because that is what the header parser produces with a single ``struct`` call
and what the IPAM layer compares and does arithmetic on.

``MalformedPacket`` lives here (not in ``codec``) so that this module and
``relay_agent`` can raise it without an import cycle; ``codec`` re-exports it.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable
from typing import NamedTuple

# --------------------------------------------------------------------------- errors

# Fixed set so the server can keep one drop counter per reason.
REASONS: frozenset[str] = frozenset(
    {
        "too_short",  # fewer than 240 bytes (fixed header + magic cookie)
        "bad_op",  # op not BOOTREQUEST/BOOTREPLY
        "bad_hlen",  # hlen > 16
        "bad_cookie",  # magic cookie is not 99.130.83.99
        "truncated_option",  # option length runs past its field
        "bad_overload",  # option 52 not 1 byte in 1..3
        "no_message_type",  # option 53 absent (plain BOOTP)
        "bad_message_type",  # option 53 not 1 byte in 1..18
        "bad_option_length",  # fixed-size option (50, 54, 118, ...) has the wrong length
        "bad_fqdn",  # option 81 malformed
        "bad_relay_agent",  # option 82 sub-options malformed
    }
)


class MalformedPacket(ValueError):
    """A DHCPv4 packet (or one of its options) cannot be decoded.

    ``reason`` is always one of :data:`REASONS`.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in REASONS:  # programming error, not a packet error
            raise AssertionError(f"unknown MalformedPacket reason {reason!r}")
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail

    def __reduce__(self) -> tuple[type[MalformedPacket], tuple[str, str]]:
        # args[0] is the formatted message, so default pickling would not round-trip.
        return (type(self), (self.reason, self.detail))


# --------------------------------------------------------------------------- op / header

BOOTREQUEST = 1
BOOTREPLY = 2
MAGIC_COOKIE = 0x63825363  # 99.130.83.99
FLAG_BROADCAST = 0x8000
HTYPE_ETHER = 1

# --------------------------------------------------------------------------- option codes

PAD = 0
SUBNET_MASK = 1
TIME_OFFSET = 2
ROUTER = 3
DNS = 6
HOSTNAME = 12
DOMAIN_NAME = 15
INTERFACE_MTU = 26
BROADCAST_ADDRESS = 28
STATIC_ROUTE = 33
NTP = 42
VENDOR_SPECIFIC = 43
NETBIOS_NAME_SERVER = 44
REQUESTED_IP = 50
LEASE_TIME = 51
OVERLOAD = 52
MESSAGE_TYPE = 53
SERVER_ID = 54
PRL = 55
MESSAGE = 56
MAX_SIZE = 57
RENEWAL = 58
REBINDING = 59
VENDOR_CLASS = 60
CLIENT_ID = 61
TFTP_SERVER = 66
BOOTFILE = 67
USER_CLASS = 77
RAPID_COMMIT = 80
FQDN = 81
RELAY_AGENT = 82
CLIENT_ARCH = 93
CLIENT_NDI = 94
CLIENT_UUID = 97
SUBNET_SELECTION = 118
DOMAIN_SEARCH = 119
CLASSLESS_STATIC_ROUTE = 121
VIVSO = 125
END = 255

# Overload (52) values: which header fields carry options.
OVERLOAD_FILE = 1
OVERLOAD_SNAME = 2
OVERLOAD_BOTH = 3

# --------------------------------------------------------------------------- message types

DISCOVER = 1
OFFER = 2
REQUEST = 3
DECLINE = 4
ACK = 5
NAK = 6
RELEASE = 7
INFORM = 8
FORCERENEW = 9  # RFC 3203
LEASEQUERY = 10  # RFC 4388
LEASEUNASSIGNED = 11
LEASEUNKNOWN = 12
LEASEACTIVE = 13
BULKLEASEQUERY = 14  # RFC 6926
LEASEQUERYDONE = 15
ACTIVELEASEQUERY = 16  # RFC 7724
LEASEQUERYSTATUS = 17
TLS = 18

MESSAGE_TYPE_MIN = DISCOVER
MESSAGE_TYPE_MAX = TLS

MESSAGE_TYPE_NAMES: dict[int, str] = {
    DISCOVER: "DISCOVER",
    OFFER: "OFFER",
    REQUEST: "REQUEST",
    DECLINE: "DECLINE",
    ACK: "ACK",
    NAK: "NAK",
    RELEASE: "RELEASE",
    INFORM: "INFORM",
    FORCERENEW: "FORCERENEW",
    LEASEQUERY: "LEASEQUERY",
    LEASEUNASSIGNED: "LEASEUNASSIGNED",
    LEASEUNKNOWN: "LEASEUNKNOWN",
    LEASEACTIVE: "LEASEACTIVE",
    BULKLEASEQUERY: "BULKLEASEQUERY",
    LEASEQUERYDONE: "LEASEQUERYDONE",
    ACTIVELEASEQUERY: "ACTIVELEASEQUERY",
    LEASEQUERYSTATUS: "LEASEQUERYSTATUS",
    TLS: "TLS",
}

# Client FQDN (81) flag bits, RFC 4702 section 2.1.
FQDN_S = 0x01  # server should do the A RR update
FQDN_O = 0x02  # server overrode the client's S choice
FQDN_E = 0x04  # name is in canonical wire format (else deprecated ASCII)
FQDN_N = 0x08  # server should do no DNS updates

# --------------------------------------------------------------------------- addresses

_U8 = struct.Struct("!B")
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_I32 = struct.Struct("!i")


def ip_to_str(addr: int) -> str:
    """Dotted quad for an int address (what the header/option decoders return)."""
    return socket.inet_ntoa(addr.to_bytes(4, "big"))


def ip_from_str(text: str) -> int:
    """Int address from a dotted quad; strict (no inet_aton shorthand forms)."""
    parts = text.split(".")
    if len(parts) != 4:
        raise ValueError(f"not an IPv4 address: {text!r}")
    value = 0
    for part in parts:
        if not part.isdigit() or len(part) > 3 or int(part) > 255:
            raise ValueError(f"not an IPv4 address: {text!r}")
        value = (value << 8) | int(part)
    return value


# --------------------------------------------------------------------------- encoders


def encode_ip(addr: int) -> bytes:
    return addr.to_bytes(4, "big")


def encode_ips(addrs: Iterable[int]) -> bytes:
    return b"".join([a.to_bytes(4, "big") for a in addrs])


def encode_u8(value: int) -> bytes:
    return _U8.pack(value)


def encode_u16(value: int) -> bytes:
    return _U16.pack(value)


def encode_u32(value: int) -> bytes:
    return _U32.pack(value)


def encode_i32(value: int) -> bytes:
    """Signed 32-bit (time offset, option 2)."""
    return _I32.pack(value)


def encode_str(value: str) -> bytes:
    # RFC 2132 strings are NVT ASCII; UTF-8 is a superset clients tolerate.
    return value.encode("utf-8")


def encode_message_type(message_type: int) -> bytes:
    return _U8.pack(message_type)


def encode_user_class(classes: Iterable[bytes]) -> bytes:
    """RFC 3004: each instance as one length octet (1..255) followed by data."""
    out = bytearray()
    for item in classes:
        n = len(item)
        if not 1 <= n <= 255:
            raise ValueError("user class instance must be 1..255 bytes")
        out.append(n)
        out += item
    return bytes(out)


# --------------------------------------------------------------------------- decoders
# Decoders raise MalformedPacket("bad_option_length") so a server can count them
# like any other drop; lenient text decoders never raise.


def decode_ip(value: bytes) -> int:
    if len(value) != 4:
        raise MalformedPacket("bad_option_length", f"expected 4 bytes, got {len(value)}")
    return int.from_bytes(value, "big")


def decode_ips(value: bytes) -> list[int]:
    n = len(value)
    if n == 0 or n & 3:
        raise MalformedPacket("bad_option_length", f"IP list length {n} not a multiple of 4")
    return [int.from_bytes(value[i : i + 4], "big") for i in range(0, n, 4)]


def decode_u8(value: bytes) -> int:
    if len(value) != 1:
        raise MalformedPacket("bad_option_length", f"expected 1 byte, got {len(value)}")
    return value[0]


def decode_u16(value: bytes) -> int:
    if len(value) != 2:
        raise MalformedPacket("bad_option_length", f"expected 2 bytes, got {len(value)}")
    number: int = _U16.unpack(value)[0]
    return number


def decode_u32(value: bytes) -> int:
    if len(value) != 4:
        raise MalformedPacket("bad_option_length", f"expected 4 bytes, got {len(value)}")
    number: int = _U32.unpack(value)[0]
    return number


def decode_str(value: bytes) -> str:
    """Lenient text: drop trailing NULs (some clients C-terminate), never raise."""
    return value.rstrip(b"\x00").decode("utf-8", "replace")


def decode_user_class(value: bytes) -> list[bytes]:
    """RFC 3004 instances; a non-conforming value is returned as one instance.

    Many clients (iPXE, older Windows) send a bare string instead of the
    length-prefixed form, so a bad length means "raw", not "malformed".
    """
    out: list[bytes] = []
    pos = 0
    n = len(value)
    while pos < n:
        ln = value[pos]
        end = pos + 1 + ln
        if ln == 0 or end > n:
            return [value]
        out.append(value[pos + 1 : end])
        pos = end
    return out


# --------------------------------------------------------------------------- client FQDN (81)


class ClientFqdn(NamedTuple):
    """Decoded option 81 (RFC 4702).

    ``name`` has no trailing dot; ``fully_qualified`` tells whether the client
    sent a complete name (wire form: terminating root label; ASCII form:
    trailing dot) or only a partial one (e.g. just a host label).
    """

    flags: int
    rcode1: int
    rcode2: int
    name: str
    fully_qualified: bool

    @property
    def wire(self) -> bool:
        """True when the E flag says the name is in canonical DNS wire format."""
        return bool(self.flags & FQDN_E)


def decode_client_fqdn(value: bytes) -> ClientFqdn:
    n = len(value)
    if n < 3:
        raise MalformedPacket("bad_fqdn", "option 81 shorter than 3 bytes")
    flags = value[0]
    if flags & FQDN_E:
        labels: list[str] = []
        pos = 3
        fully = False
        while pos < n:
            ln = value[pos]
            if ln == 0:
                if pos + 1 != n:
                    raise MalformedPacket("bad_fqdn", "data after root label")
                fully = True
                break
            # >63 includes compression pointers, which RFC 4702 forbids here.
            if ln > 63:
                raise MalformedPacket("bad_fqdn", "label longer than 63 / compression")
            end = pos + 1 + ln
            if end > n:
                raise MalformedPacket("bad_fqdn", "label runs past option end")
            labels.append(value[pos + 1 : end].decode("utf-8", "replace"))
            pos = end
        return ClientFqdn(flags, value[1], value[2], ".".join(labels), fully)
    text = value[3:].rstrip(b"\x00").decode("utf-8", "replace")
    if text.endswith("."):
        return ClientFqdn(flags, value[1], value[2], text[:-1], True)
    return ClientFqdn(flags, value[1], value[2], text, False)


def encode_client_fqdn(
    flags: int,
    name: str,
    *,
    rcode1: int = 255,
    rcode2: int = 255,
    fully_qualified: bool = True,
) -> bytes:
    """Option 81 value; wire or ASCII name encoding follows the E bit in ``flags``.

    RFC 4702 says servers send 255 in both RCODE fields. A server should use
    the same encoding (E bit) the client used.
    """
    name = name.rstrip(".")
    head = bytes((flags & 0xFF, rcode1, rcode2))
    if flags & FQDN_E:
        out = bytearray(head)
        if name:
            for label in name.split("."):
                raw = label.encode("utf-8")
                if not 1 <= len(raw) <= 63:
                    raise ValueError(f"bad DNS label in {name!r}")
                out.append(len(raw))
                out += raw
        if fully_qualified:
            out.append(0)
        if len(out) - 3 > 255:
            raise ValueError("domain name longer than 255 bytes")
        return bytes(out)
    text = name + "." if fully_qualified and name else name
    return head + text.encode("utf-8")
