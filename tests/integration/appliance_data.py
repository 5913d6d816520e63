"""Shared by the backup and upgrade tests: the appliance with a plan, leases and webhooks in
it, a snapshot of every list the API serves (to compare before and after), and an empty
database to migrate step by step."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import trio

from ipamd import runtime
from ipamd.config import Config
from ipamd.db.bridge import run_once
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, TRUSTED, Relay
from tests.support import postgres
from tests.support.ports import free_port
from tests.unit.dhcp.packets import mac_bytes, relay_info, request

CIDR = "127.77.0.0/16"
HOOK = {"name": "siem", "url": "https://hooks.example.com/ipamd", "secret_ref": "env:HOOK_SECRET"}


@asynccontextmanager
async def empty_database(pg: postgres.PgServer) -> AsyncIterator[str]:
    """The DSN of a new database on the suite's server, with no schema; dropped after."""
    name = postgres.next_name()

    async def create(conn: Any) -> None:
        await conn.execute(f'CREATE DATABASE "{name}"')

    await run_once(pg.dsn("postgres"), create)
    try:
        yield pg.dsn(name)
    finally:
        await run_once(pg.dsn("postgres"), postgres.drop, name)


def appliance_config(dsn: str, state_dir: Path, relay_port: int, dhcp_port: int) -> dict[str, Any]:
    """The appliance's TOML as data: DHCP on loopback behind the test's relay, TLS on."""
    return {
        "state_dir": str(state_dir),
        "database": {"dsn": dsn, "pool_min": 1, "pool_max": 8},
        "api": {"public_listen": [f"127.0.0.1:{free_port()}"],
                "loopback_listen": f"127.0.0.1:{free_port()}", "graceful_timeout_seconds": 0.5},
        "dhcp": {"enabled": True, "listen": [f"127.0.0.1:{dhcp_port}"],
                 "reply_port": relay_port, "server_id": "127.0.0.1", "trusted_relays": TRUSTED},
        "outbox": {"enabled": False, "hosts_file": str(state_dir / "hosts")},
        "logging": {"access_log": False},
    }


def toml(data: dict[str, Any]) -> str:
    """Just enough TOML for appliance_config (strings, numbers, booleans, lists of strings)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return str(v)

    top = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    sections = [f"[{k}]\n" + "\n".join(f"{kk} = {value(vv)}" for kk, vv in v.items())
                for k, v in data.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n\n" + "\n\n".join(sections) + "\n"


class _Started:
    """Keeps what runtime.run hands to task_status.started, to mark it done when it returns."""

    def __init__(self, inner: trio.TaskStatus[runtime.Running]) -> None:
        self.inner, self.value = inner, None

    def started(self, value: runtime.Running) -> None:
        self.value = value
        self.inner.started(value)


async def start(nursery: trio.Nursery, config: Config) -> runtime.Running:
    async def serve(*, task_status: trio.TaskStatus[runtime.Running]) -> None:
        status = _Started(task_status)
        try:
            await runtime.run(config, handle_signals=False, task_status=status)  # type: ignore[arg-type]
        finally:
            if status.value is not None:
                status.value.done.set()

    return await nursery.start(serve)


async def stop(running: runtime.Running) -> None:
    running.stop.set()
    with trio.fail_after(30):
        await running.done.wait()


def client(running: runtime.Running, secret: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    return httpx.AsyncClient(base_url=running.url("http") + "/api/v1", headers=headers,
                             timeout=30)


def ok(response: httpx.Response, status: int = 201) -> dict[str, Any]:
    assert response.status_code == status, (response.request.url, response.text)
    return response.json()


async def fill(admin: httpx.AsyncClient) -> dict[str, str]:
    """A plan through the API: prefix, subnet, pool, exclude, reservations, an assignment,
    an option, a client class, a webhook. Returns the subnet id."""
    prefix = ok(await admin.post("/prefixes", json={"cidr": CIDR, "description": "lab"}))
    subnet = ok(await admin.post("/subnets", json={
        "prefix_id": prefix["id"], "cidr": CIDR, "gateway": RELAY_IP, "lease_time_seconds": 600}))
    sid = subnet["id"]
    ok(await admin.post(f"/subnets/{sid}/pools", json={
        "name": "dyn", "start_ip": "127.77.1.10", "end_ip": "127.77.1.40"}))
    ok(await admin.post(f"/subnets/{sid}/excludes", json={
        "start_ip": "127.77.1.15", "end_ip": "127.77.1.16"}))
    ok(await admin.post(f"/subnets/{sid}/reservations", json={
        "ip": "127.77.2.5", "mac": "02:00:00:00:00:09", "hostname": "printer-1"}))
    ok(await admin.post(f"/subnets/{sid}/reservations", json={
        "ip": "127.77.2.6", "duid": "00:03:00:01:02:aa:bb:cc:dd:51", "hostname": "printer-2"}))
    ok(await admin.post(f"/subnets/{sid}/assignments", json={
        "ip": "127.77.3.1", "hostname": "server-1"}))
    ok(await admin.post("/client-classes", json={
        "name": "phones", "match": "vendor_class", "value": "Polycom"}))
    ok(await admin.post("/webhooks", json={**HOOK, "topics": "lease.granted, ipam.audit"}))
    return {"subnet_id": sid}


async def dora(relay: Relay, n: int) -> str:
    """Discover, offer, request, ack for the client numbered n; returns its address."""
    mac = mac_bytes(n)
    info = relay_info(circuit=b"ge-0/0/%d" % n, remote=b"sw1")
    offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP,
                                         extra={o.RELAY_AGENT: info}))
    assert offer is not None and offer.message_type == o.OFFER
    address = o.ip_to_str(offer.yiaddr)
    ack = await relay.exchange(request(o.REQUEST, mac, giaddr=RELAY_IP, requested=address,
                                       server_id="127.0.0.1", extra={o.RELAY_AGENT: info}))
    assert ack is not None and ack.message_type == o.ACK, ack
    return address


async def release(relay: Relay, n: int, address: str) -> None:
    await relay.send(request(o.RELEASE, mac_bytes(n), giaddr=RELAY_IP, ciaddr=address,
                             server_id="127.0.0.1"))


async def renew(relay: Relay, n: int, address: str) -> int:
    """A renewal of ``address`` by client n; the reply's message type."""
    reply = await relay.exchange(request(o.REQUEST, mac_bytes(n), giaddr=RELAY_IP,
                                         ciaddr=address))
    assert reply is not None
    return reply.message_type


