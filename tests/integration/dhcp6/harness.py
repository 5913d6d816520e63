"""Seed an IPv6 plan straight into Postgres, and talk to the DHCPv6 server as a relay would.

Everything stays on loopback: the fake relay is a UDP socket on ::1 and the server listens
on [::1]:0; the server sends its Relay-replies back to the port they came from
(``dhcp6.reply_port = 0``). Addresses inside the messages are documentation ones
(2001:db8::/32, RFC 3849): they name the link, nothing is sent to them.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address
from typing import Any

import asyncpg
import trio

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Malformed, Message, RelayMessage, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import (
    ClientId,
    ElapsedTime,
    IaAddress,
    IaNa,
    IaPd,
    IaPrefix,
    InterfaceId,
    Option,
    OptionRequest,
    RapidCommit,
    RemoteId,
    ServerId,
)
from ipamd.dhcp6.relay import RelayMsg

DEFAULT_TENANT = uuid.UUID("00000000-0000-7000-8000-000000000001")
SUBNET = "2001:db8:77:1::/64"
LINK = "2001:db8:77:1::1"  # the relay's address on the client's link
PEER = "fe80::200:5eff:fe10:1"  # the client's link-local source, as the relay saw it
POOL = ("2001:db8:77:1::100", "2001:db8:77:1::1ff")
PD_PREFIX = "2001:db8:4400::/48"
TRUSTED = ["::1/128"]


def dhcp6_section(**extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"enabled": True, "listen": ["[::1]:0"], "reply_port": 0,
                              "trusted_relays": TRUSTED, "commit_window_us": 200}
    values.update(extra)
    return values


async def seed_v6(conn: asyncpg.Connection, *, lease_time: int = 4000,
                  reservations: Sequence[tuple[str, str]] = (),
                  pd_reservations: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """An IPv6 prefix and subnet with a pool, options 23/24, a delegation pool /48 in /56s,
    and DUID reservations (address, duid) and (delegated prefix, duid); returns ids."""
    prefix = await conn.fetchval(
        "INSERT INTO prefixes (tenant_id, cidr) VALUES ($1, '2001:db8:77::/48') RETURNING id",
        DEFAULT_TENANT)
    subnet = await conn.fetchval(
        """INSERT INTO subnets (tenant_id, prefix_id, cidr, lease_time_seconds)
           VALUES ($1, $2, $3, $4) RETURNING id""", DEFAULT_TENANT, prefix, SUBNET, lease_time)
    await conn.execute(
        "INSERT INTO pools (subnet_id, name, start_ip, end_ip) VALUES ($1, 'v6', $2, $3)",
        subnet, *POOL)
    await conn.execute(
        """INSERT INTO dhcp_options (subnet_id, code, payload) VALUES
           ($1, 23, '{"addresses": ["2001:db8::53"]}'),
           ($1, 24, '{"domains": ["example.com"]}')""", subnet)
    pd_pool = await conn.fetchval(
        """INSERT INTO pd_pools (tenant_id, subnet_id, name, prefix, delegated_length)
           VALUES ($1, $2, 'pd', $3, 56) RETURNING id""", DEFAULT_TENANT, subnet, PD_PREFIX)
    for ip, duid in reservations:
        await conn.execute("INSERT INTO reservations (subnet_id, ip, duid) VALUES ($1, $2, $3)",
                           subnet, ip, duid)
    for delegated, duid in pd_reservations:
        await conn.execute(
            "INSERT INTO pd_reservations (pd_pool_id, prefix, duid) VALUES ($1, $2, $3)",
            pd_pool, delegated, duid)
    return {"subnet_id": subnet, "pd_pool_id": pd_pool}


def client_duid(n: int) -> Duid:
    return Duid.ll(bytes.fromhex("02005e10") + n.to_bytes(2, "big"))


def message(msg_type: int, xid: int, duid: Duid, *, server: Duid | None = None,
            na: Sequence[str] | None = (), pd: Sequence[str] | None = None, iaid: int = 1,
            rapid: bool = False, oro: Sequence[int] = (23, 24)) -> Message:
    """A client message: Client Id, ORO, Elapsed Time, an IA_NA (its addresses listed; None:
    no IA_NA) and/or an IA_PD (its prefixes listed), Server Id when given."""
    options: list[Option] = [ClientId(duid), OptionRequest(tuple(oro)), ElapsedTime(0)]
    if server is not None:
        options.append(ServerId(server))
    if rapid:
        options.append(RapidCommit())
    if na is not None:
        options.append(IaNa(iaid, 0, 0, tuple(IaAddress(IPv6Address(a), 0, 0) for a in na)))
    if pd is not None:
        prefixes = []
        for text in pd:
            address, _, length = text.partition("/")
            prefixes.append(IaPrefix(0, 0, int(length), IPv6Address(address)))
        options.append(IaPd(iaid, 0, 0, tuple(prefixes)))
    return Message(msg_type, xid, options)


def forward(inner: Message | RelayMessage, *, link: str = LINK, peer: str = PEER,
            hops: int = 0, extra: Sequence[Option] = ()) -> RelayMessage:
    return RelayMessage(p.RELAY_FORW, hops, IPv6Address(link), IPv6Address(peer),
                        [*extra, RelayMsg(inner)])


@dataclass
class Relay6:
    """A fake relay on ::1: sends Relay-forwards, collects Relay-replies by transaction id."""

    sock: trio.socket.SocketType
    server: tuple[str, int]

    def __post_init__(self) -> None:
        self.replies: dict[int, list[tuple[RelayMessage, Message]]] = {}
        self.arrived = trio.Event()
        self.garbage = 0

    async def run(self) -> None:
        while True:
            data = await self.sock.recv(65535)
            try:
                outer = parse(data)
            except Malformed:
                self.garbage += 1
                continue
            inner = outer.relayed if isinstance(outer, RelayMessage) else None
            while isinstance(inner, RelayMessage):
                inner = inner.relayed
            if not isinstance(outer, RelayMessage) or outer.msg_type != p.RELAY_REPL \
                    or inner is None:
                self.garbage += 1
                continue
            self.replies.setdefault(inner.transaction_id, []).append((outer, inner))
            self.arrived.set()
            self.arrived = trio.Event()

    async def send_raw(self, data: bytes) -> None:
        await self.sock.sendto(data, self.server)

    async def send(self, msg: Message, **relay: Any) -> None:
        await self.send_raw(forward(msg, **relay).to_bytes())

    async def reply(self, xid: int, timeout: float = 5.0) -> tuple[RelayMessage, Message] | None:
        with trio.move_on_after(timeout):
            while not self.replies.get(xid):
                await self.arrived.wait()
            return self.replies[xid].pop(0)
        return None

    async def exchange(self, msg: Message, timeout: float = 5.0, **relay: Any) -> Message | None:
        await self.send(msg, **relay)
        got = await self.reply(msg.transaction_id, timeout)
        return None if got is None else got[1]

    async def silence(self, xid: int, wait: float = 0.3) -> bool:
        return await self.reply(xid, wait) is None


def relay_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.bind(("::1", 0))
    return sock


def interface_id(data: bytes) -> InterfaceId:
    return InterfaceId(data)


def remote_id(enterprise: int, data: bytes) -> RemoteId:
    return RemoteId(enterprise, data)
