"""kill -9 of ipamd while DHCPv6 clients run Solicit/Advertise/Request/Reply through a relay:
no binding that got a Reply is lost (docs/dhcpv6.md: a Reply that grants goes out only after its
commit). A real `ipamd run` process with only the DHCPv6 server on [::1]; its clients are
tasks of the test sharing one relay socket. After the kill, every (DUID, address) a client
was told of is an active lease in the database, and no address was granted to two DUIDs.
After a restart the server answers with the same DUID.

CI runs 16 clients; IPAMD_KILL9_CLIENTS sets another count (``make dhcp6-kill9-lab`` runs
1,000). The kill lands once max(150, 3 * clients) Replies have been granted, so every
client is mid-run; the pool is widened to 2^16 addresses, since each round is a new DUID."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

import ipamd
from ipamd.db.bridge import Database
from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message, RelayMessage, parse
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import IaNa
from tests.integration.dhcp6.harness import Relay6, message, relay_socket, seed_v6


def _clients() -> int:
    """How many clients run at once: IPAMD_KILL9_CLIENTS (default 16, the CI figure)."""
    text = os.environ.get("IPAMD_KILL9_CLIENTS", "16")
    if not text.isdigit() or not 1 <= int(text) <= 5000:
        raise ValueError(f"IPAMD_KILL9_CLIENTS={text!r}: a whole number from 1 to 5000")
    return int(text)


CLIENTS = _clients()
# Replies granted before the kill (the whole run goes on while it lands): enough that every
# client has been through a few rounds.
BEFORE_KILL = max(150, 3 * CLIENTS)
POOL_END = "2001:db8:77:1::ffff"  # one DUID per round: room for every round of a long run


def _free_udp6() -> int:
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        sock.bind(("::1", 0))
        return int(sock.getsockname()[1])


def _free_tcp() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(path: Path, dsn: str, port: int) -> None:
    def toml(value: Any) -> str:
        return json.dumps(value)

    lines = [
        f"state_dir = {toml(str(path.parent / 'state'))}",
        "[database]", f"dsn = {toml(dsn)}", "pool_min = 1", "pool_max = 4",
        "[api]", "public_enabled = false",
        f"loopback_listen = {toml(f'127.0.0.1:{_free_tcp()}')}", "workers = 1",
        "[dhcp]", "enabled = false",
        "[dhcp6]", "enabled = true", f"listen = {toml([f'[::1]:{port}'])}", "reply_port = 0",
        'trusted_relays = ["::1/128"]',
        "[outbox]", "enabled = false",
        "[logging]", "access_log = false",
    ]
    path.write_text("\n".join(lines) + "\n")


def _start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    src = str(Path(ipamd.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": src + (os.pathsep + path if path else "")}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "ipamd", "--config", str(config), "run"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)


def _duid(n: int) -> Duid:
    return Duid.ll(bytes.fromhex("0200") + n.to_bytes(4, "big"))


class WaitingRelay(Relay6):
    """Relay6 that wakes only the exchange a Relay-reply answers: with a thousand clients
    waiting, waking them all at every reply would make the test, not ipamd, the limit."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.waiting: dict[int, trio.Event] = {}

    async def run(self) -> None:
        while True:
            data = await self.sock.recv(65535)
            try:
                outer = parse(data)
            except p.Malformed:
                self.garbage += 1
                continue
            inner = outer.relayed if isinstance(outer, RelayMessage) else None
            while isinstance(inner, RelayMessage):
                inner = inner.relayed
            if not isinstance(outer, RelayMessage) or inner is None:
                self.garbage += 1
                continue
            event = self.waiting.pop(inner.transaction_id, None)
            if event is not None:  # a late answer to an exchange given up is dropped
                self.replies[inner.transaction_id] = [(outer, inner)]
                event.set()

    async def reply(self, xid: int, timeout: float = 5.0) -> tuple[RelayMessage, Message] | None:
        event = self.waiting.setdefault(xid, trio.Event())
        with trio.move_on_after(timeout):
            await event.wait()
            return self.replies.pop(xid)[0]
        self.waiting.pop(xid, None)
        return None

    async def exchange(self, msg: Message, timeout: float = 5.0, **relay: Any) -> Message | None:
        self.waiting[msg.transaction_id] = trio.Event()  # before the send: no lost wake-up
        return await super().exchange(msg, timeout, **relay)


