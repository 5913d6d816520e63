#!/usr/bin/env python3
"""What one DHCP answer costs the machine to send: a ``sendto`` per datagram against
segmented sends (UDP_SEGMENT, as ``dhcp/outgoing.py`` sends a burst to one relay).

Two network namespaces joined by a veth pair (10.77.0.1 and 10.77.0.2, as in bench_dhcp),
a receiver process in one reading every datagram, the sender in the other sending
``--count`` datagrams of ``--size`` bytes in bursts of ``--burst`` with a short sleep
between bursts (so the receiver keeps up and nothing is lost). Printed per datagram: the
sender's CPU (user + system) and the whole machine's busy time (``/proc/stat``: the
receiver, softirqs and the kernel's work wherever it ran), and what the receiver got
(every datagram whole). ``--rounds`` alternating rounds, medians. No peer: the comparison
is between the two ways of sending, on one machine, in one run.

    .venv/bin/python -m bench.bench_udp_send                  # ~1 minute, as root
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.support import netns

from ipamd.dhcp.outgoing import UDP_SEGMENT

SENDER, RECEIVER, PORT = "10.77.0.1", "10.77.0.2", 6700
# The receiver counts datagrams until none comes for a second; each must have the size sent.
_RECEIVE = r"""
import socket, sys
size = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind((sys.argv[2], int(sys.argv[3])))
print("ready", flush=True)
s.settimeout(10)
got = wrong = 0
try:
    while True:
        if len(s.recv(65535)) == size:
            got += 1
        else:
            wrong += 1
        s.settimeout(1)
except socket.timeout:
    pass
print(got, wrong, flush=True)
"""


def _machine_busy() -> float:
    """Seconds of CPU the machine spent busy (all but idle and iowait) since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def send(mode: str, count: int, size: int, burst: int) -> tuple[float, float]:
    """Send ``count`` datagrams; (sender CPU, machine busy) in seconds."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((SENDER, 0))
    dest = (RECEIVER, PORT)
    payloads = [bytes([n % 256]) * size for n in range(burst)]
    segment = [(socket.IPPROTO_UDP, UDP_SEGMENT, size.to_bytes(2, sys.byteorder))]
    cpu0, busy0 = os.times(), _machine_busy()
    for _ in range(count // burst):
        if mode == "sendto":
            for payload in payloads:
                sock.sendto(payload, dest)
        else:
            sock.sendmsg(payloads, segment, 0, dest)
        time.sleep(0.0005)
    cpu1, busy1 = os.times(), _machine_busy()
    sock.close()
    return (cpu1.user - cpu0.user + cpu1.system - cpu0.system), busy1 - busy0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=300, help="bytes a datagram (300: DHCP's)")
    parser.add_argument("--burst", type=int, default=32, help="datagrams a burst (1-64)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not 1 <= args.burst <= 64 or not 1 <= args.size <= 1472 or args.count < args.burst:
        parser.error("burst 1..64, size 1..1472, count >= burst")
    if reason := netns.unavailable_reason():
        sys.exit(f"bench_udp_send: {reason}")
    count = args.count - args.count % args.burst
    figures: dict[str, list[tuple[float, float]]] = {"sendto": [], "segmented": []}
    with netns.lab() as lab:
        snd, rcv = lab.namespace("snd"), lab.namespace("rcv")
        lab.veth("u", snd, rcv, f"{SENDER}/16", f"{RECEIVER}/16")
        for round_ in range(args.rounds):
            order = ("sendto", "segmented") if round_ % 2 == 0 else ("segmented", "sendto")
            for mode in order:
                receiver = lab.spawn(rcv, [sys.executable, "-c", _RECEIVE, str(args.size),
                                           RECEIVER, str(PORT)],
                                     stdout=subprocess.PIPE, text=True)
                assert receiver.stdout is not None
                if receiver.stdout.readline().strip() != "ready":
                    sys.exit("bench_udp_send: the receiver did not start")
                with netns.inside(snd):
                    cpu, busy = send(mode, count, args.size, args.burst)
                out, _ = receiver.communicate(timeout=30)
                got, wrong = (int(x) for x in out.split())
                figures[mode].append((cpu / count * 1e6, busy / count * 1e6))
                print(f"round {round_ + 1} {mode:9s} sender {cpu / count * 1e6:5.2f} us, "
                      f"machine {busy / count * 1e6:5.2f} us a datagram; received {got:,} "
                      f"of {count:,}" + (f", {wrong} of another size" if wrong else ""),
                      flush=True)
    medians = {mode: (statistics.median(c for c, _ in rows), statistics.median(b for _, b in rows))
               for mode, rows in figures.items()}
    (c1, b1), (c2, b2) = medians["sendto"], medians["segmented"]
    print(f"median, {args.size}-byte datagrams in bursts of {args.burst}: sendto each "
          f"{c1:.2f} us sender / {b1:.2f} us machine; segmented {c2:.2f} / {b2:.2f} "
          f"({b2 / b1:.2f}x the machine's CPU)")


if __name__ == "__main__":
    main()
