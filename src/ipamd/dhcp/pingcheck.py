"""The ping check's bookkeeping, without sockets: which addresses to probe before an Offer.

A subnet with ``ping_check`` on offers an address nobody holds a lease on only after an
ICMP echo to it went unanswered for ``ping_timeout_ms`` (docs/api-ipam.md, "Ping check").
The engine asks ``PingGate.verdict`` and the pinger (``dhcp/pinger.py``) reports each
probe's end to ``PingGate.end``. What it remembers, per node and bounded:

* the probes outstanding, one per address (a client that retransmits its Discover while
  its address is probed waits for that probe, it does not start another);
* addresses recently found silent, or released here by their client (a DHCPRELEASE: it
  gave the address back): offered again within ``dhcp.ping_recheck_seconds`` without a new
  probe. An expired or force-released lease's address is probed again (its client may
  still be there).

With no ICMP socket (no ``CAP_NET_RAW`` and the service's group outside
``net.ipv4.ping_group_range``) addresses are offered unprobed, each counted as
``unavailable``; the socket is tried again every ``RETRY_SECONDS``.
"""

from __future__ import annotations

import uuid
from collections import Counter

# verdict(): what the engine does with an address it is about to offer.
OFFER = 0  # offer it now: found silent lately, or no socket to probe with
PROBE = 1  # hold it for the client and probe it first
PENDING = 2  # a probe of it is outstanding: wait for its end
BUSY = 3  # dhcp.ping_max_outstanding probes are outstanding: the client retransmits

# end(): how a probe ended.
SILENT = 0  # no echo reply within the timeout
ANSWERED = 1  # something answered: the address is in use (a conflict)
UNCHECKED = 2  # it could not be sent (no socket, no route, full buffer): offered unprobed

# The client key of an address held because something answered: no client's (a declined
# lease is in no client's unique index, leases_live_client); the lease API shows it as
# ``ping_conflict``.
PING_CONFLICT_KEY = b"\x00ping-check"

# Probe outcomes counted (the /metrics family ipamd_dhcp_ping_checks): sent; then silent,
# answered or unchecked; unavailable is an Offer made unprobed for want of a socket.
OUTCOMES = ("sent", "silent", "answered", "unchecked", "unavailable")

RETRY_SECONDS = 60.0  # between attempts to open the ICMP socket
MAX_REMEMBERED = 1 << 18  # addresses found silent that are remembered at most

Key = tuple[uuid.UUID, int]


class PingGate:
    """Which addresses need a probe before their Offer; the probes outstanding."""

    def __init__(self, recheck_seconds: float, max_outstanding: int,
                 outcomes: Counter[str] | None = None) -> None:
        self.recheck_seconds = recheck_seconds
        self.max_outstanding = max_outstanding
        self.pending: set[Key] = set()
        # Found silent (or ended a lease) at: insertion order is time order (re-inserted).
        self.cleared: dict[Key, float] = {}
        self._swept = 0.0
        self.unavailable_until = 0.0  # no socket until then: offer unprobed
        # Probe outcomes (sent, silent, answered, unchecked, unavailable): the server's
        # counters' ``pings``, for /metrics.
        self.outcomes: Counter[str] = Counter() if outcomes is None else outcomes

    def verdict(self, subnet_id: uuid.UUID, ip: int, now: float) -> int:
        key = (subnet_id, ip)
        if key in self.pending:
            return PENDING
        limit = now - self.recheck_seconds
        if now >= self._swept + 1.0:  # memory only: the entry's own time decides below
            self._swept = now
            self._forget_before(limit)
        at = self.cleared.get(key)
        if at is not None and at >= limit:
            return OFFER
        if now < self.unavailable_until:
            self.outcomes["unavailable"] += 1
            return OFFER
        if len(self.pending) >= self.max_outstanding:
            return BUSY
        return PROBE

    def begin(self, subnet_id: uuid.UUID, ip: int) -> None:
        self.pending.add((subnet_id, ip))

    def end(self, subnet_id: uuid.UUID, ip: int, result: int, now: float) -> None:
        key = (subnet_id, ip)
        self.pending.discard(key)
        if result == SILENT:
            self._remember(key, now)
        elif result == ANSWERED:
            self.cleared.pop(key, None)

    def seen(self, subnet_id: uuid.UUID, ip: int, now: float) -> None:
        """The client of a lease on ``ip`` released it here just now: no probe needed within
        the recheck interval."""
        self._remember((subnet_id, ip), now)

    def unavailable(self, now: float) -> None:
        """The ICMP socket could not be opened: offer unprobed until the next attempt."""
        self.unavailable_until = now + RETRY_SECONDS

    def _remember(self, key: Key, now: float) -> None:
        cleared = self.cleared
        cleared.pop(key, None)
        cleared[key] = now
        if len(cleared) > MAX_REMEMBERED:
            del cleared[next(iter(cleared))]

    def _forget_before(self, limit: float) -> None:
        cleared = self.cleared
        while cleared:
            key = next(iter(cleared))
            if cleared[key] >= limit:
                return
            del cleared[key]


class Probe:
    """An echo to ``ip`` from ``source`` (our address on the client's path) before its Offer;
    unanswered within ``timeout`` seconds (the subnet's ``ping_timeout_ms``), it is offered."""

    __slots__ = ("ip", "source", "subnet_id", "timeout")

    def __init__(self, subnet_id: uuid.UUID, ip: int, source: int, timeout: float) -> None:
        self.subnet_id = subnet_id
        self.ip = ip
        self.source = source
        self.timeout = timeout
