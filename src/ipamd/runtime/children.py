"""Roles the appliance runs in child processes of its own (ipamd/child), other than the API
workers: the role → service table and a child's side, ``run_child``."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from ipamd import child
from ipamd.child import DNS_DELIVERY
from ipamd.config import Config
from ipamd.db.bridge import Database
from ipamd.dns import delivery as dns_delivery
from ipamd.messages import Busy, HistogramData, Report
from ipamd.outbox import scheduler as outbox_scheduler
from ipamd.outbox.gate import Gate
from ipamd.runtime.database import connect
from ipamd.runtime.node import node_process
from ipamd.runtime.supervision import Service, supervise
from ipamd.state import AppState

# A child's transactions (claims, outcomes) do not wait for their WAL flush: they would
# queue behind the DHCP server's lease commits, which do. A crash may forget the last
# fraction of a second of them; the rows then come back and are delivered again, which
# at-least-once delivery allows (a DNS update is idempotent). Leases stay fully durable.
CHILD_SESSION_SETTINGS = {"synchronous_commit": "off", "application_name": "ipamd-child"}
CHILD_POOL = (1, 4)  # (min, max) connections: one role, little concurrency


def _dns_delivery(gate: Gate) -> Service:
    return functools.partial(outbox_scheduler.run, extra_handlers=dns_delivery.handlers,
                             kinds=("dns",), purge=False, gate=gate,
                             stage=dns_delivery.expand_staged)


# role → the service a child process runs (``ipamd child ROLE``; see ipamd/child), given the
# gate its parent's Busy messages close and open
CHILD_ROLES: dict[str, Callable[[Gate], Service]] = {DNS_DELIVERY: _dns_delivery}


def _child_report(state: AppState) -> Report:
    """What a child tells its parent's metrics: its outbox outcomes and latency by kind."""
    latency = state.counters.outbox.latency
    return Report(pid=os.getpid(), outbox=dict(state.counters.outbox.outcomes),
                  outbox_latency={kind: HistogramData(counts=h.counts, total=h.total,
                                                      count=h.count)
                                  for kind, h in latency.items()})


async def _child_pool(config: Config) -> Database:
    return await connect(config, min_size=CHILD_POOL[0], max_size=CHILD_POOL[1],
                         settings=CHILD_SESSION_SETTINGS)


async def run_child(config: Config, role: str) -> None:
    """A child process (``ipamd child ROLE``, started by child.keep_running): the role's
    service on a small pool of its own, at the configured lower CPU priority, until its
    parent closes stdin (or dies) or a signal asks it to stop. The parent migrated."""
    # Held back until the parent's first word: it may start the child in a storm.
    gate = Gate(config.outbox.dns_storm_updates_per_second, busy=True)
    service = CHILD_ROLES[role](gate)
    child.lower_priority(config.outbox.dns_delivery_nice)
    link = child.ParentLink()
    inbox = link.inbox().on(Busy, lambda told: gate.set_busy(told.busy))
    async with node_process(config, _child_pool) as node:
        await node.nursery.start(supervise, role, service, node.state)
        reporter = child.Reporter(functools.partial(_child_report, node.state), link)
        node.nursery.start_soon(reporter.run)
        node.watch_signals()

        async def parent_gone() -> None:
            await link.follow(inbox)
            node.stop.set()

        node.nursery.start_soon(parent_gone)
        await node.stop.wait()
