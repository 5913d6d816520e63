"""UDP sockets of the DHCP server: the [dhcp] listen addresses and served interfaces.

Non-blocking stdlib sockets: the receive loop drains each with plain ``recvfrom`` and
parks on trio's ``wait_readable`` only when it is empty, so a busy server pays no
scheduler round trip per packet. The kernel stamps each datagram with its arrival time
(SO_TIMESTAMPNS); the receive loop samples it to see how long packets wait in the queue.
"""

from __future__ import annotations

import fcntl
import ipaddress
import logging
import socket
import struct

from ipamd.dhcp.context import Endpoint

log = logging.getLogger("ipamd.dhcp.server")

_SIOCGIFADDR = 0x8915
_RCVBUF = 4 << 20
_IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)
_SO_BINDTODEVICE = getattr(socket, "SO_BINDTODEVICE", 25)
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # also its control message type
_TIMESPEC = struct.Struct("@qq")


def _udp() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    # Bursts (thousands of clients after a power cut) must queue, not drop; what waits
    # too long is shed by age (dhcp.stale_wait_ms), not by the size of this buffer.
    for option in (_SO_RCVBUFFORCE, socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, _RCVBUF)
            break
        except OSError:
            continue
    sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    sock.setblocking(False)
    return sock


def split_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def open_listen(value: str, want_pktinfo: bool) -> Endpoint:
    """A socket on ``host:port`` (port 0: the kernel picks one, see ``Endpoint.port``)."""
    host, port = split_listen(value)
    sock = _udp()
    try:
        if want_pktinfo and host == "0.0.0.0":  # noqa: S104 - a check, not a bind
            # A wildcard bind needs the address each packet reached, for option 54.
            sock.setsockopt(socket.IPPROTO_IP, _IP_PKTINFO, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    bound_host, bound_port = sock.getsockname()
    local = int(ipaddress.IPv4Address(bound_host))
    return Endpoint(sock=sock, local_ip=local, port=bound_port,
                    pktinfo=want_pktinfo and local == 0)


def interface_address(name: str) -> int:
    """The interface's primary IPv4 address (its subnet is the directly attached link)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR,
                             struct.pack("256s", name.encode()[:15]))
    finally:
        probe.close()
    return int.from_bytes(packed[20:24], "big")


def interface_addresses() -> list[ipaddress.IPv4Address]:
    """Every IPv4 address of this host's interfaces, loopback left out (for certificates)."""
    found = []
    for _, name in socket.if_nameindex():
        try:
            address = ipaddress.IPv4Address(interface_address(name))
        except OSError:  # no IPv4 address on it
            continue
        if not address.is_loopback and address not in found:
            found.append(address)
    return found


def open_interface(name: str, port: int) -> Endpoint:
    """A socket bound to one device (needs CAP_NET_RAW), for clients on that segment."""
    address = interface_address(name)
    sock = _udp()
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_BINDTODEVICE, name.encode())
        sock.bind(("0.0.0.0", port))  # noqa: S104 - the device binding limits it to one link
    except OSError:
        sock.close()
        raise
    return Endpoint(sock=sock, local_ip=0, port=port, interface=name, interface_ip=address)


def ancillary(ancdata: list[tuple[int, int, bytes]]) -> tuple[int, float]:
    """(ipi_spec_dst of IP_PKTINFO: the packet's local address, or 0; the kernel's arrival
    time in epoch seconds, or 0.0)."""
    local, stamp = 0, 0.0
    for level, kind, data in ancdata:
        if level == socket.IPPROTO_IP and kind == _IP_PKTINFO and len(data) >= 12:
            local = int.from_bytes(data[4:8], "big")
        elif level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= 16:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            stamp = seconds + nanoseconds * 1e-9
    return local, stamp
