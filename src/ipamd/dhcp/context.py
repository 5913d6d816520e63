"""What the pipeline stages share: the packet's transaction, where it came in, the server's view.

Plain objects with slots, built once per packet; the stages fill in a transaction
step by step, like Kea's and CoreDHCP's handler chains.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ipamd.config import DhcpConfig
from ipamd.dhcp.codec import DhcpMessage
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.freepool import AddressPicker
from ipamd.dhcp.leasecache import LeaseCache
from ipamd.dhcp.leasestore import Op
from ipamd.dhcp.pingcheck import PingGate
from ipamd.dhcp.plan import Plan, Reservation, Subnet
from ipamd.dhcp.relays import TrustedRelays

NO_CLASSES: frozenset[uuid.UUID] = frozenset()


@dataclass(slots=True)
class Endpoint:
    """A socket the server listens on."""

    sock: Any  # the non-blocking stdlib socket replies are sent from
    local_ip: int  # the bound address (0 for a wildcard bind)
    port: int
    interface: str | None = None  # a directly attached segment served on this device
    interface_ip: int = 0  # that interface's address: its subnet is the link's
    pktinfo: bool = False  # wildcard bind: each packet's local address comes from IP_PKTINFO
    # How long the last sampled packet waited in this socket's queue (s); 0 once drained.
    queue_age: float = 0.0
    # Time its receive loop spent waiting for a packet (idle), and since when it waits now.
    waited: float = 0.0
    waiting_since: float | None = None
    sample: int = 0  # datagrams until the receive loop next reads an arrival time
    gso: bool = True  # answers may leave several to a send (outgoing.py); off once refused


class Exchange:
    """One received packet on its way through the stages: a DHCP exchange, not a database
    transaction (stages call it ``tx`` for short)."""

    __slots__ = (
        "attempts", "born", "circuit_id", "classes", "client_key", "endpoint", "fqdn",
        "hostname", "lease_time", "local_ip", "msg", "mtype", "op", "remote_id", "reservation",
        "sid_override",
        "src_ip", "src_port", "subnet",
    )

    def __init__(
        self, msg: DhcpMessage, mtype: int, src_ip: int, src_port: int, endpoint: Endpoint,
        local_ip: int = 0, born: float = 0.0,
    ) -> None:
        self.msg = msg
        self.born = born  # time.monotonic() when the server read the packet
        self.mtype = mtype
        self.src_ip = src_ip
        self.src_port = src_port
        self.endpoint = endpoint
        # The address the packet reached us on: the server identifier when none is configured.
        self.local_ip = local_ip or endpoint.local_ip or endpoint.interface_ip
        self.subnet: Subnet | None = None
        self.classes: frozenset[uuid.UUID] = NO_CLASSES
        self.client_key = b""
        self.reservation: Reservation | None = None
        self.hostname: str | None = None
        self.fqdn: str | None = None
        self.circuit_id: bytes | None = None
        self.remote_id: bytes | None = None
        # RFC 5107: the trusted relay's server identifier override (0: none); it names us in
        # option 54 of every reply, and a client's Request naming it is for us.
        self.sid_override = 0
        self.op: Op | None = None
        self.attempts = 0
        # The lease time granted when a client's option 51 moved it off the subnet's (0: the
        # subnet's lease_time); the engine sets it, the reply's 51/58/59 follow it.
        self.lease_time = 0


@dataclass
class Env:
    """The server's state the stages read (and the allocate stage updates)."""

    config: DhcpConfig
    plan: Plan
    cache: LeaseCache
    picker: AddressPicker
    trusted: TrustedRelays
    counters: DhcpCounters
    server_id: int = 0  # dhcp.server_id, 0 when not configured
    server_ids: frozenset[int] = frozenset()  # every address option 54 may name for us
    # Addresses picked for requests still being committed, per subnet.
    pending: dict[uuid.UUID, set[int]] = field(default_factory=dict)
    # The ping check's bookkeeping (None: no pinger, as in tests of the engine alone).
    ping: PingGate | None = None

    def pending_in(self, subnet_id: uuid.UUID) -> set[int]:
        found = self.pending.get(subnet_id)
        if found is None:
            found = self.pending[subnet_id] = set()
        return found
