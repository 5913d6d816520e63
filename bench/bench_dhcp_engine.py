#!/usr/bin/env python3
"""The CPU of a DORA's packet work, compiled (mypyc) against the same modules as Python.

No sockets and no database: each round runs --doras new clients through what the server does
per packet — ``codec.parse``, ``engine.decide`` (Discover: an Offer from memory; Request: the
lease's Op) and, as if the commit succeeded, ``engine.finish`` (the Ack); then as many through
the server's own packet path around the engine (``dhcp/dispatch``: on_datagram, the committed
batch's answers) on a socket that keeps what is sent — in a fresh process that imports
``ipamd.dhcp`` compiled (``build/mypyc``, as ``make`` builds it) or pure Python
(``IPAMD_PURE_PYTHON=1``). Rounds alternate between the two; the medians are printed, with
the ratio. The peer is the pure-Python form of the same code (src/ipamd/dhcp/compiled.py).
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

ROOT = Path(__file__).resolve().parents[1]

PHASES = ("discover", "request", "finish")
COLUMNS = (*PHASES, "server")


def one_round(doras: int) -> dict[str, float]:
    """µs of CPU per DORA in each phase, in this process (the child's side)."""
    import ipaddress
    import uuid

    from tests.unit.dhcp.envs import ENDPOINT, make_env, make_plan, pool_row, subnet_row
    from tests.unit.dhcp.packets import ip, mac_bytes, request, wire

    from ipamd.dhcp import compiled
    from ipamd.dhcp import options as o
    from ipamd.dhcp.codec import parse
    from ipamd.dhcp.context import Exchange
    from ipamd.dhcp.engine import DhcpReply, decide, finish
    from ipamd.dhcp.leasestore import Op

    env = make_env(make_plan([subnet_row("10.77.0.0/16", gateway="10.77.0.1")],
                             [pool_row("10.77.1.0", "10.77.255.254")]), server_id="10.77.0.254")
    relay, extra = ip("10.77.1.1"), {55: bytes((1, 3, 6, 15, 51, 54))}
    clock = time.process_time
    spent = dict.fromkeys(PHASES, 0.0)
    for i in range(doras):
        mac = mac_bytes(i + 1)
        names = {**extra, 12: b"host%d" % i}
        discover = wire(request(o.DISCOVER, mac, giaddr="10.77.1.1", extra=names))
        t0 = clock()
        msg = parse(discover)
        offer = decide(Exchange(msg, msg.options[53][0], relay, 67, ENDPOINT, 0, 0.0), env)
        spent["discover"] += clock() - t0
        assert type(offer) is DhcpReply, offer
        offered = str(ipaddress.IPv4Address(offer.data[16:20]))
        req = wire(request(o.REQUEST, mac, giaddr="10.77.1.1", requested=offered,
                           server_id="10.77.0.254", extra=names))
        t0 = clock()
        msg = parse(req)
        tx = Exchange(msg, msg.options[53][0], relay, 67, ENDPOINT, 0, 0.0)
        op = decide(tx, env)
        spent["request"] += clock() - t0
        assert type(op) is Op, op
        op.ok, op.lease_id, op.expires, op.event = True, uuid.uuid4(), time.time() + 3600, "granted"
        t0 = clock()
        ack = finish(tx, env)
        spent["finish"] += clock() - t0
        assert type(ack) is DhcpReply, ack
    spent["server"] = server_path(doras)
    return {"compiled": compiled.STATUS.startswith("compiled"),
            **{k: 1e6 * v / doras for k, v in spent.items()}}


def server_path(doras: int, batch: int = 50) -> float:
    """CPU seconds for ``doras`` DORAs through the server's own packet path (dispatch:
    on_datagram, and the committed batch's answers) around the engine, without the sockets'
    system calls (a socket that keeps what is sent), trio or the database."""
    import ipaddress
    import uuid

    from tests.unit.dhcp.envs import RELAY, SERVER, make_plan, pool_row, subnet_row
    from tests.unit.dhcp.packets import mac_bytes, request, wire
    from tests.unit.dhcp.test_server_packets import make_server

    from ipamd.dhcp import options as o

    server, ep = make_server()
    server._plan_changed(make_plan([subnet_row("10.77.0.0/16", gateway="10.77.0.1")],
                                   [pool_row("10.77.1.0", "10.77.255.254")]))
    relay = RELAY
    sent = ep.sock.sent
    queue = server.committer._queue
    clock = time.process_time
    spent = 0.0
    for first in range(0, doras, batch):
        clients = range(first, min(first + batch, doras))
        discovers = [wire(request(o.DISCOVER, mac_bytes(i + 1), giaddr=relay,
                                  extra={12: b"host%d" % i})) for i in clients]
        t0 = clock()
        for data in discovers:
            server.on_datagram(data, relay, 67, ep)
        spent += clock() - t0
        offers = [str(ipaddress.IPv4Address(data[16:20])) for data, _addr in sent]
        sent.clear()
        requests = [wire(request(o.REQUEST, mac_bytes(i + 1), giaddr=relay, requested=offered,
                                 server_id=SERVER, extra={12: b"host%d" % i}))
                    for i, offered in zip(clients, offers, strict=True)]
        t0 = clock()
        for data in requests:
            server.on_datagram(data, relay, 67, ep)
        spent += clock() - t0
        txs = queue[:]
        queue.clear()
        assert len(txs) == len(requests), dict(server.counters.drops)
        for tx in txs:  # as the lease store leaves a committed grant
            op = tx.op
            op.ok, op.lease_id, op.expires, op.event = True, uuid.uuid4(), time.time() + 3600, "granted"
        t0 = clock()
        server._committed(txs, True)
        # What the pacer sends, its waits left out: each turn as its first (REPLY_BURST
        # answers), since without the waits no time passes for the pace to allow more.
        pacer = server.dispatch.pacer
        pacer.start()
        while pacer.send_burst():
            pacer.start()
        pacer.pacing = False
        spent += clock() - t0
        assert len(sent) == len(txs), dict(server.counters.drops)
        sent.clear()
    return spent


def run_child(pure: bool, doras: int) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("IPAMD_PURE_PYTHON", None)
    if pure:
        env["IPAMD_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-m", "bench.bench_dhcp_engine", "--child", str(doras)],
                          env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doras", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_round(args.child)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"compiled": [], "python": []}
    for _ in range(args.rounds):
        runs["compiled"].append(run_child(False, args.doras))
        runs["python"].append(run_child(True, args.doras))
    if not all(r["compiled"] for r in runs["compiled"]):
        print("the compiled hot path is not built or stale: run `make compiled`", file=sys.stderr)
        return 1
    medians = {mode: {k: statistics.median(r[k] for r in rs) for k in COLUMNS}
               for mode, rs in runs.items()}
    print(f"CPU per DORA (µs), median of {args.rounds} rounds of {args.doras:,} new clients")
    print(f"{'':10}" + "".join(f"{k:>10}" for k in (*PHASES, "engine", "server")))
    for mode, m in medians.items():
        engine = sum(m[k] for k in PHASES)
        print(f"{mode:10}" + "".join(f"{m[k]:10.1f}" for k in PHASES)
              + f"{engine:10.1f}{m['server']:10.1f}")
    for what, keys in (("the engine's packet work", PHASES), ("the server's path", ("server",))):
        ratio = (sum(medians["python"][k] for k in keys)
                 / sum(medians["compiled"][k] for k in keys))
        print(f"{what}: compiled is {ratio:.2f}x faster than the same modules as Python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
