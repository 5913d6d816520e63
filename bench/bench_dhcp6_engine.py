#!/usr/bin/env python3
"""The CPU of a DHCPv6 SARR's packet work, and of its commit, per message.

No sockets and no database for the packet work: each round runs --clients new clients through
what the server does per relayed message, as ``perfdhcp -6 -A1`` sends them (one
Relay-forward around a Solicit, then a Request for the advertised address), in a fresh
process that imports ``ipamd.dhcp6`` (``IPAMD_PURE_PYTHON=1`` asks for pure Python where a
compiled form exists). Phases, µs of CPU per message:

  solicit  Relay-forward octets → parse → relay unwrap → link → classify → decide (Advertise)
           → Relay-reply octets (the server's ``dispatch.send`` and ``flush``, to a socket
           that keeps them)
  request  the Request's octets → … → decide (the Reply and its lease changes) → the lease
           store's ``Op6``s (as the server builds them)
  reply    after the commit: the bindings remembered and the Reply's Relay-reply octets
  server   the whole SARR through the server's own path (``Dhcp6Server.on_datagram``, then
           ``_committed`` for the batch as if it committed) on a socket that keeps what is
           sent: per SARR, not per message

``--held N`` puts N live bindings of other clients in the server's cache first (a server that
has been serving: the binding cache's upkeep grows with it).

``--commit`` measures the other side: ``leasestore.commit6`` (the committer's own code) on a
private durable PostgreSQL, batches of --batch grants (one IA_NA each), then renewals of
them: the PostgreSQL backend's CPU per binding (from /proc), the Python side's CPU per
binding (building the statement's arrays, reading its rows), the wall time and the WAL
bytes per binding (the last does not vary with the machine's load);
then the backend's CPU per binding deriving the journal rows those changes wrote (history
and events: ``core.lease_events.derive``, as the deriver does).

Run from the repository root: ``.venv/bin/python -m bench.bench_dhcp6_engine [--commit]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("solicit", "request", "reply")
LINK = "2001:db8:77:1::1"  # the relay's link-address (perfdhcp -A1: its own address)
SUBNET = "2001:db8:77:1::/64"
POOL = ("2001:db8:77:1::1:0", "2001:db8:77:1::ff:ffff")
OTHER_LINKS = 24  # a site's other IPv6 subnets: the link look-up is not a one-entry plan


def _duid(n: int) -> bytes:
    """perfdhcp's clients: DUID-LLT, a MAC per client."""
    return bytes.fromhex("000100012e5b1c00") + b"\x02\x00" + n.to_bytes(4, "big")


def _messages(n: int, server_duid: bytes | None, address: str | None) -> bytes:
    """A perfdhcp-shaped Relay-forward (hop-count 0, link = peer = the relay, option 9 only)
    around a Solicit (no server id) or a Request (server id, the advertised address)."""
    from tests.unit.dhcp6.wire import client, ia, iaaddr, opt, relay

    options = [opt(8, b"\0\0"), opt(1, _duid(n)), opt(6, b"\x00\x17\x00\x18")]
    if server_duid is None:
        inner = client(1, n & 0xFFFFFF, *options, opt(3, ia(1, 3600, 5400)))
    else:
        held = opt(5, iaaddr(address or "::", 0, 0))
        inner = client(3, n & 0xFFFFFF, *options, opt(2, server_duid),
                       opt(3, ia(1, 3600, 5400, held)))
    return relay(12, 0, LINK, LINK, opt(9, inner))


def make_plan() -> Any:
    from ipaddress import IPv6Address, IPv6Network

    from ipamd.core import option6_shapes
    from ipamd.dhcp6.plan import Link, Plan6, Pool6

    options = {23: option6_shapes.wire(23, {"addresses": ["2001:db8::53"]}),
               24: option6_shapes.wire(24, {"domains": ["example.com"]})}
    links = [Link(f"00000000-0000-7000-8000-{k:012x}", IPv6Network(f"2001:db8:77:{k:x}::/64"),
                  pools=(Pool6(IPv6Address(f"2001:db8:77:{k:x}::100"),
                               IPv6Address(f"2001:db8:77:{k:x}::1ff")),), options=options)
             for k in range(2, 2 + OTHER_LINKS)]
    links.append(Link("00000000-0000-7000-8000-000000000001", IPv6Network(SUBNET),
                      pools=(Pool6(IPv6Address(POOL[0]), IPv6Address(POOL[1])),),
                      options=options))
    return Plan6(tuple(links))


