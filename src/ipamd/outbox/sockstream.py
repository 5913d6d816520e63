"""The delivery client's streams: a plain non-blocking socket, TLS done by the ssl module on it.

httpcore's trio backend (what httpx uses on trio) runs TLS through trio.SSLStream: the ssl
module over memory BIOs with every record shuttled through Python (buffers, a lock-step
state machine, a send and a receive lock), which was a third of the delivery client's CPU.
Here an ssl.SSLSocket reads and writes the socket itself in C and trio only waits for
readiness when the kernel has nothing (wait_readable / wait_writable), so a delivery that
fits one segment costs one send() and one or two recv() calls.

Each stream is used by one task at a time (one request per connection, lanes.py). Timeouts
apply to the waits only: an operation that completes at once never sets up a cancel scope.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpx
import trio

from ipamd.outbox.errors import reason_of

T = TypeVar("T")


async def _wait(sock: socket.socket, *, writable: bool, timeout: float | None,
                timeout_error: type[Exception]) -> None:
    wait = trio.lowlevel.wait_writable if writable else trio.lowlevel.wait_readable
    if timeout is None:
        await wait(sock)
        return
    with trio.move_on_after(timeout) as scope:
        await wait(sock)
    if scope.cancelled_caught:
        raise timeout_error(f"no progress within {timeout:g} s")


class SocketStream:
    """A connected TCP socket (non-blocking, TCP_NODELAY), or the TLS session over one."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._closed = False
        self._poller: select.poll | None = None

    async def _io(self, operation: Callable[..., T], *args: Any, timeout: float | None,
                  writing: bool, timeout_error: type[Exception], error: type[Exception]
                  ) -> T:
        if self._closed:
            raise error("the connection is closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                return operation(*args)
            except ssl.SSLWantReadError:  # a TLS write may need a read first (key update)
                await _wait(self.sock, writable=False, timeout=timeout,
                            timeout_error=timeout_error)
            except ssl.SSLWantWriteError:
                await _wait(self.sock, writable=True, timeout=timeout,
                            timeout_error=timeout_error)
            except (BlockingIOError, InterruptedError):
                await _wait(self.sock, writable=writing, timeout=timeout,
                            timeout_error=timeout_error)
            except OSError as failure:
                raise error(reason_of(failure)) from failure

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # A closed TLS session (close_notify, or a bare FIN: suppress_ragged_eofs) reads b"".
        return await self._io(self.sock.recv, max_bytes, timeout=timeout,
                              writing=False, timeout_error=httpx.ReadTimeout,
                              error=httpx.ReadError)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        while view:
            sent = await self._io(self.sock.send, view, timeout=timeout, writing=True,
                                  timeout_error=httpx.WriteTimeout, error=httpx.WriteError)
            view = view[sent:]

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self.sock)
            self.sock.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> SocketStream:
        """The TLS session over this connection (which is handed over to it)."""
        try:
            # The same descriptor, now owned by the SSLSocket (this object is done with it).
            tls = ssl_context.wrap_socket(self.sock, server_hostname=server_hostname,
                                          do_handshake_on_connect=False,
                                          suppress_ragged_eofs=True)
        except (OSError, ValueError) as failure:
            await self.aclose()
            raise httpx.ConnectError(reason_of(failure)) from failure
        stream = SocketStream(tls)
        try:
            await stream._io(tls.do_handshake, timeout=timeout, writing=True,
                             timeout_error=httpx.ConnectTimeout, error=httpx.ConnectError)
        except BaseException:
            await stream.aclose()
            raise
        return stream

    @property
    def tls(self) -> ssl.SSLSocket | None:
        return self.sock if isinstance(self.sock, ssl.SSLSocket) else None

    def readable(self) -> bool:
        """Something to read (or the end of the stream) right now. On an idle connection
        that means the receiver closed it (or sent junk): not reusable."""
        if self._closed:
            return True
        if self._poller is None:  # asked before every reuse: registered once
            self._poller = select.poll()
            self._poller.register(self.sock, select.POLLIN)
        return bool(self._poller.poll(0))


async def connect(address: str, port: int, timeout: float | None,
                  options: Iterable[tuple[int, int, Any]] = ()) -> SocketStream:
    """A TCP connection to one (already vetted) address."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for option in options:
            sock.setsockopt(*option)
        try:
            sock.connect((address, port))
        except BlockingIOError:
            await _wait(sock, writable=True, timeout=timeout,
                        timeout_error=httpx.ConnectTimeout)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code)) from None
    except OSError as failure:
        sock.close()
        raise httpx.ConnectError(reason_of(failure)) from failure
    except BaseException:
        sock.close()
        raise
    return SocketStream(sock)
