"""trio.run → one nursery hosting the API, the DHCP server, the outbox and the periodic workers.

Start-up order: asyncio loop (for asyncpg) → database (wait, create, migrate) →
nursery: API (started with nursery.start, so readiness is real) → services.
SIGTERM/SIGINT: the API drains (hypercorn's shutdown trigger), then everything
else is cancelled and the pool closed — well inside supervisor's stop timeout.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import signal
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.config import Sockets
from hypercorn.trio import serve
from hypercorn.utils import repr_socket_addr

from ipamd import child
from ipamd.api import balance, http1, idempotency
from ipamd.api import workers as api_workers
from ipamd.api.app import create_app
from ipamd.api.balance import ConnectionShare
from ipamd.api.conncap import ConnectionCaps
from ipamd.api.token_cache import TokenCache
from ipamd.config import Config, ConfigError, redact_dsn
from ipamd.db.bridge import Database, DatabaseRefused, asyncio_loop, run_once
from ipamd.db.cluster import Cluster, find_bin_dir
from ipamd.db.migrate import migrate
from ipamd.db.outage import is_connection_loss
from ipamd.dhcp import expiry as dhcp_expiry
from ipamd.dhcp import server as dhcp_server
from ipamd.dhcp.sockets import interface_addresses
from ipamd.dhcp6 import server as dhcp6_server
from ipamd.dns import delivery as dns_delivery
from ipamd.dns import embedded as dns_embedded
from ipamd.ops import service as ops_service
from ipamd.ops.metrics import ApiLatency
from ipamd.outbox import scheduler as outbox_scheduler
from ipamd.outbox.gate import Gate
from ipamd.state import AppState, DhcpControl
from ipamd.tls import ensure_self_signed, harden_server_context, load_pair
from ipamd.workers import gc_pacer, history_retention, housekeeping, lease_journal

log = logging.getLogger("ipamd")

# A long-running service: ``await service(state, task_status=...)``; it calls
# task_status.started() once ready and runs until cancelled.
Service = Callable[..., Awaitable[None]]


MAIN_PROCESS_KINDS = ("webhook", "alert")
DNS_DELIVERY = "dns-delivery"
API_WORKER = "api-worker"
API_WORKER_REPORT_SECONDS = 1.0  # its request latency, for the node's /metrics


def _dns_delivery(gate: Gate) -> Service:
    return functools.partial(outbox_scheduler.run, extra_handlers=dns_delivery.handlers,
                             kinds=("dns",), purge=False, gate=gate,
                             stage=dns_delivery.expand_staged)


# role → the service a child process runs (``ipamd child ROLE``; see child.py), given the
# gate its parent's busy/idle lines open and close
CHILD_ROLES: dict[str, Callable[[Gate], Service]] = {DNS_DELIVERY: _dns_delivery}


def running_dhcp(state: AppState) -> list[DhcpControl]:
    """This node's running DHCP servers: DHCPv4's and DHCPv6's, either or both."""
    return [server for server in (state.dhcp, state.dhcp6) if server is not None]


class DhcpAtCeiling:
    """Is this node's DHCP server at its ceiling? Busy once, for at least BUSY_ABOVE of a
    sample interval, every commit worker was busy while ops waited for one (the database is
    the limit) or its receive loop never waited for a packet (the process is); idle again
    only after IDLE_AFTER_SECONDS below IDLE_BELOW, so a storm's short lulls do not let the
    held-back work in."""

    BUSY_ABOVE = 0.5
    IDLE_BELOW = 0.25
    IDLE_AFTER_SECONDS = 1.0

    def __init__(self, state: AppState) -> None:
        self.state = state
        self.busy = False
        # (time, the two figures, how many servers gave them)
        self._last: tuple[float, float, float, int] | None = None
        self._calm_since: float | None = None

    def __call__(self) -> bool:
        servers, now = running_dhcp(self.state), trio.current_time()
        if not servers:
            self._last, self.busy = None, False
            return False
        # Both servers share this process and the database: their figures add up.
        saturated = sum(server.saturated_seconds() for server in servers)
        receiving = sum(server.receiving_seconds() for server in servers)
        last, self._last = self._last, (now, saturated, receiving, len(servers))
        if last is None or now <= last[0] or last[3] != len(servers):
            return self.busy
        share = max(saturated - last[1], receiving - last[2]) / (now - last[0])
        if share >= self.BUSY_ABOVE:
            self.busy, self._calm_since = True, None
        elif self.busy and share < self.IDLE_BELOW:
            self._calm_since = self._calm_since or now
            if now - self._calm_since >= self.IDLE_AFTER_SECONDS:
                self.busy, self._calm_since = False, None
        else:
            self._calm_since = None
        return self.busy


