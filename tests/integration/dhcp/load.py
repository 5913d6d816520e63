"""Relayed DORA load for failover tests: every Ack recorded with the client it went to."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from ipamd.dhcp import options as o
from tests.integration.dhcp.harness import RELAY_IP, Relay
from tests.unit.dhcp.packets import mac_bytes, request


@dataclass
class Ack:
    ip: str
    mac: str
    sent_at: float  # trio time the DISCOVER went out
    node: int  # which relay target answered


@dataclass
class DoraLoad:
    """Clients doing DISCOVER/REQUEST in a loop through one or more relays (one per node)."""

    relays: list[Relay]
    server_id: str = "127.0.0.1"
    first_mac: int = 700_000
    acks: list[Ack] = field(default_factory=list)
    silent: int = 0  # Requests that got no Ack (refused or unanswered)

    def __post_init__(self) -> None:
        self._next = self.first_mac

    async def client(self, node: int, stop: trio.Event) -> None:
        relay = self.relays[node]
        while not stop.is_set():
            self._next += 1
            mac = mac_bytes(self._next)
            sent = trio.current_time()
            offer = await relay.exchange(request(o.DISCOVER, mac, giaddr=RELAY_IP), 1.0)
            if offer is None or offer.message_type != o.OFFER:
                await trio.sleep(0.05)
                continue
            ack = await relay.exchange(
                request(o.REQUEST, mac, giaddr=RELAY_IP, server_id=self.server_id,
                        requested=o.ip_to_str(offer.yiaddr)), 1.0)
            if ack is not None and ack.message_type == o.ACK:
                self.acks.append(Ack(o.ip_to_str(ack.yiaddr), mac.hex(":"), sent, node))
            else:
                self.silent += 1
            await trio.sleep(0.01)

    def acks_since(self, moment: float) -> list[Ack]:
        return [a for a in self.acks if a.sent_at >= moment]

    async def until(self, count: int, timeout: float, since: float = 0.0) -> float:
        """Wait for ``count`` Acks to exchanges begun at or after ``since``; returns when."""
        with trio.fail_after(timeout):
            while len(self.acks_since(since)) < count:
                await trio.sleep(0.02)
        return trio.current_time()

    def double_acked(self) -> dict[str, set[str]]:
        """Addresses Acked to more than one client."""
        holders: dict[str, set[str]] = {}
        for ack in self.acks:
            holders.setdefault(ack.ip, set()).add(ack.mac)
        return {ip: macs for ip, macs in holders.items() if len(macs) > 1}


async def active_leases(conn) -> dict[str, str]:  # type: ignore[no-untyped-def]
    rows = await conn.fetch("SELECT host(ip) AS ip, mac::text AS mac FROM leases "
                            "WHERE state = 'active'")
    return {r["ip"]: r["mac"] for r in rows}


def lost(load: DoraLoad, stored: dict[str, str]) -> list[Ack]:
    """Acks the database does not hold as an active lease of that client."""
    return [a for a in load.acks if stored.get(a.ip) != a.mac]