async def wait_plan(running: runtime.Running, subnet_id: str) -> None:
    with trio.fail_after(20):  # the server reloads its plan on the plan's NOTIFY
        while running.state.dhcp.env.plan.subnets.get(uuid.UUID(subnet_id)) is None:
            await trio.sleep(0.05)


# Lists of what the running processes are, not of data: a node's heartbeat moves on.
LIVE = {"/nodes"}


async def lists(admin: httpx.AsyncClient, subnet_id: str) -> dict[str, Any]:
    """Every list the API serves (from its OpenAPI document): top-level lists and the
    subnet's child lists, each in full. Read-only endpoints that are not lists are skipped."""
    # A history read derives the lease journal first (docs/history.md), so the lease events
    # are in /outbox before it is listed. Without it, an event derived between the /outbox
    # and /history reads (~50 ms after its commit) was missing from this snapshot but in the
    # next one.
    ok(await admin.get(f"/subnets/{subnet_id}/history"), 200)
    spec = ok(await admin.get("/openapi.json"), 200)
    found: dict[str, Any] = {}
    for path, methods in sorted(spec["paths"].items()):
        if "get" not in methods:
            continue
        params = [p for p in path.split("/") if p.startswith("{")]
        if params not in ([], ["{subnet_id}"]):
            continue
        if path in LIVE:
            continue
        url = path.replace("{subnet_id}", subnet_id)
        reply = await admin.get(url, params={"limit": 1000})
        if reply.status_code != 200 or "json" not in reply.headers.get("content-type", ""):
            continue  # /metrics is text; not data to compare
        body = reply.json()
        if isinstance(body, dict) and "items" in body:
            assert body["next_cursor"] is None, f"{path}: more than one page"
            found[path] = body["items"]
    # History is looked up by identity: every leased address's and MAC's intervals, and the
    # subnet's address map as of one fixed moment (after every lease above).
    for lease in found.get("/leases", []):
        for key in ("ip", "mac"):
            body = ok(await admin.get("/history", params={key: lease[key], "limit": 1000}), 200)
            found[f"/history?{key}={lease[key]}"] = body["items"]
    if found.get("/leases"):
        moment = max(lease["updated_at"] for lease in found["/leases"])
        found["/subnets/{subnet_id}/history"] = ok(await admin.get(
            f"/subnets/{subnet_id}/history", params={"at": moment}), 200)
    return found