class _Socket:
    """Keeps what the server sends: a segmented send (``dhcp.outgoing``) as its datagrams,
    which the server passes as one buffer each."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, Any]] = []

    def sendto(self, data: bytes, dest: Any) -> int:
        self.sent.append((data, dest))
        return len(data)

    def sendmsg(self, buffers: list[bytes], _ancillary: Any, _flags: int, dest: Any) -> int:
        self.sent.extend((data, dest) for data in buffers)
        return sum(len(data) for data in buffers)


def make_server(held: int = 0) -> tuple[Any, Any]:
    from ipamd.config import parse as parse_config
    from ipamd.core.lease_events import JournalPending
    from ipamd.dhcp6 import plan_loader
    from ipamd.dhcp6.duid import Duid
    from ipamd.dhcp6.server import Dhcp6Server
    from ipamd.dhcp6.sockets import Endpoint

    config = parse_config({"dhcp6": {"enabled": True, "trusted_relays": ["2001:db8:77::/48"]}})
    server = Dhcp6Server(config.dhcp6, None, JournalPending(),  # type: ignore[arg-type]
                         plan_refresh_seconds=config.dhcp.plan_refresh_seconds)
    server.plans.current = plan_loader.VersionedPlan6(make_plan(), 1)
    server.server_duid = Duid(bytes.fromhex("0004") + bytes(range(16)))
    _hold(server, held)
    return server, Endpoint(sock=_Socket(), host="::", port=547)  # type: ignore[arg-type]


def _hold(server: Any, held: int) -> None:
    """``held`` live bindings of other clients in the cache before the round (a server
    that has been serving): addresses spread over the pool, as its probes spread them."""
    import uuid
    from ipaddress import IPv6Address

    from ipamd.dhcp6.duid import Duid
    from ipamd.dhcp6.plan import Binding, IaType

    low, high = int(IPv6Address(POOL[0])), int(IPv6Address(POOL[1]))
    expires = time.time() + 86_400
    for n in range(held):
        address = IPv6Address(low + n * 2_654_435_761 % (high - low + 1))
        server.cache.put(uuid.UUID(int=(1 << 100) + n), Binding(
            IaType.NA, Duid(_duid(10_000_000 + n)), 1, address, 128, "active", expires))


def _committed(ops: Any, lease_ids: Any) -> None:
    """As the lease store leaves a committed grant."""
    for op in ops.ops:
        op.ok, op.lease_id, op.expires, op.event = True, next(lease_ids), time.time() + 7200, \
            "granted"


def engine_round(clients: int, held: int = 0) -> dict[str, float]:
    """µs of CPU per message in each phase, the server's own code called step by step."""
    import uuid

    from ipamd.dhcp6 import codec, relay
    from ipamd.dhcp6.plan import Binding

    server, ep = make_server(held)
    sent, dest = ep.sock.sent, (LINK, 547)
    duid_raw = server.server_duid.raw
    lease_ids = (uuid.UUID(int=k) for k in range(1, 1 << 62))
    clock = time.process_time
    spent = dict.fromkeys(PHASES, 0.0)
    for n in range(clients):
        t0 = clock()
        relayed = relay.unwrap(codec.parse(_messages(n, None, None)))
        decision = _decide(server, relayed)
        _send(server, ep, dest, relayed, decision)  # the Relay-reply's octets, "sent"
        spent["solicit"] += clock() - t0
        offered = _address(sent.pop()[0])
        request = _messages(n, duid_raw, offered)
        t0 = clock()
        relayed = relay.unwrap(codec.parse(request))
        decision = _decide(server, relayed)
        ops = [server.dispatch.op(change, relayed, relayed.link_address)
               for change in decision.changes]
        spent["request"] += clock() - t0
        assert len(ops) == 1 and str(ops[0].ip) == offered, (ops, offered)
        for op in ops:
            op.ok, op.lease_id, op.expires, op.event = True, next(lease_ids), \
                time.time() + 7200, "granted"
        t0 = clock()
        for op in ops:  # the server's _remember, one binding
            server.cache.put(op.lease_id, Binding(
                decision.changes[0].ia_type, decision.changes[0].duid, op.iaid, op.ip,
                op.prefix_length, "active", op.expires))
        _send(server, ep, dest, relayed, decision)
        spent["reply"] += clock() - t0
        sent.clear()
    return {k: 1e6 * v / clients for k, v in spent.items()}


def _send(server: Any, ep: Any, dest: Any, relayed: Any, decision: Any) -> None:
    """The server's send (it queues the answer), then its ``flush``."""
    server.dispatch.send(ep, dest, relayed, decision)
    server.flush()


