"""A loopback DHCP load generator that acts as a relay: full DORA per simulated client.

    python -m ipamd.dhcp.loadgen --server 127.0.0.1:6767 --relay 127.77.0.1 \\
        --clients 20000 --outstanding 256 [--rate 3000] [--release]

The relay socket is bound to --relay (that address is giaddr, so the server sends its
replies there, on the port given to the server as dhcp.reply_port: see --relay-port).
Each client sends Discover, answers the Offer with a Request, and counts the Ack; at
most --outstanding transactions are in flight (and at most --rate new ones a second).
Prints DORA/s, timeouts, NAKs and latency percentiles as JSON. Plain sockets and
prebuilt packets: it costs the machine far less than the server it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import sys
import time
from collections import deque

_COOKIE = b"\x63\x82\x53\x63"


def _packet(mtype: int, xid: int, mac: bytes, giaddr: bytes, extra: bytes = b"") -> bytes:
    head = struct.pack("!BBBBIHH", 1, 1, 6, 1, xid, 0, 0) + bytes(12) + giaddr
    head += mac.ljust(16, b"\0") + bytes(192) + _COOKIE
    body = bytes((53, 1, mtype)) + bytes((55, 4, 1, 3, 6, 15)) + extra + b"\xff"
    return (head + body).ljust(300, b"\0")


def _options(data: bytes) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    pos, n = 240, len(data)
    while pos < n:
        code = data[pos]
        if code == 255:
            break
        if code == 0:
            pos += 1
            continue
        size = data[pos + 1]
        out[code] = data[pos + 2 : pos + 2 + size]
        pos += 2 + size
    return out


def run(args: argparse.Namespace) -> dict[str, object]:
    host, _, port = args.server.rpartition(":")
    server = (host, int(port))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for option in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, 8 << 20)
            break
        except OSError:
            continue
    sock.bind((args.relay, args.relay_port))
    sock.setblocking(False)
    giaddr = socket.inet_aton(args.relay)
    base = (os.getpid() & 0xFFFF) << 16
    todo = deque(range(args.clients))
    started: dict[int, float] = {}  # xid -> start of its DORA
    stage: dict[int, int] = {}  # xid -> 1 waiting for offer, 3 waiting for ack
    sent_at: dict[int, float] = {}
    latencies: list[float] = []
    done = naks = timeouts = 0
    addresses: set[bytes] = set()
    duplicates = 0
    interval = 1.0 / args.rate if args.rate else 0.0
    next_start = time.perf_counter()
    t0 = time.perf_counter()
    deadline = t0 + args.max_seconds
    recv = sock.recvfrom
    send = sock.sendto
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while (todo or stage) and time.perf_counter() < deadline:
        now = time.perf_counter()
        while todo and len(stage) < args.outstanding and (not interval or now >= next_start):
            n = todo.popleft()
            xid = base + n
            mac = b"\x02\x01" + n.to_bytes(4, "big")
            send(_packet(1, xid, mac, giaddr), server)
            started[xid] = sent_at[xid] = now
            stage[xid] = 1
            next_start = max(next_start + interval, now - 0.05) if interval else now
        poller.poll(1)
        while True:
            try:
                data, _ = recv(4096)
            except BlockingIOError:
                break
            if len(data) < 244:
                continue
            xid = struct.unpack_from("!I", data, 4)[0]
            waiting = stage.get(xid)
            mtype = _options(data).get(53, b"\0")[0]
            if waiting == 1 and mtype == 2:
                opts = _options(data)
                extra = bytes((50, 4)) + data[16:20] + bytes((54, 4)) + opts.get(54, bytes(4))
                mac = data[28:34]
                send(_packet(3, xid, mac, giaddr, extra), server)
                stage[xid] = 3
                sent_at[xid] = time.perf_counter()
            elif waiting == 3 and mtype == 5:
                yiaddr = data[16:20]
                if yiaddr in addresses:
                    duplicates += 1
                addresses.add(yiaddr)
                if args.release:
                    mac = data[28:34]
                    rel = _packet(7, xid ^ 0x80000000, mac, giaddr,
                                  bytes((54, 4)) + _options(data).get(54, bytes(4)))
                    send(rel[:12] + yiaddr + rel[16:], server)
                latencies.append(time.perf_counter() - started.pop(xid))
                del stage[xid], sent_at[xid]
                done += 1
            elif waiting is not None and mtype == 6:
                naks += 1
                del stage[xid], sent_at[xid]
                started.pop(xid)
        now = time.perf_counter()
        for xid in [x for x, at in sent_at.items() if now - at > args.timeout]:
            timeouts += 1
            del stage[xid], sent_at[xid]
            started.pop(xid)
    elapsed = time.perf_counter() - t0
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2) \
            if latencies else 0.0

    return {
        "clients": args.clients, "completed": done, "naks": naks, "timeouts": timeouts,
        "unfinished": len(stage) + len(todo), "duplicate_addresses": duplicates,
        "seconds": round(elapsed, 3), "dora_per_second": round(done / elapsed, 1),
        "latency_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": pct(1.0)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ipamd.dhcp.loadgen", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True, help="the server's HOST:PORT")
    parser.add_argument("--relay", default="127.77.0.1", help="relay address = giaddr")
    parser.add_argument("--relay-port", type=int, default=6768,
                        help="port to receive replies on (the server's dhcp.reply_port)")
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--outstanding", type=int, default=256)
    parser.add_argument("--rate", type=float, default=0.0, help="new DORAs per second; 0 = max")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per exchange")
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--release", action="store_true", help="release each lease after Ack")
    result = run(parser.parse_args(argv))
    print(json.dumps(result))
    return 0 if result["timeouts"] == 0 and result["duplicate_addresses"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
