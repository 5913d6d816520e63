"""DHCP clients behind a relay, driving the real server over loopback UDP (giaddr set).

Packets come from the DHCP engineer's helpers (tests/unit/dhcp/packets.py) and travel
through their fake relay (tests/integration/dhcp/harness.py); this only strings the
messages of a client's life together and waits for the server to commit them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg
import trio

from ipamd.core.lease_events import derive_all
from ipamd.db.bridge import Database
from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay
from tests.unit.dhcp.packets import relay_info, request

SERVER_ID = "127.0.0.1"
COMMIT_WAIT = 10.0  # seconds a Release or Decline may take to show (no reply to wait for)


@dataclass
class Client:
    mac: str
    hostname: str | None = None
    client_id: bytes | None = None
    circuit_id: bytes | None = None
    remote_id: bytes | None = None

    @property
    def chaddr(self) -> bytes:
        return bytes.fromhex(self.mac.replace(":", ""))

    def options(self) -> dict[int, bytes]:
        extra: dict[int, bytes] = {}
        if self.hostname is not None:
            extra[o.HOSTNAME] = self.hostname.encode()
        if self.client_id is not None:
            extra[o.CLIENT_ID] = self.client_id
        if self.circuit_id is not None or self.remote_id is not None:
            extra[o.RELAY_AGENT] = relay_info(circuit=self.circuit_id, remote=self.remote_id)
        return extra


async def _events(conn: asyncpg.Connection, ip: str) -> list[str]:
    await derive_all(conn)  # history rows and events follow the lease journal
    rows = await conn.fetch(
        "SELECT event FROM lease_events WHERE ip = $1::inet ORDER BY at, id", ip)
    return [r["event"] for r in rows]


@dataclass
class Dhcp:
    relay: Relay
    db: Database  # the test's own pool, to see when a reply-less message was committed

    async def grant(self, client: Client) -> str:
        """Discover, Offer, Request, Ack: the address granted."""
        offer = await self.relay.exchange(
            request(o.DISCOVER, client.chaddr, giaddr=RELAY_IP, extra=client.options()))
        assert offer is not None and offer.message_type == o.OFFER, offer
        ip = o.ip_to_str(offer.yiaddr)
        ack = await self.relay.exchange(request(
            o.REQUEST, client.chaddr, giaddr=RELAY_IP, requested=ip, server_id=SERVER_ID,
            extra=client.options()))
        assert ack is not None and ack.message_type == o.ACK and ack.yiaddr == offer.yiaddr, ack
        return ip

    async def renew(self, client: Client, ip: str) -> None:
        ack = await self.relay.exchange(request(
            o.REQUEST, client.chaddr, giaddr=RELAY_IP, ciaddr=ip, extra=client.options()))
        assert ack is not None and ack.message_type == o.ACK, ack

    async def release(self, client: Client, ip: str) -> None:
        await self._unanswered(ip, "released", request(
            o.RELEASE, client.chaddr, giaddr=RELAY_IP, ciaddr=ip, server_id=SERVER_ID,
            extra=client.options()))

    async def decline(self, client: Client, ip: str) -> None:
        await self._unanswered(ip, "declined", request(
            o.DECLINE, client.chaddr, giaddr=RELAY_IP, requested=ip, server_id=SERVER_ID,
            extra=client.options()))

    async def wait_event(self, ip: str, event: str, count: int = 1) -> None:
        """Until the server has committed ``count`` events of this kind for the address."""
        with trio.fail_after(COMMIT_WAIT):
            while (await self.db.run(_events, ip)).count(event) < count:
                await trio.sleep(0.05)

    async def _unanswered(self, ip: str, event: str, message: Any) -> None:
        before = (await self.db.run(_events, ip)).count(event)
        await self.relay.send(message)
        await self.wait_event(ip, event, before + 1)
