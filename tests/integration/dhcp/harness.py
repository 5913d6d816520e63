"""Seed a plan straight into Postgres, and talk to the DHCP server as a relay would.

Everything stays on loopback: the fake relay sits on 127.77.0.1 (all of 127/8 is
loopback on Linux), subnets live in 127.77.0.0/16 so giaddr selects them, and the
server's replies to giaddr:reply_port come back to the relay's socket.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import trio

from ipamd.dhcp.codec import DhcpMessage, MalformedPacket, parse
from ipamd.dhcp.server import DhcpServer
from ipamd.runtime.dhcp_servers import dhcp_server, serve_dhcp
from ipamd.state import AppState

DEFAULT_TENANT = uuid.UUID("00000000-0000-7000-8000-000000000001")
RELAY_IP = "127.77.0.1"
TRUSTED = ["127.77.0.0/16"]


def relay_socket(address: str = RELAY_IP) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for option in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, 8 << 20)
            break
        except OSError:
            continue
    sock.bind((address, 0))
    return sock


def dhcp_section(relay_port: int, **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "enabled": True, "listen": ["127.0.0.1:0"], "reply_port": relay_port,
        "server_id": "127.0.0.1", "trusted_relays": TRUSTED, "expiry_interval_seconds": 0.2,
        "commit_window_us": 200,
    }
    values.update(extra)
    return values


async def seed_subnet(
    conn: asyncpg.Connection,
    cidr: str = "127.77.0.0/16",
    *,
    gateway: str | None = "127.77.0.1",
    pools: Sequence[tuple[Any, ...]] = (),
    lease_time: int = 3600,
    **fields: Any,
) -> dict[str, Any]:
    """A prefix, a subnet and its pools; returns their ids."""
    prefix = await conn.fetchval(
        "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, $2) RETURNING id", DEFAULT_TENANT, cidr
    )
    columns = ["tenant_id", "prefix_id", "cidr", "gateway", "lease_time_seconds", *fields]
    values = [DEFAULT_TENANT, prefix, cidr, gateway, lease_time, *fields.values()]
    marks = ", ".join(f"${i}" for i in range(1, len(values) + 1))
    subnet = await conn.fetchval(
        f"INSERT INTO subnets ({', '.join(columns)}) VALUES ({marks}) RETURNING id", *values
    )
    pool_ids = []
    for index, pool in enumerate(pools):
        start, end, *rest = pool
        pool_ids.append(await conn.fetchval(
            """INSERT INTO pools (subnet_id, name, start_ip, end_ip, class_id)
               VALUES ($1, $2, $3, $4, $5) RETURNING id""",
            subnet, f"pool{index}", start, end, rest[0] if rest else None,
        ))
    return {"prefix_id": prefix, "subnet_id": subnet, "pool_ids": pool_ids}


@dataclass
class Relay:
    """A fake relay agent: sends requests with giaddr set, collects replies by xid."""

    sock: trio.socket.SocketType
    server: tuple[str, int]

    def __post_init__(self) -> None:
        self.replies: dict[int, list[DhcpMessage]] = {}
        self.arrived = trio.Event()
        self.garbage = 0

    async def run(self) -> None:
        while True:
            data = await self.sock.recv(4096)
            try:
                msg = parse(data)
            except MalformedPacket:
                self.garbage += 1
                continue
            self.replies.setdefault(msg.xid, []).append(msg)
            self.arrived.set()
            self.arrived = trio.Event()

    async def send(self, msg: DhcpMessage) -> None:
        await self.sock.sendto(msg.to_bytes(), self.server)

    async def reply(self, xid: int, timeout: float = 5.0) -> DhcpMessage | None:
        """The next unread reply with this xid, or None after ``timeout``."""
        with trio.move_on_after(timeout):
            while not self.replies.get(xid):
                await self.arrived.wait()
            return self.replies[xid].pop(0)
        return None

    async def exchange(self, msg: DhcpMessage, timeout: float = 5.0) -> DhcpMessage | None:
        await self.send(msg)
        return await self.reply(msg.xid, timeout)

    async def silence(self, xid: int, wait: float = 0.3) -> bool:
        """True when no reply with ``xid`` arrives within ``wait`` seconds."""
        return await self.reply(xid, wait) is None


@dataclass
class Served:
    """A DhcpServer running in the test's nursery; ``stop()`` cancels it and waits."""

    server: DhcpServer
    scope: trio.CancelScope
    done: trio.Event

    async def stop(self) -> None:
        self.scope.cancel()
        await self.done.wait()


async def serve(nursery: trio.Nursery, state: AppState) -> Served:
    """Start a DHCP server on ``state`` (ready when this returns), registered as the runtime
    registers it (``state.dhcp``, ``state.counters.dhcp``)."""
    served = Served(dhcp_server(state), trio.CancelScope(), trio.Event())

    async def run(*, task_status: trio.TaskStatus[None]) -> None:
        try:
            with served.scope:
                await serve_dhcp(state, task_status=task_status, server=served.server)
        finally:
            served.done.set()

    await nursery.start(run)
    return served
