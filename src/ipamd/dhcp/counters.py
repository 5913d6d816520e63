"""In-memory DHCP counters: packets in and out by message type, drops by reason, leases.

Plain dict increments on the hot path; the metrics endpoint reads ``snapshot()``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ipamd.core.histogram import FINE_SECONDS_BUCKETS, SIZE_BUCKETS, Histogram
from ipamd.dhcp.options import MESSAGE_TYPE_NAMES

# Why a packet got no answer. Parser reasons (options.REASONS) are counted under their
# own names as well.
DROP_REASONS = frozenset(
    {
        "not_request",  # op is BOOTREPLY
        "unhandled_type",  # a type a server does not answer (OFFER, ACK, LEASEQUERY...)
        "untrusted_relay",  # giaddr set, source not in the trusted relays (docs/relays.md)
        "not_for_us",  # Request/Decline/Release naming another server identifier
        "no_link",  # not relayed, no ciaddr, not from a served interface: unknown segment
        "no_subnet",  # no subnet for giaddr / link selection / ciaddr / interface
        "dhcp_disabled",  # the subnet has dhcp_enabled = false
        "no_address",  # pools exhausted or none matches the client's classes
        "ping_pending",  # a Discover again while its address is being pinged (ping check)
        "ping_busy",  # dhcp.ping_max_outstanding probes outstanding: the client retransmits
        "client_busy",  # the client's previous packet is still being committed
        "overload",  # a Discover while packets wait longer than dhcp.overload_wait_ms
        "stale",  # waited longer than dhcp.stale_wait_ms (socket queue or commit queue)
        "unknown_lease",  # Release/Decline for no live lease of this client
        "bad_request",  # Request with neither requested address nor ciaddr, etc.
        "conflict_retries",  # the database refused our picks too many times
        "db_error",  # the commit failed (the client will retransmit)
        "send_failed",  # the reply could not be sent
        "internal_error",  # a bug: logged with the packet summary
    }
)


class DhcpCounters:
    """Counters kept by the server; one instance per running server."""

    __slots__ = ("batch_sizes", "batches", "commit_latency", "commit_seconds", "commit_wait",
                 "committed_ops", "conflicts", "drops", "leases", "live", "ping_conflicts",
                 "pings", "received", "refused", "sent")

    def __init__(self) -> None:
        self.received: Counter[int] = Counter()
        self.sent: Counter[int] = Counter()
        self.drops: Counter[str] = Counter()
        # no_address drops by subnet id: which subnet had to refuse a client.
        self.refused: Counter[str] = Counter()
        # Addresses that answered the ping check, by subnet id (the ping_conflict alert's
        # input), and every probe's outcome (sent, silent, answered, unchecked, unavailable).
        self.ping_conflicts: Counter[str] = Counter()
        self.pings: Counter[str] = Counter()
        # Transitions committed by this node (granted, renewed, released, declined, expired).
        self.leases: Counter[str] = Counter()
        self.batches = 0
        # Group commit: ops per batch and seconds per batch (the metrics' histograms).
        self.batch_sizes = Histogram(SIZE_BUCKETS)
        self.commit_latency = Histogram()
        # Per batch, how long its oldest op waited from its datagram's handling until the
        # batch's statement went out (the decision, then any wait for a commit worker or a
        # window): with commit_latency, where a Request's time to its Ack goes.
        self.commit_wait = Histogram(FINE_SECONDS_BUCKETS)
        self.committed_ops = 0
        # Picks the database refused (another request or node held the address first).
        self.conflicts = 0
        self.commit_seconds: Callable[[], float] = float  # summed over the commit workers
        # Live leases by state (offered, active, declined), from the server's lease cache.
        self.live: Callable[[], dict[str, int]] = dict

    def drop(self, reason: str) -> None:
        self.drops[reason] += 1

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able copy, for the metrics endpoint."""

        def named(counter: Counter[int]) -> dict[str, int]:
            return {MESSAGE_TYPE_NAMES.get(k, str(k)).lower(): v for k, v in counter.items()}

        return {
            "received": named(self.received),
            "sent": named(self.sent),
            "drops": dict(self.drops),
            "refused_by_subnet": dict(self.refused),
            "ping_conflicts_by_subnet": dict(self.ping_conflicts),
            "ping_checks": dict(self.pings),
            "lease_transitions": dict(self.leases),
            "leases_by_state": self.live(),
            "commit_batches": self.batches,
            "committed_ops": self.committed_ops,
            "conflicts": self.conflicts,
            "commit_seconds": round(self.commit_seconds(), 3),
        }
