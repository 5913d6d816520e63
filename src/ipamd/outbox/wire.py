"""One client connection: a non-blocking socket, optionally TLS, driven from trio.

trio.SSLStream is pure Python around OpenSSL's memory BIOs; here the ssl module works on the
socket itself (OpenSSL does the record I/O in C) and trio only waits for readiness. Measured
on this machine that is ~90 µs less CPU per request, a large part of a delivery's cost.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

import trio

T = TypeVar("T")


class Wire(trio.abc.Stream):
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._closed = False

    async def _io(self, fn: Callable[..., T], *args: Any, sending: bool = False) -> T:
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = False
        while True:
            try:
                result = fn(*args)
                break
            except ssl.SSLWantReadError:
                waited = True
                await trio.lowlevel.wait_readable(self.sock)
            except ssl.SSLWantWriteError:
                waited = True
                await trio.lowlevel.wait_writable(self.sock)
            except (BlockingIOError, InterruptedError):  # a plain socket, or TCP under TLS
                waited = True
                if sending:
                    await trio.lowlevel.wait_writable(self.sock)
                else:
                    await trio.lowlevel.wait_readable(self.sock)
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return result

    async def handshake(self) -> None:
        assert isinstance(self.sock, ssl.SSLSocket)
        await self._io(self.sock.do_handshake, sending=True)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            sent = await self._io(self.sock.send, view, sending=True)
            view = view[sent:]

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.wait_writable(self.sock)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await self._io(self.sock.recv, max_bytes or 65_536)

    def stale(self) -> bool:
        """While idle: readable means the peer closed it (or sent what nobody asked for)."""
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return True
        poller = select.poll()
        poller.register(self.sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self.sock)
            self.sock.close()  # no TLS close_notify: the receiver needs nothing more
        await trio.lowlevel.checkpoint()


async def open_wire(
    address: str, port: int, ssl_context: ssl.SSLContext | None, server_hostname: str
) -> Wire:
    """TCP to `address` (already vetted); TLS with SNI and certificate check for the name."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    tsock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        tsock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await tsock.connect((address, port))
    except BaseException:
        tsock.close()
        raise
    raw = socket.socket(family, socket.SOCK_STREAM, fileno=tsock.detach())
    raw.setblocking(False)
    if ssl_context is None:
        return Wire(raw)
    wire = Wire(ssl_context.wrap_socket(raw, server_hostname=server_hostname,
                                        do_handshake_on_connect=False))
    try:
        await wire.handshake()
    except BaseException:
        await wire.aclose()
        raise
    return wire