# Lease changes a second that make a storm below the ceiling, for what waits one out.
# Full garbage collections: each walks the whole lease cache (LeaseChurn's docstring).
GC_CHURN_PER_SECOND = 500.0
# The lease journal's deriver: it costs PostgreSQL 35-40 µs of CPU a change, as much as the
# change's own commit, so from this rate on it would take a tenth of a core from the storm's
# clients. In lab runs at 9,000 DORA/s, still under the ceiling, it ran through the storm in
# 50 ms rounds and took a third of the database's CPU (2026-11-29).
DERIVE_CHURN_PER_SECOND = 2_000.0


class LeaseChurn:
    """Is this node's DHCP server writing lease changes fast: at least ``per_second``
    committed since the last look; calm again only after IDLE_AFTER_SECONDS below it.

    A storm below the ceiling (DhcpAtCeiling says no) still grows the lease cache, and every
    25 % it grows sets off a full garbage collection that walks all of it: 19-60 ms at
    40,000-80,000 leases, the receive loop stopped, in lab runs at 8,000-9,000 DORA/s, and
    perfdhcp's socket overflowed within 80 ms of each (gc.callbacks against the relay
    namespace's RcvbufErrors, 2026-11-29). Held while only the cache grew, the collection ran
    as soon as the clients came back for the addresses they had (renewals: no growth, the
    same load) and overflowed it again; so the signal is the rate of changes, whatever they
    are. A network's steady renewals stay far below it (100,000 clients on one-hour leases
    renew ~60 a second): GC_CHURN_PER_SECOND for the gc pacer, DERIVE_CHURN_PER_SECOND for
    the lease journal's deriver.
    """

    IDLE_AFTER_SECONDS = 1.0

    def __init__(self, state: AppState, per_second: float) -> None:
        self.state = state
        self.per_second = per_second
        self.busy = False
        self._last: tuple[float, int, int] | None = None  # (time, changes so far, servers)
        self._calm_since: float | None = None

    def __call__(self) -> bool:
        servers, now = running_dhcp(self.state), trio.current_time()
        if not servers:
            self._last, self.busy, self._calm_since = None, False, None
            return False
        changes = sum(server.lease_changes() for server in servers)
        last, self._last = self._last, (now, changes, len(servers))
        if last is None or now <= last[0] or last[2] != len(servers):
            return self.busy
        if (changes - last[1]) / (now - last[0]) >= self.per_second:
            self.busy, self._calm_since = True, None
        elif self.busy:
            self._calm_since = self._calm_since or now
            if now - self._calm_since >= self.IDLE_AFTER_SECONDS:
                self.busy, self._calm_since = False, None
        return self.busy


def either(*signals: Callable[[], bool]) -> Callable[[], bool]:
    """True when any signal is; each is asked every time (each samples what it watches)."""
    def ask() -> bool:
        answers = [signal() for signal in signals]
        return any(answers)

    return ask


# A child's transactions (claims, outcomes) do not wait for their WAL flush: they would
# queue behind the DHCP server's lease commits, which do. A crash may forget the last
# fraction of a second of them; the rows then come back and are delivered again, which
# at-least-once delivery allows (a DNS update is idempotent). Leases stay fully durable.
CHILD_SESSION_SETTINGS = {"synchronous_commit": "off", "application_name": "ipamd-child"}