class Sarr:
    """Clients doing Solicit → Advertise → Request → Reply, one new DUID per round."""

    def __init__(self, relay: Relay6) -> None:
        self.relay = relay
        self.granted: list[tuple[str, str]] = []  # (DUID text, address) of every Reply
        self._xid = 0
        self._next_duid = 0

    def _xid_next(self) -> int:
        self._xid = (self._xid + 1) % (1 << 24)
        return self._xid

    async def client(self, stop: trio.Event) -> None:
        while not stop.is_set():
            self._next_duid += 1
            duid = _duid(self._next_duid)
            advertise = await self.relay.exchange(message(p.SOLICIT, self._xid_next(), duid),
                                                  timeout=1.0)
            if advertise is None or advertise.msg_type != p.ADVERTISE:
                continue
            ia = advertise.first(IaNa)
            if ia is None or not ia.addresses:
                continue
            address = str(ia.addresses[0].address)
            reply = await self.relay.exchange(
                message(p.REQUEST, self._xid_next(), duid, server=advertise.server_duid,
                        na=[address]), timeout=1.0)
            if reply is None:
                continue
            got = reply.first(IaNa)
            if got is not None and got.addresses and got.addresses[0].valid > 0:
                self.granted.append((duid.text, str(got.addresses[0].address)))


async def _active(conn: Any) -> set[tuple[str, str]]:
    rows = await conn.fetch("SELECT duid, host(ip) AS ip FROM leases "
                            "WHERE state = 'active' AND ia_type = 'na'")
    return {(r["duid"], r["ip"]) for r in rows}


async def test_kill_9_loses_no_binding_that_got_a_reply(db: Database, dsn: str,
                                                         tmp_path: Path) -> None:
    ids = await db.transaction(seed_v6)
    await db.run(lambda conn: conn.execute("UPDATE pools SET end_ip = $1 WHERE subnet_id = $2",
                                           POOL_END, ids["subnet_id"]))
    port = _free_udp6()
    config = tmp_path / "ipamd.toml"
    _config(config, dsn, port)
    log = tmp_path / "ipamd.log"
    proc = _start(config, log)
    sock = relay_socket()
    relay = WaitingRelay(trio.socket.from_stdlib_socket(sock), ("::1", port))
    load = Sarr(relay)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.run)
            stop = trio.Event()
            for _ in range(CLIENTS):
                nursery.start_soon(load.client, stop)
            # Start-up included (clients retry until it answers); bounded, not a timing.
            with trio.fail_after(60 + BEFORE_KILL / 10):
                while len(load.granted) < BEFORE_KILL:
                    assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
                    await trio.sleep(0.02)
            proc.send_signal(signal.SIGKILL)  # mid-run: commits and Replies in flight
            await trio.to_thread.run_sync(lambda: proc.wait(timeout=10))
            assert proc.returncode == -signal.SIGKILL
            await trio.sleep(1.0)  # answers already on their way still arrive
            stop.set()
            nursery.cancel_scope.cancel()
        granted = list(load.granted)
        stored = await db.run(_active)
        lost = [g for g in granted if g not in stored]
        assert not lost, lost[:5]
        addresses = [address for _, address in granted]
        assert len(set(addresses)) == len(addresses)  # no address told to two clients
        first_duid = await db.run(lambda conn: conn.fetchval("SELECT duid FROM dhcp6_server"))

        # Restarted, it answers with the DUID it had.
        proc = _start(config, log)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.run)
            with trio.fail_after(60):
                while True:
                    answer = await relay.exchange(message(p.SOLICIT, 0xABCDEF, _duid(1 << 30)),
                                                  timeout=0.5)
                    if answer is not None:
                        break
            assert answer.server_duid is not None and answer.server_duid.raw == first_duid
            nursery.cancel_scope.cancel()
        print(f"\ndhcp6 kill -9: clients={CLIENTS} replies={len(granted)} lost={len(lost)}")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        sock.close()
