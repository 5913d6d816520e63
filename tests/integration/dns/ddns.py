"""What the DDNS tests against real DNS servers share: the appliance's settings (outbox fast
enough to see retries), a lease over the loopback relay and its release, the newest dns outbox
row of a name, a record that answers at a server, and a DDNS subnet with its zones."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import trio

from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay, dhcp_section
from tests.integration.ipam.helpers import created
from tests.support.bind import Bind, need_bind
from tests.unit.dhcp.packets import mac_bytes, request

ZONE, REVERSE = "lan.example", "77.127.in-addr.arpa"
WAIT = 20.0

FAST_OUTBOX = {"enabled": True, "workers": 2, "max_attempts": 4,
               "backoff_base_seconds": 0.05, "backoff_multiplier": 2.0,
               "backoff_max_seconds": 0.3, "backoff_jitter": 0.0,
               "request_timeout_seconds": 1.0, "claim_timeout_seconds": 4.0,
               "poll_interval_seconds": 0.2}


def appliance_config(relay_sock: socket.socket, **outbox: Any) -> dict[str, dict[str, Any]]:
    """DHCP behind the loopback relay; the outbox with short backoffs (``outbox`` overrides)."""
    return {"dhcp": dhcp_section(relay_sock.getsockname()[1]),
            "outbox": {**FAST_OUTBOX, **outbox}}


@contextlib.contextmanager
def bind_serving(tmp_path: Path, secret_env: str) -> Iterator[Bind]:
    """A BIND 9 for the zones above, its TSIG secret where ``env:<secret_env>`` finds it."""
    need_bind()
    server = Bind(tmp_path / "bind", [ZONE, REVERSE])
    server.start()
    os.environ[secret_env] = server.secret
    try:
        yield server
    finally:
        server.stop()


async def lease(relay: Relay, n: int, hostname: str) -> str:
    mac = mac_bytes(900_000 + n)
    extra = {o.HOSTNAME: hostname.encode()}
    for _ in range(20):  # the plan reloads on NOTIFY after the API's changes
        discover = request(o.DISCOVER, mac, giaddr=RELAY_IP, extra=extra)
        offer = await relay.exchange(discover, timeout=0.5)
        if offer is not None:
            break
    assert offer is not None and offer.message_type == o.OFFER
    ip = o.ip_to_str(offer.yiaddr)
    ack = await relay.exchange(request(o.REQUEST, mac, xid=discover.xid, giaddr=RELAY_IP,
                                       server_id="127.0.0.1", requested=ip, extra=extra))
    assert ack is not None and ack.message_type == o.ACK
    return ip


async def release(relay: Relay, n: int, ip: str) -> None:
    await relay.send(request(o.RELEASE, mac_bytes(900_000 + n), giaddr=RELAY_IP, ciaddr=ip,
                             server_id="127.0.0.1"))


async def dns_row(viewer: httpx.AsyncClient, topic: str, name: str, states: set[str]) -> dict:
    """The newest dns row for (topic, name) once it is in one of ``states``."""
    with trio.fail_after(WAIT):
        while True:
            rows = (await viewer.get("/outbox", params={"kind": "dns", "topic": topic})).json()
            found = [r for r in rows["items"] if r["target"] == name]
            if found and found[0]["state"] in states:
                return found[0]
            await trio.sleep(0.1)


async def dig(bind: Any, name: str, rtype: str, want: list[str]) -> None:
    with trio.fail_after(5):
        while await trio.to_thread.run_sync(bind.dig, name, rtype) != want:
            await trio.sleep(0.1)


async def ddns_subnet(operator: httpx.AsyncClient, server_id: str, adapter: str) -> dict:
    """The zones on the server, and a DDNS subnet with a pool behind the loopback relay."""
    for name in (ZONE, REVERSE):
        created(await operator.post("/dns-zones", json={"name": name, "server_id": server_id}))
    prefix = created(await operator.post("/prefixes", json={"cidr": "127.77.0.0/16"}))
    subnet = created(await operator.post("/subnets", json={
        "prefix_id": prefix["id"], "cidr": "127.77.0.0/16", "gateway": "127.77.0.1",
        "ddns_adapter": adapter, "ddns_server_id": server_id, "ddns_zone": ZONE,
        "ddns_reverse_zone": REVERSE, "ddns_ttl": 120}))
    created(await operator.post(f"/subnets/{subnet['id']}/pools", json={
        "name": "clients", "start_ip": "127.77.5.1", "end_ip": "127.77.5.50"}))
    return subnet
