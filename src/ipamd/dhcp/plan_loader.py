"""Loads the plan from Postgres and keeps it current.

One crossing reads every table the DHCP path needs. The holder reloads when the
``ipamd_dhcp_plan`` notification arrives (sent at commit by the triggers of migration
0003), when the version counter moved (the poll fallback: notifications can be lost),
and at a long safety interval.

``PlanHolder`` serves both servers: DHCPv4's plan by default, and whatever ``load`` (rows in
one crossing) and ``build`` (rows to a plan with a ``version``) the DHCPv6 server passes
(``dhcp6.plan_loader``): one channel, one version counter, one reload discipline.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import asyncpg
import trio

from ipamd.db.bridge import Database
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dhcp import plan as plan_mod
from ipamd.dhcp.settings import TRUSTED_RELAYS

log = logging.getLogger("ipamd.dhcp.plan")

CHANNEL = "ipamd_dhcp_plan"
# After a lost listener: how soon to LISTEN again (the poll covers the gap meanwhile).
LISTEN_RETRY_SECONDS = 0.5
_ZERO = "'0.0.0.0'::inet"

_SUBNETS = f"""
SELECT id, tenant_id, cidr::inet - {_ZERO} AS network, masklen(cidr) AS prefixlen,
       CASE WHEN family(gateway) = 4 THEN gateway - {_ZERO} END AS gateway,
       lease_time_seconds, min_lease_time_seconds, max_lease_time_seconds,
       ping_check, ping_timeout_ms,
       dhcp_enabled, next_server, boot_file, ddns_adapter,
       ddns_zone, ddns_server_id, shared_network_id,
       ARRAY(SELECT n - {_ZERO} FROM unnest(ntp_servers) AS n WHERE family(n) = 4)
           AS ntp_servers
FROM subnets WHERE family(cidr) = 4"""
_POOLS = f"""SELECT id, subnet_id, start_ip - {_ZERO} AS start_ip, end_ip - {_ZERO} AS end_ip,
                    class_id FROM pools WHERE family(start_ip) = 4"""
_EXCLUDES = f"""SELECT subnet_id, start_ip - {_ZERO} AS start_ip, end_ip - {_ZERO} AS end_ip
                FROM excludes WHERE family(start_ip) = 4"""
_RESERVATIONS = f"""SELECT id, subnet_id, ip - {_ZERO} AS ip, mac::text AS mac, duid, client_id,
                           hostname, next_server, boot_file
                    FROM reservations WHERE family(ip) = 4"""
_ASSIGNMENTS = f"SELECT subnet_id, ip - {_ZERO} AS ip FROM assignments WHERE family(ip) = 4"
# IPv6 subnets' options are DHCPv6 codes (core/option6_shapes.py): never a DHCPv4 option.
_OPTIONS = """SELECT subnet_id, code, payload, vendor_class FROM dhcp_options
              WHERE subnet_id IN (SELECT id FROM subnets WHERE family(cidr) = 4) ORDER BY id"""
_CLASSES = """SELECT id, name, match, value, priority, next_server, boot_file
               FROM client_classes ORDER BY id"""
# Options of the other scopes (docs/api-ipam.md, "Option scopes"): DHCPv4 codes only.
_CLASS_OPTIONS = """SELECT class_id, code, payload, vendor_class FROM dhcp_options
                    WHERE class_id IS NOT NULL ORDER BY id"""
_RESERVATION_OPTIONS = """
SELECT o.reservation_id, r.subnet_id, o.code, o.payload, o.vendor_class
FROM dhcp_options o JOIN reservations r ON r.id = o.reservation_id
WHERE family(r.ip) = 4 ORDER BY o.id"""
# The rows of one subnet (GET /subnets/{id}/effective-options): the queries above, narrowed.
_ONE_SUBNET = {"subnets": "id", "pools": "subnet_id", "excludes": "subnet_id",
               "reservations": "subnet_id", "assignments": "subnet_id", "options": "subnet_id",
               "reservation_options": "subnet_id"}
_QUERIES = (("subnets", _SUBNETS), ("pools", _POOLS), ("excludes", _EXCLUDES),
            ("reservations", _RESERVATIONS), ("assignments", _ASSIGNMENTS),
            ("options", _OPTIONS), ("classes", _CLASSES), ("class_options", _CLASS_OPTIONS),
            ("reservation_options", _RESERVATION_OPTIONS))


async def version(conn: asyncpg.Connection) -> int:
    number: int = await conn.fetchval("SELECT last_value FROM dhcp_plan_version")
    return number


async def load_rows(conn: asyncpg.Connection) -> dict[str, Any]:
    """Every row the plan is built from, in one repeatable-read snapshot."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        rows: dict[str, Any] = {"version": await version(conn)}
        for name, sql in _QUERIES:
            rows[name] = [dict(r) for r in await conn.fetch(sql)]
        relays = await conn.fetchval("SELECT value FROM settings WHERE key = $1", TRUSTED_RELAYS)
        rows["trusted_relays"] = [str(r) for r in relays] if isinstance(relays, list) else []
    return rows