def _decide(server: Any, relayed: Any) -> Any:
    import time as _time

    from ipamd.dhcp6 import engine
    from ipamd.dhcp6.classify import classify

    plan = server.plans.current.plan
    link = plan.link_for(relayed.link_address)
    layer = relayed.client_link_layer
    classes = classify(relayed.message, plan.classes, None if layer is None else layer.mac)
    return engine.decide(relayed.message, link, server.cache, server.server_duid, _time.time(),
                         classes)


def _address(relay_reply: bytes) -> str:
    """The first IA Address in a relayed Advertise/Reply, read from the octets."""
    from ipaddress import IPv6Address

    at = relay_reply.find(b"\x00\x05\x00\x18")  # option 5, 24 octets (no nested options)
    assert at > 0, relay_reply.hex()
    return str(IPv6Address(relay_reply[at + 4 : at + 20]))


def server_round(clients: int, held: int = 0, batch: int = 64) -> float:
    """µs of CPU per SARR through the server's own packet path around the engine."""
    import uuid

    server, ep = make_server(held)
    sent, queue = ep.sock.sent, server.committer._queue
    source = (LINK, 547, 0, 0)
    lease_ids = (uuid.UUID(int=k) for k in range(1, 1 << 62))
    duid_raw = server.server_duid.raw
    clock = time.process_time
    spent = 0.0
    for first in range(0, clients, batch):
        span = range(first, min(first + batch, clients))
        solicits = [_messages(n, None, None) for n in span]
        t0 = clock()
        for data in solicits:
            server.on_datagram(ep, data, source)
        server.flush()  # as the receive loop after a burst
        spent += clock() - t0
        requests = [_messages(n, duid_raw, _address(data))
                    for n, (data, _dest) in zip(span, sent, strict=True)]
        sent.clear()
        t0 = clock()
        for data in requests:
            server.on_datagram(ep, data, source)
        server.flush()  # as the receive loop after a burst
        spent += clock() - t0
        pending = queue[:]
        queue.clear()
        assert len(pending) == len(requests), dict(server.counters.drops)
        for item in pending:
            _committed(item.op, lease_ids)
        t0 = clock()
        server._committed(pending, True)
        _paced(server.dispatch.pacer)
        spent += clock() - t0
        assert len(sent) == len(requests), dict(server.counters.drops)
        sent.clear()
    return 1e6 * spent / clients


def _paced(pacer: Any) -> None:
    """What the pacer sends of a committed batch past REPLY_BURST (``dhcp.pacing``), its
    waits left out: each turn as its first, as bench_dhcp_engine's server path does."""
    if not pacer.queued:
        return
    pacer.start()
    while pacer.send_burst():
        pacer.start()
    pacer.pacing = False


def one_round(clients: int, held: int) -> dict[str, Any]:
    from ipamd.dhcp import compiled

    figures: dict[str, Any] = engine_round(clients, held)
    figures["server"] = server_round(clients, held)
    figures["compiled"] = compiled.STATUS.startswith("compiled")
    return figures


def run_child(pure: bool, clients: int, held: int) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("IPAMD_PURE_PYTHON", None)
    if pure:
        env["IPAMD_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-m", "bench.bench_dhcp6_engine", "--child", str(clients),
                           "--held", str(held)], env=env,
                          capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"the bench's child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def packet_work(clients: int, rounds: int, held: int) -> None:
    runs = [run_child(False, clients, held) for _ in range(rounds)]
    columns = (*PHASES, "server")
    medians = {k: statistics.median(r[k] for r in runs) for k in columns}
    print(f"DHCPv6 CPU per message (µs), median of {rounds} rounds of {clients:,} new clients "
          f"(relayed SARR), {held:,} bindings held; server: per SARR, whole path")
    print("".join(f"{k:>10}" for k in (*columns, "sarr")))
    sarr = medians["solicit"] + medians["request"] + medians["reply"]
    print("".join(f"{medians[k]:10.1f}" for k in columns) + f"{sarr:10.1f}")


# --------------------------------------------------------------------------- the commit


def _grants(subnet_id: Any, first: int, count: int, kind: Any) -> list[Any]:
    from ipaddress import IPv6Address

    from ipamd.dhcp.leasestore import Op6, Ops6

    base = int(IPv6Address(POOL[0]))
    return [Ops6([Op6(kind, subnet_id, IPv6Address(base + n), 128, _duid(n), 1, "na",
                      preferred=4500, valid=7200, giaddr=LINK)])
            for n in range(first, first + count)]


