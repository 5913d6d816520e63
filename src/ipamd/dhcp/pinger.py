"""The ping check's probes: one ICMP socket, many echoes outstanding, none blocking DHCP.

The engine decides that an address needs a probe (``dhcp/pingcheck.py``) and the server's
packet path hands it here (``start``, synchronous: it only queues the echo). One task ships
the queued echoes to a worker thread, a batch at a time: a send costs the kernel ~20 µs
(route look-up, the link, on a veth the receiving side too) that the thread spends off the
packet path's core, with the interpreter's lock released. Replies are read by another task
and matched by sequence number, source and data (an echo that comes late, or from elsewhere,
matches nothing); a third task ends the probes whose time is up, counted from the echo's
hand-over to the thread. Each end is reported to ``on_done`` (the server's packet path: the
Offer, or the conflict's hold and another pick), so other clients' exchanges go on while any
number of probes wait, and the memory held is bounded by ``dhcp.ping_max_outstanding``
probes.
"""

from __future__ import annotations

import heapq
import logging
import math
import secrets
import socket
import time
from collections.abc import Callable

import trio

from ipamd.dhcp import icmp
from ipamd.dhcp.context import Exchange
from ipamd.dhcp.pingcheck import ANSWERED, SILENT, UNCHECKED, PingGate, Probe

log = logging.getLogger("ipamd.dhcp.ping")

READ_EVERY = 64  # replies read before the receive task lets other tasks run
# Probes whose time is up are ended together, up to this late: at thousands of Offers a
# second one wake-up ends several instead of one each (a probe waits its timeout at least).
# 5 ms sent 6,000 Offers a second in bursts of ~30, and the Requests and Acks that follow
# bunched with them: perfdhcp's socket lost a few at 6,000-6,500/s; 1 ms lost none there
# (bench/notes/2026-12-07-dhcp.md, the ping check).
BATCH_SECONDS = 0.001

Done = Callable[[Exchange, Probe, int], None]  # (the client's exchange, its probe, result)
# An echo queued for the sender thread: (message, target, source, sequence, serial).
Echo = tuple[bytes, int, int, int, int]


class _Outstanding:
    __slots__ = ("data", "probe", "serial", "target", "tx")

    def __init__(self, tx: Exchange, probe: Probe, serial: int, data: bytes) -> None:
        self.tx = tx
        self.probe = probe
        self.target = probe.ip
        self.serial = serial
        self.data = data