async def load_subnet_rows(conn: asyncpg.Connection, subnet_id: uuid.UUID) -> dict[str, Any]:
    """What ``load_rows`` reads, for one subnet (and every class): the plan the server
    would build, small enough to build for one question."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        rows: dict[str, Any] = {"version": await version(conn), "trusted_relays": []}
        for name, sql in _QUERIES:
            column = _ONE_SUBNET.get(name)
            if column is None:
                found = await conn.fetch(sql)
            else:
                found = await conn.fetch(f"SELECT * FROM ({sql}) q WHERE q.{column} = $1",
                                         subnet_id)
            rows[name] = [dict(r) for r in found]
    return rows


class Versioned(Protocol):
    @property
    def version(self) -> int: ...


P = TypeVar("P", bound=Versioned)
_EMPTY_ROWS: dict[str, Any] = {
    "subnets": [], "pools": [], "excludes": [], "reservations": [], "assignments": [],
    "options": [], "classes": [], "version": -1}


class PlanHolder(Generic[P]):
    """The current plan; ``on_change`` callbacks run after each swap (same trio thread)."""

    def __init__(
        self, db: Database, refresh_seconds: float, poll_seconds: float = 2.0, *,
        load: Callable[[asyncpg.Connection], Awaitable[dict[str, Any]]] = load_rows,
        build: Callable[[dict[str, Any]], P] = plan_mod.build,  # type: ignore[assignment]  # default P: dhcp Plan
        empty: dict[str, Any] = _EMPTY_ROWS,
    ) -> None:
        self.db = db
        self._load = load
        self._build = build
        self.current: P = build(empty)
        self.refresh_seconds = refresh_seconds
        self.poll_seconds = poll_seconds
        self.on_change: list[Callable[[P], None]] = []
        self._wake = trio.Event()
        self._log = Throttle(log)

    async def reload(self) -> P:
        rows = await self.db.run(self._load)
        built = self._build(rows)
        self.current = built
        for callback in self.on_change:
            callback(built)
        log.debug("dhcp plan version %s", built.version)
        return built

    def request_reload(self) -> None:
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Initial load, then keep the plan current until cancelled."""
        await self.reload()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._listen)
            task_status.started()
            await self._refresh_loop()

    async def _listen(self) -> None:
        # A lost listener must not stop the server: the poll keeps working meanwhile.
        first = True
        while True:
            try:
                channel = await self.db.listen(CHANNEL)
                if not first:
                    # Listening again after a lost connection (restart, failover): changes
                    # notified meanwhile were not heard, so look once now.
                    self._wake.set()
                first = False
                try:
                    async for _payload in channel:
                        self._wake.set()
                finally:
                    with trio.CancelScope(shield=True):
                        await channel.release()
            except DB_ERRORS as error:
                log_failure(self._log, error, "plan listener lost (%s); retrying",
                            error.__class__.__name__)
            first = False
            await trio.sleep(LISTEN_RETRY_SECONDS)

    async def _refresh_loop(self) -> None:
        since_full = 0.0
        while True:
            with trio.move_on_after(self.poll_seconds):
                await self._wake.wait()
            woke = self._wake.is_set()
            self._wake = trio.Event()
            since_full += self.poll_seconds if not woke else 0.0
            try:
                if woke:
                    await trio.sleep(0.02)  # fold a burst of IPAM writes into one reload
                    await self.reload()
                elif since_full >= self.refresh_seconds or (
                    await self.db.run(version) != self.current.version
                ):
                    since_full = 0.0
                    await self.reload()
            except DB_ERRORS as error:
                log_failure(self._log, error, "plan reload failed (%s); keeping version %s",
                            error.__class__.__name__, self.current.version)
