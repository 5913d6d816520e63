"""The DHCP servers as services: each built from what it needs (its configuration, the
database, the lease journal's pending marks) and, once it serves, registered by the
runtime as the node's typed handle (``state.dhcp`` / ``state.dhcp6``, a DhcpControl the API
and the workers reach it by) and its counters (``state.counters``, read by /metrics)."""

from __future__ import annotations

from collections.abc import Callable

import trio

from ipamd.dhcp.server import DhcpServer
from ipamd.dhcp6.server import Dhcp6Server
from ipamd.state import AppState


def dhcp_server(state: AppState) -> DhcpServer:
    return DhcpServer(state.config.dhcp, state.db, state.lease_journal,
                      node_name=state.config.node_name)


def dhcp6_server(state: AppState) -> Dhcp6Server:
    # One plan refresh for both servers: they share the plan holder's rhythm.
    return Dhcp6Server(state.config.dhcp6, state.db, state.lease_journal,
                       plan_refresh_seconds=state.config.dhcp.plan_refresh_seconds)


async def _registered(server: DhcpServer | Dhcp6Server, register: Callable[[bool], None],
                      task_status: trio.TaskStatus[None]) -> None:
    """Run ``server``; ``register(True)`` once it serves, ``register(False)`` when it ends."""
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            register(True)
            task_status.started()
    finally:
        register(False)


async def serve_dhcp(state: AppState, *, task_status: trio.TaskStatus[None],
                     server: DhcpServer | None = None) -> None:
    """The DHCPv4 service (runtime.services); ``server``: one built already (tests)."""
    running = server or dhcp_server(state)

    def register(serving: bool) -> None:
        if serving:
            state.dhcp, state.counters.dhcp = running, running.counters
        elif state.dhcp is running:
            state.dhcp = None  # (its counters stay: /metrics keeps the totals so far)

    await _registered(running, register, task_status)


async def serve_dhcp6(state: AppState, *, task_status: trio.TaskStatus[None],
                      server: Dhcp6Server | None = None) -> None:
    """The DHCPv6 service (runtime.services), beside the DHCPv4 one: the same lease store."""
    running = server or dhcp6_server(state)

    def register(serving: bool) -> None:
        if serving:
            state.dhcp6, state.counters.dhcp6 = running, running.counters
        elif state.dhcp6 is running:
            state.dhcp6 = None

    await _registered(running, register, task_status)
