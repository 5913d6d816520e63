"""The appliance's main process: the API (here or in worker processes), then every
background service, supervised; SIGTERM/SIGINT drain the API, then everything else is
cancelled and the pool closed — well inside supervisor's stop timeout."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field

import trio

from ipamd import child
from ipamd.api import idempotency
from ipamd.api.app import create_app
from ipamd.api.token_cache import TokenCache
from ipamd.child import DnsDeliveryRole
from ipamd.config import Config
from ipamd.dhcp import expiry as dhcp_expiry
from ipamd.dns import delivery as dns_delivery
from ipamd.dns import embedded as dns_embedded
from ipamd.ops import service as ops_service
from ipamd.outbox import scheduler as outbox_scheduler
from ipamd.runtime import serving
from ipamd.runtime.api_processes import api_in_main_process, serve_api_workers
from ipamd.runtime.database import prepare_database
from ipamd.runtime.dhcp_servers import serve_dhcp, serve_dhcp6
from ipamd.runtime.node import Node, node_process
from ipamd.runtime.node import freeze_startup_objects as freeze_now
from ipamd.runtime.sampler import (
    DERIVE_CHURN_PER_SECOND,
    GC_CHURN_PER_SECOND,
    dhcp_at_ceiling,
    either,
    lease_churn,
)
from ipamd.runtime.supervision import Service, supervise
from ipamd.state import AppState
from ipamd.workers import gc_pacer, history_retention, housekeeping, lease_journal

log = logging.getLogger("ipamd")

MAIN_PROCESS_KINDS = ("webhook", "alert")


def _storm_services(state: AppState) -> list[tuple[str, Service]]:
    """What waits out a storm, each with signals of its own (each samples at its pace)."""
    # Every node: lease changes' history rows and outbox events (core/lease_events.py),
    # held back while this node's DHCP server is at its ceiling or commits lease changes
    # fast (a storm's DHCP first).
    journal = functools.partial(lease_journal.run, at_ceiling=either(
        dhcp_at_ceiling(state), lease_churn(state, DERIVE_CHURN_PER_SECOND)))
    # Full garbage collections (a pause that grows with the lease cache) wait out a storm,
    # and a stream of lease changes below the ceiling.
    pacer = functools.partial(gc_pacer.run, at_ceiling=either(
        dhcp_at_ceiling(state), lease_churn(state, GC_CHURN_PER_SECOND)))
    return [("lease_journal", journal), ("gc_pacer", pacer)]


def _outbox_services(state: AppState) -> list[tuple[str, Service]]:
    outbox = functools.partial(outbox_scheduler.run, kinds=MAIN_PROCESS_KINDS)
    # DNS updates are delivered by a child process at a lower CPU priority: a lease storm's
    # updates must not slow the storm's DHCP (ipamd/child). Started at the first queued DNS row.
    role = DnsDeliveryRole(busy=dhcp_at_ceiling(state), start_when=dns_delivery.wait_for_work)
    delivery = functools.partial(child.keep_running, spec=role)
    return [("outbox", outbox), ("dns_delivery", delivery)]


def services(state: AppState) -> list[tuple[str, Service]]:
    """Every background service of the appliance, in start order."""
    config = state.config
    housekeep = functools.partial(housekeeping.run, purge_keys=idempotency.purge_expired)
    found: list[tuple[str, Service]] = [("housekeeping", housekeep),
                                        ("history_retention", history_retention.run)]
    found += _storm_services(state)
    if config.outbox.enabled:
        found += _outbox_services(state)
    if config.dns.enabled:
        found.append(("dns", dns_embedded.run))
    if config.dhcp.enabled:
        found.append(("dhcp", serve_dhcp))
    if config.dhcp6.enabled:
        found.append(("dhcp6", serve_dhcp6))  # the same lease store as DHCPv4
    if config.dhcp.enabled or config.dhcp6.enabled:
        found.append(("dhcp_expiry", dhcp_expiry.run))  # ends DHCPv4 and DHCPv6 leases
    if config.ops.enabled:
        found.append(("ops", ops_service.run))  # node heartbeat + alert evaluator
    return found


@dataclass
class Running:
    state: AppState
    binds: list[str]
    stop: trio.Event
    # The API's verified tokens (tests watch it take a token change).
    token_cache: TokenCache
    done: trio.Event = field(default_factory=trio.Event)

    def url(self, scheme: str) -> str:
        return next(b for b in self.binds if b.startswith(scheme + "://"))


async def _serve_api(node: Node, token_cache: TokenCache, done: trio.Event, *,
                     task_status: trio.TaskStatus[list[str]]) -> None:
    """The API, here or in worker processes (api_in_main_process); ``done`` once drained."""
    state = node.state
    try:
        if not api_in_main_process(state.config):
            await serve_api_workers(state, node.stop, task_status=task_status)
            return
        app = create_app(state, token_cache)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(token_cache.follow, state.db)
            await serving.serve_in_main_process(app, state.config, node.stop,
                                                task_status=task_status)
            nursery.cancel_scope.cancel()
    finally:
        done.set()


async def run(
    config: Config,
    *,
    handle_signals: bool = True,
    freeze_startup_objects: bool | None = None,
    task_status: trio.TaskStatus[Running] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The appliance process. With handle_signals=False (tests), set ``Running.stop`` to end.

    freeze_startup_objects (default: as handle_signals, i.e. in the real process) moves
    everything alive once the appliance is ready out of the cyclic collector's reach.
    """
    freeze = handle_signals if freeze_startup_objects is None else freeze_startup_objects
    async with node_process(config, prepare_database) as node:
        state = node.state
        if handle_signals:
            # From here on: the API may serve (and its workers run) before every service
            # has started, and a SIGTERM then must stop them, not kill us.
            node.watch_signals()
        api_done, token_cache = trio.Event(), TokenCache()
        binds = await node.nursery.start(_serve_api, node, token_cache, api_done)
        state.api_binds = list(binds)
        state.running_services["api"] = True
        for name, service in services(state):
            await node.nursery.start(supervise, name, service, state)
        if freeze:
            freeze_now()
        log.info("ipamd ready: %s", ", ".join(binds))
        task_status.started(Running(state=state, binds=binds, stop=node.stop,
                                    token_cache=token_cache))
        await node.stop_with(api_done, config.api.graceful_timeout_seconds + 2)
    log.info("ipamd stopped")