class Pinger:
    """Sends the echoes the engine asks for and reports how each probe ended."""

    def __init__(self, gate: PingGate, on_done: Done,
                 after: Callable[[], None] = lambda: None) -> None:
        self.gate = gate
        self.on_done = on_done
        self.after = after  # once the probes that ended together were reported (a flush)
        self.sock: socket.socket | None = None
        self.kind = ""  # "dgram" or "raw" once open (icmp.open_socket)
        self._warned = False
        self._ident = secrets.randbits(16)  # a raw socket's; the kernel sets a dgram one's
        self._token = secrets.token_bytes(8)  # this process's: in every echo's data
        self._seq = secrets.randbits(16)
        self._serial = 0
        self._outstanding: dict[int, _Outstanding] = {}  # by sequence number
        self._deadlines: list[tuple[float, int, int]] = []  # (deadline, serial, seq)
        self._unsent: list[tuple[Exchange, Probe]] = []  # ended unchecked, reported by a task
        self._queued: list[Echo] = []  # for the sender thread's next batch
        self._wake = trio.Event()
        self._ship_wake = trio.Event()
        self._opened = trio.Event()

    def __len__(self) -> int:
        return len(self._outstanding)

    # ------------------------------------------------------------------ the packet path's side

    def start(self, tx: Exchange, probe: Probe) -> None:
        """Queue an echo to ``probe.ip`` from ``probe.source``; its end is reported later,
        never from within this call."""
        gate = self.gate
        gate.outcomes["sent"] += 1
        if self.sock is None and not self.open():
            self._unchecked(tx, probe)
            return
        self._serial += 1
        serial = self._serial
        seq = self._next_seq()
        data = self._token + serial.to_bytes(8, "big")
        self._outstanding[seq] = _Outstanding(tx, probe, serial, data)
        queued = self._queued
        queued.append((icmp.echo_request(self._ident, seq, data), probe.ip, probe.source,
                       seq, serial))
        if len(queued) == 1:
            self._ship_wake.set()

    def _next_seq(self) -> int:
        seq = self._seq
        for _ in range(0x10000):  # at most ping_max_outstanding (< 65536) are taken
            seq = (seq + 1) & 0xFFFF
            if seq not in self._outstanding:
                break
        self._seq = seq
        return seq

    def _unchecked(self, tx: Exchange, probe: Probe) -> None:
        self._unsent.append((tx, probe))
        self._wake.set()

    def open(self) -> bool:
        """Open the ICMP socket (icmp.open_socket); False, logged once and counted, when
        neither kind may be opened. The server opens it at the first probe; a test may
        open it first, in the namespace it serves."""
        try:
            self.sock, self.kind = icmp.open_socket()
        except OSError as error:
            self.gate.unavailable(time.time())
            if not self._warned:  # once: then counted (ipamd_dhcp_ping_checks unavailable)
                self._warned = True
                log.warning(
                    "ping check: cannot open an ICMP socket (%s): addresses are offered "
                    "without a probe; allow the service's group in net.ipv4.ping_group_range "
                    "or grant CAP_NET_RAW (docs/api-ipam.md, \"Ping check\")",
                    error.strerror or error)
            return False
        log.info("ping check: ICMP %s socket open", self.kind)
        self._opened.set()
        return True

    # ------------------------------------------------------------------ tasks

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._expire)
                nursery.start_soon(self._receive)
                nursery.start_soon(self._ship)
                task_status.started()
        finally:
            if self.sock is not None:
                self.sock.close()

    async def _ship(self) -> None:
        """Hand the queued echoes to a worker thread, one batch at a time (those queued
        meanwhile make the next); each probe's timeout runs from its hand-over."""
        while True:
            await self._ship_wake.wait()
            self._ship_wake = trio.Event()
            batch, self._queued = self._queued, []
            if not batch:
                continue
            sock = self.sock
            assert sock is not None  # echoes are queued only once it is open
            self._deadlines_from(batch, trio.current_time())
            failed = await trio.to_thread.run_sync(_send_all, sock, batch,
                                                   thread_name="ipamd ping sender")
            for seq, serial in failed:
                found = self._outstanding.get(seq)
                if found is not None and found.serial == serial:
                    del self._outstanding[seq]
                    self._unchecked(found.tx, found.probe)

    def _deadlines_from(self, batch: list[Echo], now: float) -> None:
        deadlines = self._deadlines
        earliest = deadlines[0][0] if deadlines else math.inf
        for _packet, _target, _source, seq, serial in batch:
            found = self._outstanding.get(seq)
            if found is not None and found.serial == serial:
                heapq.heappush(deadlines, (now + found.probe.timeout, serial, seq))
        if deadlines and deadlines[0][0] < earliest:
            self._wake.set()  # the earliest deadline moved

    async def _expire(self) -> None:
        while True:
            deadline = self._deadlines[0][0] + BATCH_SECONDS if self._deadlines else math.inf
            with trio.move_on_at(deadline):
                await self._wake.wait()
            self._wake = trio.Event()
            unsent, self._unsent = self._unsent, []
            for tx, probe in unsent:
                self.gate.outcomes["unchecked"] += 1
                self._report(tx, probe, UNCHECKED)
            now = trio.current_time()
            if self._deadlines and self._deadlines[0][0] <= now:
                # Replies already here first: a loop that ran late must not call silent a
                # host whose answer came in time (its reply task may run after this one).
                self._read_replies()
            while self._deadlines and self._deadlines[0][0] <= now:
                _deadline, serial, seq = heapq.heappop(self._deadlines)
                found = self._outstanding.get(seq)
                if found is not None and found.serial == serial:
                    del self._outstanding[seq]
                    self.gate.outcomes["silent"] += 1
                    self._report(found.tx, found.probe, SILENT)
            self._after()

    async def _receive(self) -> None:
        await self._opened.wait()
        sock = self.sock
        assert sock is not None  # open once _opened is set
        while True:
            await trio.lowlevel.wait_readable(sock)
            self._read_replies()
            self._after()
            await trio.lowlevel.checkpoint()

    def _read_replies(self) -> None:
        """Match the echo replies waiting in the socket (at most READ_EVERY)."""
        sock = self.sock
        if sock is None:
            return
        raw = self.kind == "raw"
        for _ in range(READ_EVERY):
            try:
                packet, addr = sock.recvfrom(2048)
            except BlockingIOError:
                return
            except OSError as error:  # an ICMP error queued on a dgram socket
                log.debug("ping receive: %s", error)
                continue
            source = int.from_bytes(socket.inet_aton(addr[0]), "big")
            echo = icmp.parse_reply(packet, source, ip_header=raw)
            if echo is not None:
                self._matched(echo, raw)

    def _matched(self, echo: icmp.Echo, raw: bool) -> None:
        found = self._outstanding.get(echo.seq)
        if (found is None or found.target != echo.source or found.data != echo.data
                or (raw and echo.ident != self._ident)):
            return  # late, stray, or another process's
        del self._outstanding[echo.seq]
        self.gate.outcomes["answered"] += 1
        self._report(found.tx, found.probe, ANSWERED)

    def _after(self) -> None:
        try:
            self.after()
        except Exception:
            log.exception("ping check: after the probes' ends")

    def _report(self, tx: Exchange, probe: Probe, result: int) -> None:
        self.gate.end(probe.subnet_id, probe.ip, result, time.time())
        try:
            self.on_done(tx, probe, result)
        except Exception:  # the packet path logs its own; this keeps the tasks alive
            log.exception("ping check: reporting a probe's end failed")


def _send_all(sock: socket.socket, batch: list[Echo]) -> list[tuple[int, int]]:
    """The sender thread's work: each echo of ``batch``; (sequence, serial) of those the
    kernel refused (no route, a full buffer: offered unprobed, counted)."""
    failed = []
    for packet, target, source, seq, serial in batch:
        try:
            icmp.send_echo(sock, packet, target, source)
        except OSError as error:
            log.debug("ping %s: %s", target, error)
            failed.append((seq, serial))
    return failed