async def _commit_all(conn: Any, subnet_id: Any, kind: Any, event: str, batch: int,
                      count: int) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) in ``commit6`` for ``count`` bindings."""
    from ipamd.dhcp import leasestore

    wall = cpu = 0.0
    for first in range(0, count, batch):
        groups = _grants(subnet_id, first, min(batch, count - first), kind)
        started, spent = time.perf_counter(), time.process_time()
        await leasestore.commit6(conn, groups)
        wall += time.perf_counter() - started
        cpu += time.process_time() - spent
        if not all(op.ok and op.event == event for g in groups for op in g.ops):
            raise RuntimeError(f"a binding was refused, or not {event}")
    return wall, cpu


def _backend_cpu(pid: int) -> float:
    """The backend's CPU seconds so far, from schedstat's nanoseconds (stat's are 10 ms ticks)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


async def _wal_bytes(conn: Any, since: str | None = None) -> Any:
    """The WAL insert position, or the WAL bytes written since ``since``: what a change
    writes does not vary with the machine's load, unlike its CPU."""
    if since is None:
        return await conn.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    return await conn.fetchval(
        "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::text::pg_lsn)::float8", since)


async def _measure_commit(pg: Any, batch: int, count: int) -> list[float]:
    """µs per binding: backend CPU, Python CPU, wall, derive CPU, and WAL bytes per binding
    of the commits — for grants, then for renewals."""
    import asyncpg
    from tests.integration.dhcp6.harness import seed_v6
    from tests.support import postgres

    from ipamd.core import lease_events
    from ipamd.dhcp.leasestore import OpKind
    from ipamd.dhcp.sessions import SESSION_SETTINGS

    admin = await asyncpg.connect(pg.dsn("postgres"))
    name = postgres.next_name()
    try:
        await postgres.clone(admin, name)
        conn = await asyncpg.connect(pg.dsn(name), server_settings=SESSION_SETTINGS)
        try:
            subnet_id = (await seed_v6(conn))["subnet_id"]
            await conn.execute("UPDATE pools SET start_ip = $1, end_ip = $2", *POOL)
            pid = await conn.fetchval("SELECT pg_backend_pid()")
            out: list[float] = []
            for kind, event in ((OpKind.INSERT, "granted"), (OpKind.ACK, "renewed")):
                mark = await _wal_bytes(conn)
                before = _backend_cpu(pid)
                wall, cpu = await _commit_all(conn, subnet_id, kind, event, batch, count)
                committed = _backend_cpu(pid)
                wal = await _wal_bytes(conn, mark)
                while await lease_events.derive(conn):  # history rows and events, as the
                    pass                                # deriver makes them (the journal)
                out += [1e6 * (committed - before) / count, 1e6 * cpu / count,
                        1e6 * wall / count, 1e6 * (_backend_cpu(pid) - committed) / count,
                        wal / count]
            return out
        finally:
            await conn.close()
    finally:
        try:
            await postgres.drop(admin, name)
        finally:
            await admin.close()


def commit_cost(batch: int, count: int, rounds: int) -> None:
    import asyncio

    from tests.support import postgres

    print(f"commit6: {count:,} bindings in batches of {batch}, durable PostgreSQL, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    pg = postgres.start(durable=True)
    try:
        runs = [asyncio.run(_measure_commit(pg, batch, count)) for _ in range(rounds)]
    finally:
        pg.stop()
    figures = [statistics.median(r[k] for r in runs) for k in range(10)]
    print(f"  µs per binding, median of {rounds}:  backend CPU   Python CPU   wall   derive CPU"
          "   WAL bytes")
    for label, at in (("grant (IA_NA insert)", 0), ("renew", 5)):
        print(f"  {label:32s} {figures[at]:11.1f} {figures[at + 1]:12.1f} "
              f"{figures[at + 2]:6.1f} {figures[at + 3]:12.1f} {figures[at + 4]:11.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commit", action="store_true", help="leasestore.commit6's cost")
    parser.add_argument("--batch", type=int, default=64, help="bindings per commit (--commit)")
    parser.add_argument("--held", type=int, default=0,
                        help="live bindings of other clients in the cache before each round")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_round(args.child, args.held)))
        return 0
    if args.commit:
        commit_cost(args.batch, args.clients, args.rounds)
        return 0
    packet_work(args.clients, args.rounds, args.held)
    return 0


if __name__ == "__main__":
    sys.exit(main())
