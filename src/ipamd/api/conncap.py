"""Caps on the connections an API process holds: per client address and in all
(docs/security.md, "Connections").

Every connection hypercorn accepts passes here before anything is read from it. One past
either cap is closed at once: no TLS handshake and no HTTP answer (a 503 would first cost
the handshake, the CPU and time the cap is there to save; the loopback face's plain HTTP
would need the client's request read first, or the close resets the answer away).

The counts are each API process's own (no round trip per connection to another process):
with N worker processes one address may hold N x per_address connections in all.

Loopback clients (the box itself: its scripts, monitoring, the first token's bootstrap) are
capped like any other address. None of them needs more than a handful of connections, and
an exemption would let any process or web page on the box fill the process's cap and lock
out every remote client. (Loopback is exempt from the rate limits, which count
requests; this counts what a process holds open.) A client may use any address of 127/8:
each is an address of its own.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

log = logging.getLogger("ipamd.api.conncap")

# A flood is logged once, then at most once a minute with the count refused since.
LOG_EVERY_SECONDS = 60.0

Handler = Callable[[trio.abc.Stream], Awaitable[None]]


class ConnectionCaps:
    """One process's open connections, by client address and in all."""

    def __init__(self, per_address: int, per_process: int) -> None:
        self.per_address = per_address
        self.per_process = per_process
        self.open = 0
        self.by_address: dict[str, int] = {}
        self.refused = 0  # all told
        self._unlogged = 0
        self._logged_at: float | None = None

    def take(self, address: str) -> bool:
        """Count a connection from ``address`` in, if both caps allow it."""
        held = self.by_address.get(address, 0)
        if self.open >= self.per_process or held >= self.per_address:
            self._note_refusal(address, held)
            return False
        self.open += 1
        self.by_address[address] = held + 1
        return True

    def release(self, address: str) -> None:
        self.open -= 1
        held = self.by_address[address] - 1
        if held:
            self.by_address[address] = held
        else:
            del self.by_address[address]

    def _note_refusal(self, address: str, held: int) -> None:
        self.refused += 1
        self._unlogged += 1
        now = trio.current_time()
        if self._logged_at is not None and now - self._logged_at < LOG_EVERY_SECONDS:
            return
        self._logged_at = now
        log.warning("refused %d connection(s) past the caps (%d open in this process, cap "
                    "%d; %s holds %d, cap %d per address)", self._unlogged, self.open,
                    self.per_process, address, held, self.per_address)
        self._unlogged = 0


def client_address(stream: trio.abc.Stream) -> str | None:
    """The peer's IP address (an IPv4-mapped IPv6 one as IPv4), or None: it is gone."""
    transport: Any = getattr(stream, "transport_stream", stream)  # TLS: its socket's
    try:
        host = transport.socket.getpeername()[0]
    except OSError:
        return None
    address = ipaddress.ip_address(host.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


async def serve_capped(caps: ConnectionCaps, handler: Handler, stream: trio.abc.Stream) -> None:
    """Serve ``stream`` with ``handler`` if the caps allow; else close it at once."""
    address = client_address(stream)
    if address is None or not caps.take(address):
        with trio.CancelScope(shield=True):
            # The transport itself: a TLS stream's own close would start a handshake.
            await getattr(stream, "transport_stream", stream).aclose()
        return
    try:
        await handler(stream)
    finally:
        caps.release(address)
