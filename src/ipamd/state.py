"""What the running appliance shares between its services; passed explicitly, never global."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import JsonValue

from ipamd.config import Config
from ipamd.core.histogram import ApiLatency, Histogram
from ipamd.core.lease_events import JournalPending
from ipamd.core.rendered import RenderedRows
from ipamd.db.bridge import Database
from ipamd.messages import Report, Request


class DhcpControl(Protocol):
    """What the rest of the appliance may ask of this node's running DHCP server.

    The runtime registers it as ``AppState.dhcp`` once it listens (None otherwise): the
    API reloads its plan after a settings change and tells it of leases it force-released,
    the expiry worker of leases it ended.
    """

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """Where it listens: (address, port) per socket."""
        ...

    def forget(self, ended: Iterable[tuple[uuid.UUID, uuid.UUID, str | None]]) -> None:
        """Leases ended outside the DHCP path: (lease_id, subnet_id, event or None)."""
        ...

    async def reload_plan(self) -> None:
        """Reload the address plan now (the other nodes follow the NOTIFY)."""
        ...

    def saturated_seconds(self) -> float:
        """Seconds so far every commit worker was busy while ops waited for one (the
        database is the ceiling)."""
        ...

    def receiving_seconds(self) -> float:
        """Seconds so far its busiest socket always had a packet waiting (the process is the
        ceiling). Work that can wait (DNS updates) yields while either grows nearly as fast
        as time."""
        ...

    def lease_changes(self) -> int:
        """Lease changes it committed so far (full garbage collections wait while many a
        second are)."""
        ...

    def counters_snapshot(self) -> dict[str, Any]:
        """Packets received/sent/dropped and lease events so far, as plain JSON values."""
        ...


class ServerCounters(Protocol):
    """A DHCP server's counters as /metrics reads them (dhcp/counters.py, dhcp6/counters.py)."""

    def snapshot(self) -> dict[str, Any]:
        """Packets received/sent/dropped and lease events so far, as plain JSON values."""
        ...


class CommitCounters(ServerCounters, Protocol):
    """The DHCPv4 server's, with its group commits' histograms."""

    batch_sizes: Histogram
    commit_latency: Histogram
    commit_wait: Histogram


def _outcomes() -> dict[str, int]:
    return {"claimed": 0, "delivered": 0, "retrying": 0, "failed": 0, "stale": 0}


@dataclass
class OutboxCounters:
    """This process's deliveries (outbox/scheduler.py): outcomes by name, latency by kind."""

    outcomes: dict[str, int] = field(default_factory=_outcomes)
    latency: dict[str, Histogram] = field(default_factory=dict)


@dataclass
class DnsCounters:
    """The embedded DNS server's (dns/embedded.py)."""

    queries: int = 0
    formerr: int = 0
    transfers: int = 0
    notifies: int = 0
    reloads: int = 0


@dataclass
class Counters:
    """This process's in-memory counters, one typed field per subsystem, read by /metrics.
    A DHCP server's are its own, registered by the runtime once it serves (None before)."""

    dhcp: CommitCounters | None = None
    dhcp6: ServerCounters | None = None
    outbox: OutboxCounters = field(default_factory=OutboxCounters)
    dns: DnsCounters = field(default_factory=DnsCounters)
    api_latency: ApiLatency = field(default_factory=ApiLatency)


class MainProcess(Protocol):
    """In an API worker process (runtime.api_in_main_process): the way to the appliance's
    main process, which owns what the workers share (the node's rate limits with several
    workers, its DHCP server, its metrics)."""

    async def call(self, request: Request) -> JsonValue:
        """Ask the main process; its answer (raises when it refuses or is gone)."""
        ...

    def tell(self, request: Request) -> None:
        """Tell the main process something, not waiting for it."""
        ...


@dataclass
class AppState:
    config: Config
    db: Database
    started_at: float = field(default_factory=time.time)
    # Set once any token has been minted: the bootstrap window never reopens.
    tokens_exist: bool = False
    # Per-subsystem in-memory counters, read by the metrics endpoint.
    counters: Counters = field(default_factory=Counters)
    # This node's running DHCP server, while it runs (a typed handle, not a service lookup).
    dhcp: DhcpControl | None = None
    # This node's running DHCPv6 server, while it runs (dhcp6/server.py).
    dhcp6: DhcpControl | None = None
    # This node's services, enabled ones only, and whether each runs now (the supervisor
    # keeps it; the node heartbeat reports it). The API's binds once it listens.
    running_services: dict[str, bool] = field(default_factory=dict)
    api_binds: list[str] = field(default_factory=list)
    # The latest report of each child process (ipamd/child), by name: its counters.
    children: dict[str, Report] = field(default_factory=dict)
    # Set in an API worker process only: its main process (see MainProcess).
    main_process: MainProcess | None = None
    # Rows' JSON text by row version, for list pages (core/rendered.py).
    rendered: RenderedRows = field(default_factory=RenderedRows)
    # Lease journal rows written by this process, waiting for its deriver.
    lease_journal: JournalPending = field(default_factory=JournalPending)