def services(state: AppState) -> list[tuple[str, Service]]:
    """Every background service of the appliance, in start order."""
    housekeep = functools.partial(housekeeping.run, purge_keys=idempotency.purge_expired)
    found: list[tuple[str, Service]] = [("housekeeping", housekeep)]
    found.append(("history_retention", history_retention.run))
    # Every node: lease changes' history rows and outbox events (core/lease_events.py),
    # held back while this node's DHCP server is at its ceiling or commits lease changes
    # fast (a storm's DHCP first).
    found.append(("lease_journal", functools.partial(lease_journal.run, at_ceiling=either(
        DhcpAtCeiling(state), LeaseChurn(state, DERIVE_CHURN_PER_SECOND)))))
    # Full garbage collections (a pause that grows with the lease cache) wait out a storm,
    # and a stream of lease changes below the ceiling.
    found.append(("gc_pacer", functools.partial(
        gc_pacer.run, at_ceiling=either(DhcpAtCeiling(state),
                                       LeaseChurn(state, GC_CHURN_PER_SECOND)))))
    if state.config.outbox.enabled:
        outbox = functools.partial(outbox_scheduler.run, kinds=MAIN_PROCESS_KINDS)
        found.append(("outbox", outbox))
        # DNS updates are delivered by a child process at a lower CPU priority: a lease
        # storm's updates must not slow the storm's DHCP (child.py). Started at the first
        # queued DNS row.
        found.append(("dns_delivery", functools.partial(
            child.keep_running, role=DNS_DELIVERY, start_when=dns_delivery.wait_for_work,
            busy=DhcpAtCeiling(state))))
    if state.config.dns.enabled:
        found.append(("dns", dns_embedded.run))
    if state.config.dhcp.enabled:
        found.append(("dhcp", dhcp_server.run))
    if state.config.dhcp6.enabled:
        found.append(("dhcp6", dhcp6_server.run))  # the same lease store (issue 49)
    if state.config.dhcp.enabled or state.config.dhcp6.enabled:
        found.append(("dhcp_expiry", dhcp_expiry.run))  # ends DHCPv4 and DHCPv6 leases
    if state.config.ops.enabled:
        found.append(("ops", ops_service.run))  # node heartbeat + alert evaluator (issue 14)
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


def database_dsn(config: Config) -> str:
    if config.database.dsn:
        return config.database.dsn
    return bundled_cluster(config).dsn(config.database.name)


def bundled_cluster(config: Config) -> Cluster:
    db = config.database
    return Cluster(
        data_dir=config.path(db.data_dir),
        socket_dir=config.path(db.socket_dir),
        bin_dir=find_bin_dir(db.bin_dir),
        superuser=db.user,
    )


async def _create_database(conn: asyncpg.Connection, name: str) -> bool:
    if await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
        return False
    # Identifiers cannot be parameters; the name comes from the TOML file and is quoted.
    await conn.execute(f'CREATE DATABASE "{name.replace(chr(34), "")}"')
    return True


async def prepare_database(config: Config) -> Database:
    """Connect (waiting for Postgres), create the bundled database if needed, migrate."""
    dsn = database_dsn(config)
    timeout = config.database.connect_timeout_seconds
    if config.database.bundled:
        admin = bundled_cluster(config).dsn("postgres")
        with trio.fail_after(timeout):
            while True:
                try:
                    if await run_once(admin, _create_database, config.database.name):
                        log.info("created database %s", config.database.name)
                    break
                except (OSError, asyncpg.PostgresError) as error:
                    log.info("waiting for bundled postgres: %s", error.__class__.__name__)
                    await trio.sleep(0.5)
    try:
        db = await Database.connect(
            dsn, min_size=config.database.pool_min, max_size=config.database.pool_max,
            timeout=timeout,
        )
    except DatabaseRefused as error:
        where = (f"database.dsn = {redact_dsn(dsn)}" if config.database.dsn
                 else "the bundled postgres (database.user, database.name)")
        raise DatabaseRefused(f"the database refused the connection ({error}); "
                              f"check {where}") from None
    applied = await db.run(migrate)
    if applied:
        log.info("applied migrations %s", applied)
    return db


class _ServerConfig(HypercornConfig):
    """hypercorn's configuration, with its TLS context adding to Python's defaults instead of
    replacing them (tls.harden_server_context)."""

    def create_ssl_context(self) -> ssl.SSLContext | None:
        context = super().create_ssl_context()
        return None if context is None else harden_server_context(context)


