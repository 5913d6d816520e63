"""The DHCPv6 server's counters: messages in and out by type, drops by reason, lease changes.

As ``dhcp.counters`` for DHCPv4: plain increments on the packet path, read by the metrics
endpoint through ``snapshot()`` (``state.counters["dhcp6"]``). Every drop reason is one of a
fixed set (``DROP_REASONS``), so the metric's label set is bounded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.engine import DROP_REASONS as DECISION_DROPS

# Why a datagram got no answer: the codec's and relay unwrapping's reasons
# (protocol.REASONS), the decision's (engine.DROP_REASONS), and the server's own.
SERVER_DROPS = frozenset(
    {
        "untrusted_relay",  # the source address is not in dhcp6.trusted_relays
        "not_relayed",  # a client message straight to the listen socket (relays only so far)
        "no_server_duid",  # not yet: the database has not answered with the server DUID
        "stale",  # waited longer than dhcp6.stale_wait_ms for its commit
        "overload",  # a new Solicit while commits are behind (dhcp6.overload_wait_ms)
        "db_error",  # the commit failed (the client retransmits)
        "conflict",  # the database refused the bindings again after a second decision
        "send_failed",  # the reply could not be sent
        "internal_error",  # a bug: logged with the message
    }
)
DROP_REASONS = p.REASONS | DECISION_DROPS | SERVER_DROPS


class Dhcp6Counters:
    __slots__ = ("batches", "committed_ops", "conflicts", "drops", "leases", "live", "received",
                 "sent")

    def __init__(self) -> None:
        self.received: Counter[int] = Counter()  # client messages by type (after unwrapping)
        self.sent: Counter[int] = Counter()
        self.drops: Counter[str] = Counter()
        self.leases: Counter[str] = Counter()  # granted, renewed, released, declined, expired
        self.batches = 0
        self.committed_ops = 0
        self.conflicts = 0  # messages decided again after the database refused a binding
        self.live: Callable[[], dict[str, int]] = dict

    def drop(self, reason: str) -> None:
        if reason not in DROP_REASONS:  # a bug elsewhere must not grow the label set
            reason = "internal_error"
        self.drops[reason] += 1

    def snapshot(self) -> dict[str, Any]:
        def named(counter: Counter[int]) -> dict[str, int]:
            return {p.MESSAGE_TYPE_NAMES.get(k, str(k)).lower(): v for k, v in counter.items()}

        return {
            "received": named(self.received),
            "sent": named(self.sent),
            "drops": dict(self.drops),
            "lease_transitions": dict(self.leases),
            "leases_by_state": self.live(),
            "commit_batches": self.batches,
            "committed_ops": self.committed_ops,
            "conflicts": self.conflicts,
        }
