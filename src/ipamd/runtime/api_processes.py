"""The API in worker processes: the main process's side (``serve_api_workers``: the
listening sockets, one supervised child per worker) and the worker's (``run_api_worker``).
Where the API runs at all is ``api_in_main_process``'s rule."""

from __future__ import annotations

import functools
import os
from typing import Any

import trio

from ipamd import child
from ipamd.api import workers as api_workers
from ipamd.api.app import create_app
from ipamd.api.balance import ConnectionShare
from ipamd.api.token_cache import TokenCache
from ipamd.child import ApiWorkerRole
from ipamd.config import Config
from ipamd.messages import Push, Report
from ipamd.ops import metrics
from ipamd.runtime import serving
from ipamd.runtime.database import connect
from ipamd.runtime.node import Node, freeze_startup_objects, node_process
from ipamd.runtime.supervision import supervise
from ipamd.state import AppState

API_WORKER_REPORT_SECONDS = 1.0  # its request latency, for the node's /metrics


def api_in_main_process(config: Config) -> bool:
    """Does the main process serve the API itself? Only with one API process and no server
    here that answers the network (DHCP, the embedded DNS): the API never shares their
    event loop, so nothing sent to it (a head that never ends, a pipelining flood, idle
    connections by the hundred) can delay their answers
    (tests/integration/dhcp/test_api_isolation.py); its worker is a process of its own."""
    return config.api.worker_count == 1 and not (config.dhcp.enabled or config.dhcp6.enabled
                                                 or config.dns.enabled)


# ------------------------------------------------------------------ the main process's side


async def _api_worker(share: ConnectionShare, spec: ApiWorkerRole, state: AppState, *,
                      task_status: trio.TaskStatus[None]) -> None:
    """One API worker process (child.keep_running); once it has ended, however it ended,
    its connections are gone and the others stop waiting for it (api/balance.py)."""
    try:
        await child.keep_running(state, spec, task_status=task_status)
    finally:
        share.retire(spec.slot)


def _worker_role(state: AppState, n: int, bound: serving.Listeners, share: ConnectionShare,
                 answers: api_workers.Answers) -> ApiWorkerRole:
    return ApiWorkerRole(
        name=f"api-{n}", slot=n - 1, https_fds=tuple(s.fileno() for s in bound.secure),
        http_fds=tuple(s.fileno() for s in bound.plain), share_fd=share.fd, calls=answers,
        pushes=lambda: api_workers.push(state),
        stop_grace=state.config.api.graceful_timeout_seconds + 2)


async def serve_api_workers(
    state: AppState, stop: trio.Event, *, task_status: trio.TaskStatus[list[str]],
) -> None:
    """The API in worker processes (not api_in_main_process): that many, all accepting from
    the listening sockets bound here and sharing the connections evenly (api/balance.py).
    Each is a supervised service (restarted if it dies); they ask this process for what
    they share (api/workers.py). On stop each drains its requests, as the API would here."""
    config = state.config
    count = config.api.worker_count
    bound = serving.listeners(config)
    share = ConnectionShare.create(count)
    answers = api_workers.Answers(state, api_workers.LocalLimits())
    try:
        async with trio.open_nursery() as nursery:
            for n in range(1, count + 1):
                spec = _worker_role(state, n, bound, share, answers)
                worker = functools.partial(_api_worker, share, spec)
                await nursery.start(supervise, spec.name, worker, state)
            task_status.started(bound.binds)
            await stop.wait()
            nursery.cancel_scope.cancel()  # each worker is told to stop, and drains
    finally:
        bound.close()
        share.close()


# ------------------------------------------------------------------ the worker's side


async def _follow_parent(node: Node, link: child.ParentLink, pushed: trio.Event) -> None:
    """The parent's pushes until it closes the pipe (or dies); then this worker stops."""

    def on_push(push: Push) -> None:
        api_workers.apply_push(node.state, link, push)
        pushed.set()

    await link.follow(link.inbox().on(Push, on_push))
    node.stop.set()


async def _serve(node: Node, app: Any, fds: tuple[list[int], list[int]],
                 share: ConnectionShare, served: trio.Event, *,
                 task_status: trio.TaskStatus[list[str]]) -> None:
    try:
        await serving.serve_in_worker(app, node.state.config, *fds, share, node.stop,
                                      task_status=task_status)
    finally:
        served.set()


async def run_api_worker(config: Config, https_fds: list[int], http_fds: list[int],
                         share: ConnectionShare) -> None:
    """An API worker process (``ipamd child api-worker``): the API on the listening sockets
    its parent passed, on a pool of its own, until its parent closes stdin (or dies) or a
    signal asks it to stop; then it drains, as the API does in one process. What the workers
    share goes through the parent (api/workers.py); it takes connections by ``share``'s
    rule (api/balance.py)."""
    link = child.ParentLink()
    async with node_process(config, connect, main_process=link) as node:
        state, pushed, served = node.state, trio.Event(), trio.Event()
        token_cache = TokenCache()
        latency = state.counters.api_latency
        node.nursery.start_soon(_follow_parent, node, link, pushed)
        node.watch_signals()
        node.nursery.start_soon(token_cache.follow, state.db)
        await pushed.wait()  # state.dhcp as the parent has it, before any request
        # One worker keeps the rate limits itself (no round trip to the main process per
        # request); several share the main process's.
        limits = (api_workers.LocalLimits() if config.api.worker_count == 1
                  else api_workers.MainLimits(link))
        app = create_app(state, token_cache, limits)
        await node.nursery.start(_serve, node, app, (https_fds, http_fds), share, served)
        freeze_startup_objects()
        # The first report tells the parent this worker serves.
        reporter = child.Reporter(
            lambda: Report(pid=os.getpid(), api_latency=metrics.latency_report(latency)),
            link, every=API_WORKER_REPORT_SECONDS)
        node.nursery.start_soon(reporter.run)
        await node.stop_with(served, config.api.graceful_timeout_seconds + 1)
