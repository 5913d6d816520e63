"""Delivers outbox rows of kind dns: the row's change, applied by its server's adapter.

Plugged into the outbox scheduler by the runtime (``handlers``), so retries, backoff, the
Work view and Replay are the outbox's own. The DNS exchange happens outside any transaction;
a failure is the row's last_error (the server's answer first: REFUSED, NOTAUTH, BADSIG...),
which viewers read: the server's secret locations are taken out of it (core/secret_locations;
a Kerberos library may name the keytab), the full message goes to this node's log.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import trio

from ipamd.core.secret_locations import scrub
from ipamd.db.bridge import Notifications
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dns import change as change_mod
from ipamd.dns.ad_gsstsig import AdGssTsig
from ipamd.dns.adapter import Adapter, DnsFailure, Server
from ipamd.dns.bind_tsig import BindTsig
from ipamd.dns.powerdns_http import PowerDnsHttp
from ipamd.dns.servers import COLUMNS
from ipamd.outbox import queue
from ipamd.outbox.attempt import Attempt
from ipamd.outbox.backoff import Backoff
from ipamd.outbox.client import Client
from ipamd.outbox.queue import Job, Outcome
from ipamd.state import AppState

log = logging.getLogger("ipamd.dns")
_RETRY_SECONDS = 1.0


async def _server(
    conn: asyncpg.Connection, server_id: uuid.UUID, lease_id: uuid.UUID | None
) -> tuple[asyncpg.Record | None, str | None, str | None]:
    """The server, and the lease's state and fqdn now (None: no lease, or no such lease any
    more)."""
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM dns_servers WHERE id = $1", server_id)
    lease = None if lease_id is None else await conn.fetchrow(
        "SELECT state, fqdn FROM leases WHERE lease_id = $1", lease_id)
    return row, None if lease is None else lease["state"], None if lease is None else lease["fqdn"]


def _same_name(a: str, b: str) -> bool:
    return a.rstrip(".").lower() == b.rstrip(".").lower()


def superseded(change: change_mod.LeaseChange, lease_state: str | None,
               lease_fqdn: str | None = None) -> bool:
    """Rows of one lease may be delivered out of order (retries, parallel workers): each
    applies only if it still says what the lease is now — an add while the lease is active
    under that name, a remove while it is not (released, expired, gone; renewed under another
    name, migration 0020; or active again under it: a later add holds)."""
    holds = lease_state == "active" and (lease_fqdn is None
                                         or _same_name(lease_fqdn, change.name))
    return holds != (change.op == "add")


def _lease_id(payload: object) -> uuid.UUID | None:
    if not isinstance(payload, dict):
        return None
    try:
        return uuid.UUID(str(payload["lease_id"]))
    except (KeyError, ValueError):
        return None


class DnsDeliverer:
    def __init__(self, state: AppState, adapters: dict[str, Adapter], backoff: Backoff) -> None:
        self.state = state
        self.adapters = adapters
        self.backoff = backoff
        self.timeout = state.config.outbox.request_timeout_seconds

    async def deliver(self, job: Job) -> Outcome:
        attempt = Attempt(job, self.backoff)
        try:
            change = change_mod.parse(job.dns, job.payload)
            server_id = change_mod.server_id(job.dns)
        except change_mod.BadChange as error:
            return attempt.final(str(error))
        lease_id = _lease_id(job.payload) if isinstance(change, change_mod.LeaseChange) else None
        row, lease_state, lease_fqdn = await self.state.db.run(_server, server_id, lease_id)
        if row is None:
            return attempt.final(f"DNS server {server_id} was deleted: nothing to update")
        if isinstance(change, change_mod.LeaseChange) and superseded(change, lease_state,
                                                                     lease_fqdn):
            return attempt.delivered(response=f"superseded: the lease is {lease_state or 'gone'} "
                                     f"now, so this {change.op} is not applied")
        server = Server.of(row)
        adapter = self.adapters.get(server.adapter)
        if adapter is None:
            return attempt.final(f"no adapter {server.adapter} in this build")
        try:
            answer = await adapter.apply(server, change, self.timeout)
        except DnsFailure as failure:
            message = scrub(str(failure), (server.secret_ref, server.keytab_path))
            if message != str(failure):
                log.warning("DNS server %s: %s", server.name, failure)
            if failure.final:
                return attempt.final(message)
            return attempt.retry(message, response=failure.answer)
        return attempt.delivered(response=f"{server.name}: {answer.summary}")


def handlers(
    state: AppState, client: Client, backoff: Backoff
) -> dict[str, Callable[[Job], Awaitable[Outcome]]]:
    """{kind: handler} for the outbox scheduler (see scheduler.ExtraHandlers)."""
    adapters: dict[str, Adapter] = {"bind_tsig": BindTsig(), "powerdns_http": PowerDnsHttp(client),
                                    "ad_gsstsig": AdGssTsig()}
    return {"dns": DnsDeliverer(state, adapters, backoff).deliver}


async def expand_staged(conn: asyncpg.Connection, max_staged: int) -> int:
    """(the scheduler's Stage) Turn up to ``max_staged`` staged lease changes (one entry per
    DHCP commit batch, migration 0008) into kind=dns rows, in the caller's transaction."""
    return int(await conn.fetchval("SELECT dns_expand_staged($1)", max_staged))


async def _work_queued(conn: asyncpg.Connection) -> bool:
    return bool(await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM dns_staged) OR EXISTS (SELECT 1 FROM outbox "
        "WHERE state IN ('pending', 'retrying') AND kind = 'dns')"))


async def _look_again(notifications: Notifications, seconds: float) -> bool:
    """True once a ``dns`` notification came or ``seconds`` passed; False: the listener is
    lost (its channel ended), so LISTEN again."""
    with trio.move_on_after(seconds):
        async for payload in notifications:
            if payload == "dns":
                return True
        return False
    return True


async def wait_for_work(state: AppState) -> None:
    """Returns once a kind=dns row is queued: the runtime starts the DNS delivery process
    then, so an appliance without dynamic DNS never runs it. Wakes on the outbox NOTIFY
    (payload ``dns``) and looks every poll interval too (a notification can be missed)."""
    throttle = Throttle(log)
    poll = state.config.outbox.poll_interval_seconds
    while True:
        try:
            notifications = await state.db.listen(queue.CHANNEL)
            try:
                while not await state.db.run(_work_queued):
                    if not await _look_again(notifications, poll):
                        break
                else:
                    return
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    await notifications.release()
        except DB_ERRORS as error:
            log_failure(throttle, error, "waiting for DNS work: %s", error.__class__.__name__)
        await trio.sleep(_RETRY_SECONDS)