def hypercorn_config(config: Config) -> HypercornConfig:
    hc = _ServerConfig()
    hc.graceful_timeout = config.api.graceful_timeout_seconds
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")
    # Read by api/http1.py: between requests, and for a request's whole head.
    hc.keep_alive_timeout = config.api.idle_timeout_seconds
    hc.ssl_handshake_timeout = config.api.tls_handshake_timeout_seconds
    # HTTP/1.1 only: hypercorn's h2 would serve a connection outside every bound of
    # api/http1.py (head size, pipelining, idle deadlines, the rate limit before the app);
    # the console and the scripts speak HTTP/1.1.
    hc.alpn_protocols = ["http/1.1"]
    if config.api.public_enabled and config.api.public_listen:
        if config.api.tls_cert and config.api.tls_key:
            cert, key = config.path(config.api.tls_cert), config.path(config.api.tls_key)
            try:
                load_pair(cert, key)
            except (OSError, ValueError) as error:
                # Named here, not as a traceback from deep inside hypercorn's TLS set-up.
                raise ConfigError(f"api.tls_cert / api.tls_key: {error}") from None
        else:
            cert, key = ensure_self_signed(config.path(config.state_dir) / "tls",
                                           interface_addresses())
        hc.certfile, hc.keyfile = str(cert), str(key)
        hc.bind = list(config.api.public_listen)
        hc.insecure_bind = [config.api.loopback_listen]
    else:
        hc.bind = [config.api.loopback_listen]
    return hc


async def _serve_api(
    state: AppState, token_cache: TokenCache, stop: trio.Event, *,
    task_status: trio.TaskStatus[list[str]],
) -> None:
    app = create_app(state, token_cache)
    http1.install(connection_caps(state.config))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(token_cache.follow, state.db)
        await serve(app, hypercorn_config(state.config), shutdown_trigger=stop.wait,
                    task_status=task_status)
        nursery.cancel_scope.cancel()


def connection_caps(config: Config) -> ConnectionCaps:
    """This API process's caps (api/conncap.py)."""
    return ConnectionCaps(config.api.max_connections_per_address,
                          config.api.max_connections_per_worker)


def api_in_main_process(config: Config) -> bool:
    """Does the main process serve the API itself? Only with one API process and no server
    here that answers the network (DHCP, the embedded DNS): the API never shares their
    event loop, so nothing sent to it (a head that never ends, a pipelining flood, idle
    connections by the hundred) can delay their answers (issue 48); its worker is a
    process of its own."""
    return config.api.worker_count == 1 and not (config.dhcp.enabled or config.dhcp6.enabled
                                                 or config.dns.enabled)


def _bind_url(scheme: str, sock: socket.socket) -> str:
    return f"{scheme}://{repr_socket_addr(sock.family, sock.getsockname())}"


def _worker_sockets(hc: HypercornConfig) -> tuple[Sockets, list[str]]:
    """The listening sockets every API worker accepts from, and their URLs (a port 0 in the
    configuration, as the tests use, is resolved here). How the workers share the
    connections is api/balance.py's rule, not the kernel's."""
    sockets = hc.create_sockets()
    for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
        sock.listen(hc.backlog)
    binds = ([_bind_url("https", s) for s in sockets.secure_sockets]
             + [_bind_url("http", s) for s in sockets.insecure_sockets])
    return sockets, binds


async def _api_worker(share: ConnectionShare, slot: int, state: AppState, *,
                      task_status: trio.TaskStatus[None], **kwargs: Any) -> None:
    """One API worker process (child.keep_running); once it has ended, however it ended,
    its connections are gone and the others stop waiting for it (api/balance.py)."""
    try:
        await child.keep_running(state, task_status=task_status, **kwargs)
    finally:
        share.retire(slot)


async def _serve_api_workers(
    state: AppState, stop: trio.Event, *, task_status: trio.TaskStatus[list[str]],
) -> None:
    """The API in worker processes (not api_in_main_process): that many, all accepting from
    the listening sockets bound here (so a restarted worker finds the backlog waiting) and
    sharing the connections evenly (api/balance.py). Each is a supervised service (restarted
    if it dies); they ask this process for what they share (api/workers.py). On stop each
    drains its requests, as the API would here."""
    config = state.config
    count = config.api.worker_count
    sockets, binds = _worker_sockets(hypercorn_config(config))
    share = ConnectionShare.create(count)
    secure = [s.fileno() for s in sockets.secure_sockets]
    plain = [s.fileno() for s in sockets.insecure_sockets]
    limits = api_workers.LocalLimits()
    try:
        async with trio.open_nursery() as nursery:
            for n in range(1, count + 1):
                worker = functools.partial(
                    _api_worker, share, n - 1, role=API_WORKER, name=f"api-{n}",
                    args=["--https-fds", ",".join(map(str, secure)),
                          "--http-fds", ",".join(map(str, plain)),
                          "--share-fd", str(share.fd), "--slot", str(n - 1)],
                    pass_fds=[*secure, *plain, share.fd],
                    calls=functools.partial(api_workers.answer, state, limits),
                    pushes=functools.partial(api_workers.push, state), ready_on_report=True,
                    stop_grace=config.api.graceful_timeout_seconds + 2)
                await nursery.start(supervise, f"api-{n}", worker, state)
            task_status.started(binds)
            await stop.wait()
            nursery.cancel_scope.cancel()  # each worker is told to stop, and drains
    finally:
        for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
            sock.close()
        share.close()


