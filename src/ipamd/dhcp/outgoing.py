"""Answers out: queued during one pass of the server's packet path, sent together at its end.

Answers of one size to one destination (a relay, mostly: a storm's Acks leave in bursts to
it) go in a single ``sendmsg`` with UDP generic segmentation offload (``UDP_SEGMENT``, Linux
4.18+): the kernel cuts the buffer into the datagrams, each a whole answer. Through a veth,
300-byte datagrams in bursts of 32 cost the machine 4.3 µs of CPU each that way against
11.2 µs with a ``sendto`` each, sender and receiver counted (``bench/bench_udp_send.py``).
Order between answers to different clients does not matter; within a group it is kept.
Both servers send through it (DHCPv4's ``dispatch``, DHCPv6's ``dhcp6.server``): an
endpoint is anything with a socket, its port and a ``gso`` flag (``SendingEndpoint``), a
destination any address its socket's ``sendto`` takes (an IPv6 one with its scope too).

An endpoint whose kernel refuses segmented sends (an old kernel, a device without checksum
offload, a segment larger than the link's MTU) sends one datagram per call from then on;
nothing is lost on the way. A full socket buffer queues the answers for the server's
backlog task, as a single send does.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("ipamd.dhcp.server")

UDP_SEGMENT = 103  # <linux/udp.h>; Python 3.11's socket module does not name it
MAX_SEGMENTS = 64  # the kernel's UDP_MAX_SEGMENTS on older kernels (newer ones take 128)
MAX_PAYLOAD = 65_000  # one segmented send is one UDP payload before cutting (< 65,507)
BACKLOG_MAX = 10_000
# What a kernel says when it cannot segment on this socket at all (not about a destination).
_REFUSALS = frozenset({errno.EIO, errno.EINVAL, errno.ENOPROTOOPT, errno.EOPNOTSUPP,
                       errno.EMSGSIZE})
_SOL_UDP = socket.IPPROTO_UDP
_ORDER = sys.byteorder


class SendingEndpoint(Protocol):
    """What answers leave through: ``dhcp.context.Endpoint``, ``dhcp6.sockets.Endpoint``."""

    sock: Any  # the non-blocking stdlib socket
    port: int
    gso: bool  # several answers to a send (UDP_SEGMENT); off once the kernel refused it


class SendCounters(Protocol):
    """The counters a send moves: answers sent by message type, ``send_failed`` drops."""

    sent: Counter[int]
    drops: Counter[str]


Address = tuple[Any, ...]  # (host, port), or (host, port, flowinfo, scope id) for IPv6
# Where from, where to, the datagram, its message type.
Answer = tuple[SendingEndpoint, Address, bytes, int]


class Outgoing:
    """The answers of the current pass (``add``), sent by ``flush``; ``backlog`` holds those
    a full socket buffer refused, for the server's task that waits until it is writable."""

    def __init__(self, counters: SendCounters, wake_backlog: Callable[[], None]) -> None:
        self.counters = counters
        self.wake_backlog = wake_backlog
        self.queued: list[Answer] = []
        self.backlog: list[Answer] = []

    def add(self, ep: SendingEndpoint, addr: Address, data: bytes, mtype: int) -> None:
        self.queued.append((ep, addr, data, mtype))

    def flush(self) -> None:
        """Send everything queued: grouped by socket, destination and size."""
        queued = self.queued
        if not queued:
            return
        if len(queued) == 1:
            ep, addr, data, mtype = queued[0]
            queued.clear()
            self._one(ep, addr, data, mtype)
            return
        groups: dict[tuple[int, Any, Any, int], list[Answer]] = {}
        for answer in queued:
            ep, addr, data, _ = answer
            key = (id(ep), addr[0], addr[1], len(data))
            group = groups.get(key)
            if group is None:
                groups[key] = [answer]
            else:
                group.append(answer)
        queued.clear()
        for group in groups.values():
            self._group(group)

    def _group(self, group: list[Answer]) -> None:
        ep = group[0][0]
        size = len(group[0][2])
        step = min(MAX_SEGMENTS, MAX_PAYLOAD // size) if size else 1
        for start in range(0, len(group), step):
            chunk = group[start:start + step]
            if len(chunk) > 1 and ep.gso:
                self._segmented(ep, size, chunk)
            else:
                for answer in chunk:
                    self._one(*answer)

    def _segmented(self, ep: SendingEndpoint, size: int, chunk: list[Answer]) -> None:
        addr = chunk[0][1]
        try:
            ep.sock.sendmsg([answer[2] for answer in chunk],
                            [(_SOL_UDP, UDP_SEGMENT, size.to_bytes(2, _ORDER))], 0, addr)
        except BlockingIOError:
            for answer in chunk:
                self._defer(answer)
            return
        except OSError as error:
            if error.errno in _REFUSALS:
                ep.gso = False
                log.info("dhcp: port %d: the kernel refused a segmented send (%s); answers "
                         "go out one datagram per call", ep.port, error.strerror or error)
            for answer in chunk:  # each one alone: sent, or counted as send_failed
                self._one(*answer)
            return
        sent = self.counters.sent
        for answer in chunk:
            sent[answer[3]] += 1

    def _one(self, ep: SendingEndpoint, addr: Address, data: bytes, mtype: int) -> None:
        try:
            ep.sock.sendto(data, addr)
        except BlockingIOError:
            self._defer((ep, addr, data, mtype))
            return
        except OSError as error:
            log.debug("send to %s failed: %s", addr, error)
            self.counters.drops["send_failed"] += 1
            return
        self.counters.sent[mtype] += 1

    def _defer(self, answer: Answer) -> None:
        if len(self.backlog) >= BACKLOG_MAX:
            self.counters.drops["send_failed"] += 1
            return
        self.backlog.append(answer)
        self.wake_backlog()
