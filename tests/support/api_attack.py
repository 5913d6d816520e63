"""Hostile HTTP clients against the API's loopback face, in a process of their own (so the
test process, which runs the appliance's main process and its DHCP server, spends nothing
on them): ``python -m tests.support.api_attack PORT [IDLE]``.

Three attacks at once, each restarted whenever the server closes its connection:
- ``IDLE`` (500) connections that never send a byte, 50 from each of 127.0.1.1, 127.0.1.2, …
  (under the per-address cap, so the API holds them);
- a header line that never ends, from 127.0.3.1: 16 KiB of one header value after another;
- a pipelining flood, from 127.0.2.1: requests written in batches of 256 without waiting for
  an answer, the answers read and counted.

Every REPORT_SECONDS a JSON line on stdout: ``idle`` (connections open now),
``header_bytes`` (sent, all told), ``header_closed`` (times the server closed that
connection), ``answers`` (pipelined answers read). It runs until killed or its stdin closes.
"""

from __future__ import annotations

import json
import socket
import sys

import trio

REPORT_SECONDS = 0.2
PER_ADDRESS = 50
REQUEST = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BATCH = 256
HEAD_START = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Endless: "
FILLER = b"a" * 16384


class Counters:
    def __init__(self) -> None:
        self.idle = 0
        self.header_bytes = 0
        self.header_closed = 0
        self.answers = 0

    def line(self) -> bytes:
        return json.dumps(vars(self)).encode() + b"\n"


async def connect(port: int, source: str) -> trio.SocketStream:
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    await sock.bind((source, 0))
    await sock.connect(("127.0.0.1", port))
    return trio.SocketStream(sock)


_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


async def idle(port: int, source: str, counters: Counters) -> None:
    while True:
        try:
            async with await connect(port, source) as stream:
                counters.idle += 1
                try:
                    while await stream.receive_some(1024):
                        pass  # (nothing comes: this client never asks)
                finally:
                    counters.idle -= 1
        except _GONE:
            await trio.sleep(0.05)


async def endless_header(port: int, counters: Counters) -> None:
    while True:
        try:
            async with await connect(port, "127.0.3.1") as stream:
                await stream.send_all(HEAD_START)
                while True:
                    await stream.send_all(FILLER)
                    counters.header_bytes += len(FILLER)
        except _GONE:
            counters.header_closed += 1
            await trio.sleep(0.01)


async def pipelining_flood(port: int, counters: Counters) -> None:
    while True:
        try:
            stream = await connect(port, "127.0.2.1")
        except _GONE:
            await trio.sleep(0.01)
            continue
        async with stream, trio.open_nursery() as nursery:
            nursery.start_soon(_flood, stream)
            await _count_answers(stream, counters)
            nursery.cancel_scope.cancel()


async def _flood(stream: trio.SocketStream) -> None:
    batch = REQUEST * BATCH
    try:
        while True:
            await stream.send_all(batch)
    except _GONE:
        pass  # the reader sees the end too


async def _count_answers(stream: trio.SocketStream, counters: Counters) -> None:
    tail = b""
    try:
        while data := await stream.receive_some(65536):
            seen = tail + data
            counters.answers += seen.count(b"HTTP/1.1 ")
            tail = seen[-8:]
    except _GONE:
        pass


async def report(counters: Counters) -> None:
    out = trio.lowlevel.FdStream(sys.stdout.fileno())
    while True:
        await out.send_all(counters.line())
        await trio.sleep(REPORT_SECONDS)


async def until_stdin_closes() -> None:
    stream = trio.lowlevel.FdStream(sys.stdin.fileno())
    while await stream.receive_some(1024):
        pass


async def main(port: int, idle_count: int) -> None:
    counters = Counters()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(report, counters)
        for n in range(idle_count):
            nursery.start_soon(idle, port, f"127.0.1.{n // PER_ADDRESS + 1}", counters)
        nursery.start_soon(endless_header, port, counters)
        nursery.start_soon(pipelining_flood, port, counters)
        await until_stdin_closes()
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 500)