class _Readiness:
    """Forwards the first started() to the parent nursery and remembers that it happened."""

    def __init__(self, task_status: trio.TaskStatus[None]) -> None:
        self._task_status = task_status
        self.ready = False

    def started(self, value: None = None) -> None:
        if not self.ready:
            self.ready = True
            self._task_status.started(value)


async def supervise(
    name: str, service: Service, state: AppState, *, task_status: trio.TaskStatus[None]
) -> None:
    """Run a service; a crash after start-up is logged and the service restarted with backoff.

    A failure before it reports ready propagates: the appliance does not start half-built.
    A service that ran for a minute or more starts again from the shortest delay.
    """
    readiness = _Readiness(task_status)
    delay = 0.5
    _mark(state, name, False)
    while True:
        began = trio.current_time()
        try:
            await _observed(name, service, state, readiness)
            log.warning("service %s returned; restarting", name)
        except Exception as error:
            if not readiness.ready:
                raise
            if is_connection_loss(error):  # expected; the Database's Outage logged it once
                log.info("service %s stopped: database unreachable; restarting in %.1fs",
                         name, delay)
            elif isinstance(error, child.ChildExited):  # its traceback was the child's own
                log.warning("service %s: %s; restarting in %.1fs", name, error, delay)
            else:
                log.exception("service %s crashed; restarting in %.1fs", name, delay)
        if trio.current_time() - began >= 60:
            delay = 0.5
        await trio.sleep(delay)
        delay = min(delay * 2, 30.0)


async def _observed(name: str, service: Service, state: AppState, readiness: _Readiness) -> None:
    """Run the service once; state.running_services[name] is True from its started() to its end."""

    class _Mark:
        def started(self, value: None = None) -> None:
            _mark(state, name, True)
            readiness.started(value)

    try:
        await service(state, task_status=_Mark())
    finally:
        _mark(state, name, False)


def _mark(state: AppState | None, name: str, running: bool) -> None:
    if state is not None:  # (unit tests supervise with no state)
        state.running_services[name] = running


