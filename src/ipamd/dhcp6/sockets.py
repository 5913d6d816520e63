"""UDP sockets of the DHCPv6 server: the [dhcp6] listen addresses and served interfaces.

Non-blocking stdlib sockets, drained by the server's receive loop (as ``dhcp.sockets``).
A listen socket takes Relay-forwards (RFC 8415 §19) on a unicast address; an interface
socket (``dhcp6.interfaces``) is bound to one device and has joined All_DHCP_Relay_Agents_
and_Servers (ff02::1:2, RFC 8415 §7.1) there, for clients on that directly attached link:
they send from their link-local address to that group, and are answered at their
link-local address, port 546. Which subnet such a link is: the one holding a global
address of the interface (``global_addresses``).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from ipaddress import IPv6Address
from pathlib import Path

ALL_DHCP_RELAY_AGENTS_AND_SERVERS = IPv6Address("ff02::1:2")
CLIENT_PORT = 546  # RFC 8415 §7.2
_RCVBUF = 4 << 20
_SO_BINDTODEVICE = getattr(socket, "SO_BINDTODEVICE", 25)
_IF_INET6 = Path("/proc/net/if_inet6")
_SCOPE_GLOBAL = 0x00
_IFA_F_TENTATIVE = 0x40


@dataclass(slots=True)
class Endpoint:
    sock: socket.socket
    host: str
    port: int
    interface: str | None = None  # a served interface's name (None: a listen address)
    # A served interface's global addresses (one names its subnet); read again on each
    # plan change (the server's _plan_changed).
    addresses: list[IPv6Address] = field(default_factory=list)
    waited: float = 0.0
    waiting_since: float | None = None
    gso: bool = True  # answers may leave several to a send (dhcp.outgoing); off once refused


def split_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def _udp6() -> socket.socket:
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # DHCPv6 is IPv6 only
        # An interface socket and a listen socket may share port 547 (as dhcp.sockets).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def open_listen(value: str) -> Endpoint:
    host, port = split_listen(value)
    sock = _udp6()
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return Endpoint(sock, host, sock.getsockname()[1])


def open_interface(name: str, port: int) -> Endpoint:
    """A socket on one device (needs CAP_NET_RAW), in ff02::1:2 there."""
    index = socket.if_nametoindex(name)  # OSError for an unknown interface
    sock = _udp6()
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_BINDTODEVICE, name.encode())
        membership = ALL_DHCP_RELAY_AGENTS_AND_SERVERS.packed + struct.pack("@I", index)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, membership)
        sock.bind(("::", port))
    except OSError:
        sock.close()
        raise
    return Endpoint(sock, "::", sock.getsockname()[1], interface=name,
                    addresses=global_addresses(name))


def global_addresses(name: str) -> list[IPv6Address]:
    """The interface's global IPv6 addresses, tentative ones too (/proc/net/if_inet6)."""
    found = []
    try:
        lines = _IF_INET6.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split()
        if len(parts) == 6 and parts[5] == name and int(parts[3], 16) == _SCOPE_GLOBAL:
            found.append(IPv6Address(int(parts[0], 16)))
    return found
