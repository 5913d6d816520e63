"""The ops service: this node's registration and heartbeat, the alert evaluator, and the
pool use sampler (ops/pool_samples.py).

Every node heartbeats; every node also evaluates the alert rules, but the evaluation takes a
transaction-scoped advisory lock, so two nodes never judge the same moment twice.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid
from typing import Any

import trio

from ipamd import __version__
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.ops import alerts, nodes, pool_samples
from ipamd.state import AppState

log = logging.getLogger("ipamd.ops")


def node_name(state: AppState) -> str:
    return state.config.node_name or socket.gethostname()


def _addresses(state: AppState) -> dict[str, Any]:
    found: dict[str, Any] = {"api": list(state.api_binds)}
    if state.dhcp is not None:
        found["dhcp"] = [f"{host}:{port}" for host, port in state.dhcp.addresses]
    if state.dhcp6 is not None:
        found["dhcp6"] = [f"[{host}]:{port}" for host, port in state.dhcp6.addresses]
    return found


def _dhcp(state: AppState) -> dict[str, Any] | None:
    return None if state.dhcp is None else state.dhcp.counters_snapshot()


class Heartbeat:
    def __init__(self, state: AppState) -> None:
        self.state = state
        self.name = node_name(state)
        self.node_id: uuid.UUID | None = None
        self._log = Throttle(log)

    async def register(self) -> None:
        started = dt.datetime.fromtimestamp(self.state.started_at, dt.UTC)
        self.node_id = await self.state.db.run(
            nodes.register, self.name, __version__, os.getpid(), started,
            _addresses(self.state), dict(self.state.running_services), _dhcp(self.state),
        )

    async def beat(self) -> None:
        try:
            if self.node_id is None:
                await self.register()
                return
            alive = await self.state.db.run(
                nodes.heartbeat, self.node_id, _addresses(self.state),
                dict(self.state.running_services), _dhcp(self.state),
            )
            if not alive:
                log.info("node %s was retired while running: registering again", self.name)
                await self.register()
        except DB_ERRORS as error:
            log_failure(self._log, error, "node heartbeat failed: %s", error)

    async def stop(self) -> None:
        if self.node_id is None:
            return
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            try:
                await self.state.db.run(nodes.stopped, self.node_id)
            except Exception as error:  # the silence marks it down anyway
                log.info("node %s could not record its stop: %s", self.name, error)


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    config = state.config.ops
    heart = Heartbeat(state)
    evaluator = alerts.Evaluator(state)
    sampler = pool_samples.Sampler(state)
    task_status.started()
    await heart.beat()  # registers (after started(), so "ops" shows as running)
    try:
        next_eval = next_sample = trio.current_time()
        while True:
            now = trio.current_time()
            if now >= next_eval:
                await evaluator.tick()
                next_eval = now + config.alert_interval_seconds
            if now >= next_sample:
                await sampler.tick()
                next_sample = now + config.pool_sample_seconds
            due = min(next_eval, next_sample)
            await trio.sleep(min(config.heartbeat_seconds, max(due - now, 0.05)))
            await heart.beat()
    finally:
        await heart.stop()