async def _watch_signals(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s: stopping", signal.Signals(signum).name)
            stop.set()
            return


def _freeze_startup_objects() -> None:
    """Modules, the app, plans, pools: ~100k objects that live as long as the process.
    Frozen, a collection walks only what requests made since (outbox burst: GC time 0.40 →
    0.22 s of 7.6 s CPU), and no full collection stalls a DHCP answer on them. Not in
    test processes, which start many appliances: their cycles must stay collectable."""
    gc.collect()
    gc.freeze()


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
    async with asyncio_loop():
        db = await prepare_database(config)
        try:
            state = AppState(config=config, db=db)
            stop = trio.Event()
            async with trio.open_nursery() as nursery:
                if handle_signals:
                    # From here on: the API may serve (and its workers run) before every
                    # service has started, and a SIGTERM then must stop them, not kill us.
                    nursery.start_soon(_watch_signals, stop)
                api_done = trio.Event()
                token_cache = TokenCache()

                async def api(*, task_status: trio.TaskStatus[list[str]]) -> None:
                    try:
                        if api_in_main_process(config):
                            await _serve_api(state, token_cache, stop, task_status=task_status)
                        else:
                            await _serve_api_workers(state, stop, task_status=task_status)
                    finally:
                        api_done.set()

                binds = await nursery.start(api)
                state.api_binds = list(binds)
                state.running_services["api"] = True
                for name, service in services(state):
                    await nursery.start(supervise, name, service, state)
                running = Running(state=state, binds=binds, stop=stop, token_cache=token_cache)
                freeze = (handle_signals if freeze_startup_objects is None
                          else freeze_startup_objects)
                if freeze:
                    _freeze_startup_objects()
                log.info("ipamd ready: %s", ", ".join(binds))
                task_status.started(running)
                await stop.wait()
                with trio.move_on_after(config.api.graceful_timeout_seconds + 2):
                    await api_done.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await db.close()
    log.info("ipamd stopped")


def _child_report(state: AppState) -> dict[str, object]:
    """What a child tells its parent's metrics: its outbox outcomes and latency by kind."""
    latency = state.counters.get("outbox_latency") or {}
    return {"pid": os.getpid(), "outbox": dict(state.counters.get("outbox") or {}),
            "outbox_latency": {kind: {"counts": h.counts, "total": h.total, "count": h.count}
                               for kind, h in latency.items()}}


async def run_api_worker(config: Config, https_fds: list[int], http_fds: list[int],
                         share: ConnectionShare) -> None:
    """An API worker process (``ipamd child api-worker``): the API on the
    listening sockets its parent passed, on a pool of its own, until its parent closes
    stdin (or dies) or a signal asks it to stop; then it drains, as the API does in one
    process. What the workers share goes through the parent (api/workers.py); it takes
    connections by ``share``'s rule (api/balance.py)."""
    link = child.ParentLink()
    async with asyncio_loop():
        db = await Database.connect(database_dsn(config), min_size=config.database.pool_min,
                                    max_size=config.database.pool_max,
                                    timeout=config.database.connect_timeout_seconds)
        try:
            state = AppState(config=config, db=db, main_process=link)
            stop, pushed = trio.Event(), trio.Event()
            token_cache = TokenCache()
            latency = state.counters.setdefault("api_latency", ApiLatency())

            def on_push(value: object) -> None:
                api_workers.apply_push(state, link, value)
                pushed.set()

            async with trio.open_nursery() as nursery:
                async def parent_gone() -> None:
                    await link.follow(on_push=on_push)
                    stop.set()

                nursery.start_soon(parent_gone)
                nursery.start_soon(_watch_signals, stop)
                nursery.start_soon(token_cache.follow, state.db)
                await pushed.wait()  # state.dhcp as the parent has it, before any request
                # One worker keeps the rate limits itself (no round trip to the main
                # process per request); several share the main process's.
                limits = (api_workers.LocalLimits() if config.api.worker_count == 1
                          else api_workers.MainLimits(link))
                app = create_app(state, token_cache, limits)
                http1.install(connection_caps(config))
                balance.install(share)
                hc = hypercorn_config(config)
                hc.bind = [f"fd://{fd}" for fd in https_fds]
                hc.insecure_bind = [f"fd://{fd}" for fd in http_fds]
                if not https_fds:
                    hc.bind, hc.insecure_bind = hc.insecure_bind, []
                served = trio.Event()

                async def serving(*, task_status: trio.TaskStatus[list[str]]) -> None:
                    share.start_serving()
                    try:
                        await serve(app, hc, shutdown_trigger=stop.wait,
                                    task_status=task_status)
                    finally:
                        share.stop_serving()
                        served.set()

                await nursery.start(serving)
                _freeze_startup_objects()
                # The first report tells the parent this worker serves.
                reporter = child.Reporter(lambda: {"pid": os.getpid(),
                                                   "api_latency": latency.report()}, link,
                                          every=API_WORKER_REPORT_SECONDS)
                nursery.start_soon(reporter.run)
                await stop.wait()
                with trio.move_on_after(config.api.graceful_timeout_seconds + 1):
                    await served.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await db.close()


async def run_child(config: Config, role: str) -> None:
    """A child process (``ipamd child ROLE``, started by child.keep_running): the role's
    service on a small pool of its own, at the configured lower CPU priority, until its
    parent closes stdin (or dies) or a signal asks it to stop. The parent migrated."""
    # Held back until the parent's first word: it may start the child in a storm.
    gate = Gate(config.outbox.dns_storm_updates_per_second, busy=True)
    service = CHILD_ROLES[role](gate)
    child.lower_priority(config.outbox.dns_delivery_nice)
    async with asyncio_loop():
        db = await Database.connect(database_dsn(config), min_size=1, max_size=4,
                                    timeout=config.database.connect_timeout_seconds,
                                    settings=CHILD_SESSION_SETTINGS)
        try:
            state = AppState(config=config, db=db)
            stop = trio.Event()
            async with trio.open_nursery() as nursery:
                await nursery.start(supervise, role, service, state)
                reporter = child.Reporter(functools.partial(_child_report, state))
                nursery.start_soon(reporter.run)
                nursery.start_soon(_watch_signals, stop)

                async def parent_gone() -> None:
                    await child.follow_parent(gate.set_busy)
                    stop.set()

                nursery.start_soon(parent_gone)
                await stop.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await db.close()
