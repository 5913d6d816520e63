"""ICMP echo (RFC 792) for the DHCP server's ping check: the codec and the one socket.

An echo request is type 8, code 0, a checksum (RFC 1071: the ones' complement of the ones'
complement sum of the message's 16-bit words), an identifier, a sequence number and data;
the reply (type 0) carries the identifier, sequence number and data back. The ping check
(``dhcp/pinger.py``) matches a reply by its sequence number, its source and its data.

The socket is the least privileged one that works (docs/api-ipam.md, "Ping check"):

* ``dgram``: the kernel's unprivileged ICMP socket (``SOCK_DGRAM``/``IPPROTO_ICMP``), open
  to the groups in ``net.ipv4.ping_group_range``; no capability. The kernel owns the
  identifier and hands this socket only the replies to it, without their IP header.
* ``raw``: a raw ICMP socket, which needs ``CAP_NET_RAW`` (the appliance's unit already
  grants it for ``dhcp.interfaces``). It sees every ICMP message the host receives, with
  the IP header, so a kernel filter passes echo replies only and the identifier is ours.
"""

from __future__ import annotations

import functools
import socket
import struct
import sys

ECHO_REPLY = 0
ECHO_REQUEST = 8
HEADER = struct.Struct("!BBHHH")  # type, code, checksum, identifier, sequence number
# Linux's raw ICMP filter (linux/icmp.h): SOL_RAW, ICMP_FILTER; a set bit drops that type.
_SOL_RAW = 255
_ICMP_FILTER = 1
_ONLY_ECHO_REPLY = struct.pack("=I", ~(1 << ECHO_REPLY) & 0xFFFFFFFF)
# struct in_pktinfo (ipi_ifindex, ipi_spec_dst, ipi_addr): spec_dst is the source address.
# Python 3.11's socket module lacks the constant: Linux's value (linux/in.h).
_IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)
_PKTINFO = struct.Struct("=I4s4s")


_NATIVE_IS_BIG = sys.byteorder == "big"


def checksum(data: bytes) -> int:
    """The Internet checksum of ``data`` (RFC 1071): an odd length is padded with a zero.

    The words are summed in the machine's byte order and the result swapped back: RFC 1071
    §2(B), the sum is independent of byte order (one cast and one sum, no unpacking)."""
    if len(data) % 2:
        data += b"\x00"
    total: int = sum(memoryview(data).cast("H"))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    if not _NATIVE_IS_BIG:
        total = ((total & 0xFF) << 8) | (total >> 8)
    return ~total & 0xFFFF


def echo_request(ident: int, seq: int, data: bytes) -> bytes:
    """An echo request message (the socket adds the IP header)."""
    head = HEADER.pack(ECHO_REQUEST, 0, 0, ident, seq)
    return HEADER.pack(ECHO_REQUEST, 0, checksum(head + data), ident, seq) + data


class Echo:
    """An echo reply as received: where from, and its identifier, sequence number, data."""

    __slots__ = ("data", "ident", "seq", "source")

    def __init__(self, source: int, ident: int, seq: int, data: bytes) -> None:
        self.source = source
        self.ident = ident
        self.seq = seq
        self.data = data


def parse_reply(packet: bytes, source: int, *, ip_header: bool) -> Echo | None:
    """The echo reply in ``packet`` (after its IP header when ``ip_header``: raw sockets
    see it), or None for anything else: too short, another type, a bad checksum."""
    if ip_header:
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return None
        packet = packet[(packet[0] & 0x0F) * 4:]
    if len(packet) < HEADER.size:
        return None
    kind, code, _sum, ident, seq = HEADER.unpack_from(packet)
    if kind != ECHO_REPLY or code != 0 or checksum(packet) != 0:
        return None
    return Echo(source, ident, seq, packet[HEADER.size:])


def open_socket() -> tuple[socket.socket, str]:
    """A non-blocking ICMP socket and its kind (``dgram`` or ``raw``), the unprivileged one
    first; OSError (EACCES, EPERM) when neither may be opened."""
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
        kind = "dgram"
    except OSError:  # this group is outside net.ipv4.ping_group_range
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        kind = "raw"
        sock.setsockopt(_SOL_RAW, _ICMP_FILTER, _ONLY_ECHO_REPLY)
    sock.setblocking(False)
    return sock, kind


def send_echo(sock: socket.socket, packet: bytes, target: int, source: int) -> None:
    """Send ``packet`` to ``target`` from ``source`` (0: the kernel's choice). The source is
    the server's own address on the client's path, so replies come back to it (a relay's
    network may be routed only for it)."""
    dest = (socket.inet_ntoa(target.to_bytes(4, "big")), 0)
    if not source:
        sock.sendto(packet, dest)
        return
    sock.sendmsg([packet], [_pktinfo(source)], 0, dest)


@functools.lru_cache(maxsize=64)  # a server has a few addresses: one ancillary item each
def _pktinfo(source: int) -> tuple[int, int, bytes]:
    return socket.IPPROTO_IP, _IP_PKTINFO, _PKTINFO.pack(0, source.to_bytes(4, "big"), bytes(4))
