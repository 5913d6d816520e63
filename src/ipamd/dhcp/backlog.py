"""Answers a full socket buffer refused (``outgoing.Outgoing.backlog``), sent once writable.

``Outgoing`` is synchronous (and compiled with the hot path); the waiting is here, for both
servers: each runs ``Backlog.send`` as a task of its nursery and gives ``Backlog.wake`` to
its ``Outgoing`` as ``wake_backlog``. The answers leave in their order, one datagram a call,
each counted as sent or as ``send_failed``.
"""

from __future__ import annotations

import trio

from ipamd.dhcp.outgoing import Outgoing


class Backlog:
    def __init__(self) -> None:
        self._wake = trio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def send(self, out: Outgoing) -> None:
        """Forever: wait to be woken, then send ``out.backlog`` as its sockets take it."""
        backlog, counters = out.backlog, out.counters
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while backlog:
                ep, addr, data, mtype = backlog.pop(0)
                try:
                    await trio.lowlevel.wait_writable(ep.sock)
                    ep.sock.sendto(data, addr)
                    counters.sent[mtype] += 1
                except OSError:
                    counters.drops["send_failed"] += 1
