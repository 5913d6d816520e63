"""Alerts end to end, against real counterparts on loopback: DHCP clients (relay simulation)
fill a pool; the utilisation alert opens once and reaches a real Alertmanager, a real SMTP
server (aiosmtpd), and a pager (PagerDuty Events v2 shape) and a generic receiver over HTTPS;
releasing the leases clears it everywhere (Alertmanager shows it resolved). A real Prometheus
scrapes /api/v1/metrics with a bearer token meanwhile."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trustme

from ipamd import runtime
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section, relay_socket, seed_subnet
from tests.integration.history.dhcp_clients import Client, Dhcp
from tests.integration.outbox.conftest import ca, ca_file, fast_outbox, hosts_file  # noqa: F401
from tests.support import monitoring
from tests.support.receiver import Receiver, trustme_context
from tests.support.waiting import until
from tests.unit.dhcp.packets import request

PD_ENV = "IPAMD_TEST_PAGER_KEY"
POOL = ("127.77.0.10", "127.77.0.13")  # four addresses

pytestmark = pytest.mark.skipif(
    not (monitoring.binary("prometheus") and monitoring.binary("prometheus-alertmanager")),
    reason="needs the Debian packages prometheus and prometheus-alertmanager (make test)")


@pytest.fixture
async def plan(db: Database) -> dict[str, Any]:
    return await db.run(lambda conn: seed_subnet(conn, pools=[POOL]))


@pytest.fixture
def config_overrides(plan: dict[str, Any], relay_sock: socket.socket, ca_file: str,  # noqa: F811
                     hosts_file: Path) -> dict[str, dict[str, Any]]:  # noqa: F811
    return {
        "dhcp": dhcp_section(relay_sock.getsockname()[1]),
        "outbox": fast_outbox(ca_file, hosts_file, max_attempts=10),
        "ops": {"heartbeat_seconds": 0.2, "node_down_seconds": 5.0,
                "alert_interval_seconds": 0.3},
    }


@pytest.fixture
async def receiver(nursery: trio.Nursery, ca: trustme.CA) -> AsyncIterator[Receiver]:  # noqa: F811
    server = Receiver(trustme_context(ca))
    await server.start(nursery)
    try:
        yield server
    finally:
        server.stop()


async def _enter(cm: AbstractContextManager[Any], stack: list[AbstractContextManager[Any]]
                 ) -> Any:
    value = await trio.to_thread.run_sync(cm.__enter__)
    stack.append(cm)
    return value


async def test_pool_alert_reaches_every_destination(
    appliance: runtime.Running, admin: httpx.AsyncClient, viewer: httpx.AsyncClient,
    tokens: dict[str, str], relay_sock: socket.socket, db: Database, receiver: Receiver,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: dict[str, Any],
) -> None:
    monkeypatch.setenv(PD_ENV, "pd-routing-key-1")
    monkeypatch.setenv("IPAMD_TEST_STAR_SECRET", "star-secret")
    stack: list[AbstractContextManager[Any]] = []
    try:
        am = await _enter(monitoring.alertmanager(tmp_path), stack)
        smtp_port, mails = await _enter(monitoring.smtp_server(tmp_path), stack)
        target = appliance.url("http").removeprefix("http://")
        prom = await _enter(monitoring.prometheus(tmp_path, target, tokens["viewer"]), stack)
        await _scenario(appliance, admin, viewer, relay_sock, db, receiver, am, smtp_port,
                        mails, prom, plan)
    finally:
        for cm in reversed(stack):
            await trio.to_thread.run_sync(cm.__exit__, None, None, None)


async def _scenario(
    appliance: runtime.Running, admin: httpx.AsyncClient, viewer: httpx.AsyncClient,
    relay_sock: socket.socket, db: Database, receiver: Receiver, am: str, smtp_port: int,
    mails: monitoring.MailSink, prom: str, plan: dict[str, Any],
) -> None:
    path = "/settings/alert-destinations"
    # Refusals name the field; reads are admin only.
    bad = await admin.post(path, json={"name": "x", "kind": "alertmanager",
                                       "settings": {"url": "http://example.com"}})
    assert bad.status_code == 422 and "url" in bad.json()["error"]["message"], bad.text
    bad = await admin.post(path, json={"name": "x", "kind": "webhook",
                                       "settings": {"url": receiver.url(), "secret": "s"}})
    assert bad.status_code == 422 and "secret" in bad.json()["error"]["message"], bad.text
    bad = await admin.post(path, json={"name": "x", "kind": "smtp", "settings": {
        "host": "169.254.169.254", "from": "a@b.test", "to": ["c@d.test"]}})
    assert bad.status_code == 422 and "host" in bad.json()["error"]["message"], bad.text
    assert (await viewer.get(path)).status_code == 403

    made = {}
    for name, kind, settings in (
        ("am", "alertmanager", {"url": am}),
        ("mail", "smtp", {"host": "127.0.0.1", "port": smtp_port, "starttls": False,
                          "from": "ipamd@appliance.test", "to": ["noc@example.test"]}),
        ("pager", "pager", {"url": receiver.url("/pd", host="hook.test"),
                            "routing_key_ref": f"env:{PD_ENV}"}),
        ("generic", "webhook", {"url": receiver.url("/generic", host="hook.test")}),
    ):
        reply = await admin.post(path, json={"name": name, "kind": kind, "settings": settings})
        assert reply.status_code == 201, reply.text
        made[name] = reply.json()
    assert "pd-routing-key-1" not in str(made)
    logged = (await viewer.get("/audit", params={"object_type": "alert_destination"})).json()
    assert logged["items"] and f"env:{PD_ENV}" not in str(logged)  # where secrets live: admin only
    # A webhook on every topic: it gets lease events, never alert events (docs/operations-monitoring.md).
    star = await admin.post("/webhooks", json={
        "name": "star", "url": receiver.url("/star", host="hook.test"),
        "secret_ref": "env:IPAMD_TEST_STAR_SECRET", "topics": "*"})
    assert star.status_code == 201, star.text
    rules = await admin.patch("/settings/alert-rules",
                              json={"utilisation_percent": 100, "utilisation_clear_percent": 50,
                                    "drops_per_minute": 5, "drops_clear_per_minute": 1})
    assert rules.status_code == 200, rules.text
    bad = await admin.patch("/settings/alert-rules", json={"utilisation_clear_percent": 100})
    assert bad.status_code == 422

    relay = Relay(trio.socket.from_stdlib_socket(relay_sock),
                  tuple(appliance.state.dhcp.addresses[0]))  # type: ignore[union-attr]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.run)
        dhcp = Dhcp(relay, db)
        clients = [Client(f"02:00:00:00:0e:{i:02x}") for i in range(4)]
        granted = [await dhcp.grant(c) for c in clients]
        assert len(set(granted)) == 4

        pool_id = str(plan["pool_ids"][0])

        async def opened() -> list[dict[str, Any]]:
            items = (await viewer.get("/alerts", params={"status": "open"})).json()["items"]
            return [a for a in items if a["rule"] == "pool_utilisation"
                    and a["subject"] == pool_id]

        alert = (await until(opened, "pool_utilisation alert"))[0]
        assert alert["value"] == 100.0

        # A fifth client finds the pool full: the subnet refused it (no_address alert).
        late = request(o.DISCOVER, Client("02:00:00:00:0e:ff").chaddr, giaddr=RELAY_IP)
        await relay.send(late)
        assert await relay.silence(late.xid, 1.0)

        async def refused() -> list[dict[str, Any]]:
            items = (await viewer.get("/alerts", params={"status": "open"})).json()["items"]
            return [a for a in items if a["rule"] == "no_address"
                    and a["subject"] == str(plan["subnet_id"])]

        await until(refused, "no_address alert")

        # Packets from a relay nobody trusted: the drop-rate alert opens, then clears once the
        # rate falls (an evaluation later with no new drops).
        stranger = relay_socket("127.78.0.1")
        try:
            for _ in range(30):
                stranger.sendto(request(o.DISCOVER, b"\x02\x00\x00\x00\x0e\xee",
                                        giaddr="127.78.0.1").to_bytes(), relay.server)
        finally:
            stranger.close()

        async def drops(status: str) -> list[dict[str, Any]]:
            items = (await viewer.get("/alerts", params={"status": status})).json()["items"]
            return [a for a in items if a["rule"] == "dhcp_drops"]

        await until(lambda: drops("open"), "dhcp_drops alert")
        await until(lambda: drops("cleared"), "dhcp_drops alert cleared")
        assert not await drops("open")

        async def am_alerts(active: bool) -> list[dict[str, Any]]:
            async with httpx.AsyncClient() as c:
                got = (await c.get(am + "/api/v2/alerts", params={
                    "active": str(active).lower(),
                    "filter": f'subject="{pool_id}"'})).json()
            return got

        shown = await until(lambda: am_alerts(True), "alert in Alertmanager")
        assert shown[0]["labels"]["alertname"] == "ipamd_pool_utilisation"
        assert shown[0]["status"]["state"] == "active"

        async def at(path: str, **match: Any) -> list[dict[str, Any]]:
            return [r.json() for r in receiver.received if r.path == path
                    and all(r.json().get(k) == v for k, v in match.items())]

        trigger = (await until(lambda: at("/pd", event_action="trigger",
                                           dedup_key=f"ipamd-{alert['id']}"), "pager trigger"))[0]
        assert trigger["routing_key"] == "pd-routing-key-1"
        assert trigger["dedup_key"] == f"ipamd-{alert['id']}"
        assert trigger["payload"]["source"] == "ipamd"
        generic = await until(lambda: at("/generic", event="opened"), "generic opened")
        assert alert["id"] in {g["alert"]["id"] for g in generic}

        async def mailed(state: str) -> list[dict[str, Any]]:
            return [m for m in mails.messages if m["subject"].startswith(f"[ipamd] {state}")
                    and "pool_utilisation" in m["data"] and m["to"] == "noc@example.test"]

        await until(lambda: mailed("OPEN"), "mail about the opening")

        # The Prometheus scrape with the bearer token is up and has DHCP series.
        async with httpx.AsyncClient(base_url=prom) as c:
            async def target_up() -> bool:
                got = (await c.get("/api/v1/targets")).json()["data"]["activeTargets"]
                return bool(got) and got[0]["health"] == "up"

            async def dhcp_series() -> list[Any]:
                got = await c.get("/api/v1/query", params={
                    "query": 'ipamd_dhcp_packets_received_total{type="discover"}'})
                return [r for r in got.json()["data"]["result"] if float(r["value"][1]) >= 4]

            await until(target_up, "prometheus target up")
            await until(dhcp_series, "a DHCP series in Prometheus")

        for client, ip in zip(clients, granted, strict=True):
            await dhcp.release(client, ip)
        nursery.cancel_scope.cancel()

    async def cleared() -> list[dict[str, Any]]:
        items = (await viewer.get("/alerts")).json()["items"]
        return [a for a in items if a["id"] == alert["id"] and a["status"] == "cleared"]

    await until(cleared, "the alert cleared")
    await until(lambda: at("/pd", event_action="resolve", dedup_key=trigger["dedup_key"]),
                 "pager resolve")

    async def generic_cleared() -> bool:
        return alert["id"] in {g["alert"]["id"] for g in await at("/generic", event="cleared")}

    await until(generic_cleared, "generic cleared")
    await until(lambda: mailed("CLEARED"), "mail about the clearing")

    async def resolved() -> bool:
        still = await am_alerts(True)
        every = await am_alerts(False)
        return not still and not any(a["status"]["state"] == "active" for a in every)

    await until(resolved, "Alertmanager shows it resolved")

    # Opened once, cleared once (hysteresis): one alert row for the pool, in history.
    history = (await viewer.get("/alerts")).json()["items"]
    assert len([a for a in history if a["rule"] == "pool_utilisation"]) == 1
    star_topics = {r.topic for r in receiver.received if r.path == "/star"}
    assert "lease.granted" in star_topics and not any(t.startswith("alert.") for t in star_topics)

    # A receiver has the request a moment before its outbox row records the delivery.
    async def all_delivered() -> list[dict[str, Any]] | None:
        work = (await viewer.get("/outbox", params={"kind": "alert"})).json()["items"]
        return work if work and all(r["state"] == "delivered" for r in work) else None

    await until(all_delivered, "every alert delivery recorded as delivered")
