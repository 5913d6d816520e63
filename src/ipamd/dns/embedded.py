"""The embedded authoritative DNS server: UDP and TCP listeners in the appliance's nursery.

    LISTEN ipamd_dns ─┐
    refresh_seconds ──┴─> loader (one crossing) → zonedata.build → self.zones (swapped whole)
                                                   └─ serial changed → NOTIFY each secondary
    UDP datagram ─> zonedata.answer_udp          TCP stream ─> queries, AXFR/IXFR (secondaries)

Zones are those of DNS servers with adapter ``embedded``: their static records, and the A and
PTR of active leases of subnets with ddns_adapter ``embedded`` (the lease's fqdn).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import struct
from typing import Any

import asyncpg
import dns.asyncquery
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rdataclass
import dns.rdatatype
import trio

from ipamd.db.bridge import Notifications
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure
from ipamd.dns import zonedata
from ipamd.state import AppState

log = logging.getLogger("ipamd.dns")

CHANNEL = "ipamd_dns"
RELOAD_DEBOUNCE_SECONDS = 0.05
NOTIFY_TRIES = 3
NOTIFY_TIMEOUT_SECONDS = 1.0
TCP_MESSAGE_MAX = 65535
UDP_BATCH = 64  # datagrams answered per wakeup before other tasks get a turn

_ZONES = """SELECT z.name, z.default_ttl FROM dns_zones z
            JOIN dns_servers s ON s.id = z.server_id WHERE s.adapter = 'embedded'"""
_RECORDS = """SELECT z.name AS zone, r.name, r.type, r.value, coalesce(r.ttl, z.default_ttl) AS ttl
              FROM dns_records r JOIN dns_zones z ON z.id = r.zone_id
              JOIN dns_servers s ON s.id = z.server_id WHERE s.adapter = 'embedded'"""
_LEASES = """SELECT l.fqdn, host(l.ip) AS ip, l.duid, s.ddns_zone AS zone,
                    s.ddns_reverse_zone AS reverse_zone,
                    coalesce(s.ddns_ttl, z.default_ttl, 300) AS ttl
             FROM leases l JOIN subnets s ON s.id = l.subnet_id
             LEFT JOIN dns_zones z ON z.name = s.ddns_zone
             WHERE l.state = 'active' AND s.ddns_adapter = 'embedded' AND l.fqdn IS NOT NULL
               AND (family(l.ip) = 4 OR l.ia_type = 'na')
             ORDER BY l.starts_at, l.lease_id"""


async def load_rows(conn: asyncpg.Connection) -> dict[str, Any]:
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        return {"zones": await conn.fetch(_ZONES), "records": await conn.fetch(_RECORDS),
                "leases": await conn.fetch(_LEASES)}


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


class EmbeddedDns:
    def __init__(self, state: AppState) -> None:
        self.state = state
        self.config = state.config.dns
        self.zones: dict[dns.name.Name, zonedata.Zone] = {}
        self.answers = zonedata.AnswerCache()
        self.secondaries = [_endpoint(s) for s in self.config.secondaries]
        self.allowed = {ipaddress.ip_address(h) for h, _ in self.secondaries}
        self._wake = trio.Event()
        self._db_log = Throttle(log)
        self._tcp_slots = trio.CapacityLimiter(self.config.tcp_connections_max)
        self.counters = state.counters.dns

    # ---- zone data

    async def reload(self, nursery: trio.Nursery | None = None) -> None:
        rows = await self.state.db.run(load_rows)
        zones = zonedata.build(rows, self.config.ns_name, self.config.hostmaster, self.zones)
        changed = [z for origin, z in zones.items()
                   if origin not in self.zones or self.zones[origin].serial != z.serial]
        self.zones = zones
        self.counters.reloads += 1
        if nursery is not None:
            for zone in changed:
                for host, port in self.secondaries:
                    nursery.start_soon(self._notify, zone, host, port)

    async def _notify(self, zone: zonedata.Zone, host: str, port: int) -> None:
        """RFC 1996: tell a secondary the zone changed; retried a few times, then left to
        its refresh timer."""
        msg = dns.message.make_query(zone.origin, dns.rdatatype.SOA)
        msg.flags = dns.flags.AA  # first: dnspython keeps the opcode in the flags word
        msg.set_opcode(dns.opcode.NOTIFY)
        msg.answer.append(zone.soa)
        for _ in range(NOTIFY_TRIES):
            try:
                reply = await dns.asyncquery.udp(msg, host, timeout=NOTIFY_TIMEOUT_SECONDS,
                                                 port=port)
                if reply.opcode() == dns.opcode.NOTIFY:
                    self.counters.notifies += 1
                    return
            except (dns.exception.DNSException, OSError, ValueError):
                continue

    async def refresher(self, notifications: Notifications, nursery: trio.Nursery) -> None:
        async def listen() -> None:
            async for _payload in notifications:
                self._wake.set()

        nursery.start_soon(listen)
        while True:
            with trio.move_on_after(self.config.refresh_seconds):
                await self._wake.wait()
            self._wake = trio.Event()
            await trio.sleep(RELOAD_DEBOUNCE_SECONDS)  # fold a burst of changes into one
            try:
                await self.reload(nursery)
            except DB_ERRORS as error:
                log_failure(self._db_log, error, "embedded DNS could not reload: %s", error)

    # ---- listeners

    async def serve_udp(self, sock: socket.socket) -> None:
        """Answers every datagram already waiting before it yields to trio: one wakeup for
        many queries (trio's socket methods cost two scheduler trips per call, more than a
        cached answer). The socket is non-blocking."""
        with sock:
            while True:
                await trio.lowlevel.wait_readable(sock)
                for _ in range(UDP_BATCH):
                    try:
                        wire, peer = sock.recvfrom(65535)
                    except BlockingIOError:
                        break
                    except OSError:
                        continue  # e.g. ICMP errors surfacing on the socket
                    self.counters.queries += 1
                    reply = self.answers.answer(self.zones, wire)
                    if reply is not None:
                        await self._send(sock, reply, peer)
                await trio.lowlevel.checkpoint()  # TCP clients and reloads get their turn

    @staticmethod
    async def _send(sock: socket.socket, reply: bytes, peer: Any) -> None:
        try:
            sock.sendto(reply, peer)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            with contextlib.suppress(OSError):
                sock.sendto(reply, peer)
        except OSError:
            pass  # the client went away: nothing to do

    async def serve_tcp(self, listener: trio.SocketListener) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._tcp_client, stream)

    async def _tcp_client(self, stream: trio.SocketStream) -> None:
        async with stream:
            if self._tcp_slots.available_tokens == 0:
                return  # too many clients: close at once rather than queue
            async with self._tcp_slots:
                try:
                    peer = ipaddress.ip_address(stream.socket.getpeername()[0])
                    while True:
                        with trio.move_on_after(self.config.tcp_idle_seconds):
                            wire = await self._read_message(stream)
                        if wire is None:
                            return
                        for reply in self._tcp_replies(wire, peer):
                            await stream.send_all(struct.pack("!H", len(reply)) + reply)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    return

    @staticmethod
    async def _read_exactly(stream: trio.SocketStream, count: int) -> bytes | None:
        data = bytearray()
        while len(data) < count:
            chunk = await stream.receive_some(count - len(data))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    async def _read_message(self, stream: trio.SocketStream) -> bytes | None:
        head = await self._read_exactly(stream, 2)
        if head is None:
            return None
        (length,) = struct.unpack("!H", head)
        return await self._read_exactly(stream, length)

    def _tcp_replies(self, wire: bytes, peer: ipaddress.IPv4Address | ipaddress.IPv6Address
                     ) -> list[bytes]:
        self.counters.queries += 1
        query = zonedata.parse(wire)
        if query is None:
            return []
        if isinstance(query, bytes):
            self.counters.formerr += 1
            return [query]
        if query.question[0].rdtype in (dns.rdatatype.AXFR, dns.rdatatype.IXFR):
            self.counters.transfers += 1
            return zonedata.transfer(self.zones, query, peer in self.allowed)
        return [zonedata.respond(self.zones, query).to_wire(max_size=TCP_MESSAGE_MAX)]


async def run(state: AppState, *, task_status: trio.TaskStatus[None]) -> None:
    server = EmbeddedDns(state)
    await server.reload()
    notifications = await state.db.listen(CHANNEL)
    try:
        async with trio.open_nursery() as nursery:
            for listen in state.config.dns.listen:
                host, port = _endpoint(listen)
                family = trio.socket.AF_INET6 if ":" in host else trio.socket.AF_INET
                udp = socket.socket(family, socket.SOCK_DGRAM)
                udp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                udp.bind((host, port))
                udp.setblocking(False)
                nursery.start_soon(server.serve_udp, udp)
                for listener in await trio.open_tcp_listeners(port, host=host):
                    nursery.start_soon(server.serve_tcp, listener)
            nursery.start_soon(server.refresher, notifications, nursery)
            log.info("embedded DNS answering for %d zones on %s", len(server.zones),
                     ", ".join(state.config.dns.listen))
            task_status.started()
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            await notifications.release()
