"""A real HTTPS webhook receiver for tests and the benchmark (trio + h11, trustme certificates).

It checks every request the way a receiver should (docs/webhooks.md), independently of the
appliance's own signing code: X-Service-Signature over the raw bytes with a constant-time
comparison, and the Standard Webhooks signature. Replies are scripted per test: a status
(with headers), a hang, or the default 200. stop()/start() take it down and bring it back
on the same port.

Run alone (the benchmark does): python -m tests.support.receiver --cert C --key K
prints "PORT <n>" and serves GET /stats with every delivery's arrival time.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import socket
import ssl
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import h11
import trio

MAX_BODY = 1_048_576


class TlsSocketStream(trio.abc.Stream):
    """Server-side TLS by the ssl module on the socket itself; trio only waits for readiness.

    The receiver stands in for a receiver written in C: trio.SSLStream (pure Python over
    memory BIOs) would spend more of the benchmark machine's two cores on the receiving
    side than a real receiver would.
    """

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.sock = sock
        self._closed = False

    async def _io(self, fn: Any, *args: Any, sending: bool = False) -> Any:
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
            except (BlockingIOError, InterruptedError):
                waited = True
                if sending:
                    await trio.lowlevel.wait_writable(self.sock)
                else:
                    await trio.lowlevel.wait_readable(self.sock)
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return result

    async def handshake(self) -> None:
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

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self.sock)
            self.sock.close()
        await trio.lowlevel.checkpoint()


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float  # time.time() on arrival
    signature_ok: bool
    standard_ok: bool

    @property
    def delivery(self) -> str:
        return self.headers.get("x-service-delivery", "")

    @property
    def topic(self) -> str:
        return self.headers.get("x-service-topic", "")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b"ok"
    hang: bool = False  # never answer (until the receiver stops or release() is called)
    drop: bool = False  # close the connection without answering


def verify_service(header: str, secrets: list[bytes], body: bytes) -> bool:
    """A receiver written as docs/webhooks.md asks: one `sha256=<hex>` value, checked against
    every secret it knows (old and new during a rotation)."""
    offered = header.strip().encode()
    ok = False
    for secret in secrets:
        expected = ("sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()).encode()
        ok |= hmac.compare_digest(expected, offered)
    return ok


def verify_standard(headers: dict[str, str], secrets: list[bytes], body: bytes) -> bool:
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    offered = [v.partition(",")[2] for v in headers.get("webhook-signature", "").split()]
    signed = f"{msg_id}.{stamp}.".encode() + body
    ok = False
    for secret in secrets:
        key = base64.b64decode(secret[6:]) if secret.startswith(b"whsec_") else secret
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        for value in offered:
            ok |= hmac.compare_digest(expected.encode(), value.encode())
    return ok


class Receiver:
    def __init__(
        self, ssl_context: ssl.SSLContext | None, secrets: list[bytes] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.ssl_context = ssl_context
        self.secrets = list(secrets or [])
        self.host = host
        self.port = 0
        self.received: list[Received] = []
        self.connections = 0
        self.script: deque[Reply] = deque()
        self.default = Reply()
        self._scope: trio.CancelScope | None = None
        self._changed = trio.Event()
        self._release = trio.Event()

    # ---- control ---------------------------------------------------------------------------

    def url(self, path: str = "/hook", host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def reply_next(self, *replies: Reply) -> None:
        """Script the next replies, in order; then the default applies."""
        self.script.extend(replies)

    def release(self) -> None:
        """Let hanging requests go (they answer 200)."""
        self._release.set()
        self._release = trio.Event()

    async def start(self, nursery: trio.Nursery) -> None:
        await nursery.start(self._serve)

    def stop(self) -> None:
        """Close the listener and every connection: the receiver is down."""
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        with trio.fail_after(timeout):
            while len(self.received) < count:
                await self._changed.wait()
        return self.received

    async def wait_for_deliveries(self, ids: set[str], timeout: float = 10.0) -> None:
        with trio.fail_after(timeout):
            while not ids <= {r.delivery for r in self.received}:
                await self._changed.wait()

    # ---- server ----------------------------------------------------------------------------

    async def _serve(self, *, task_status: trio.TaskStatus[None]) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            listeners = await trio.open_tcp_listeners(self.port, host=self.host)
            self.port = listeners[0].socket.getsockname()[1]
            async with trio.open_nursery() as nursery:
                await nursery.start(trio.serve_listeners, self._connection, listeners)
                task_status.started()

    async def _connection(self, tcp: trio.SocketStream) -> None:
        self.connections += 1
        stream: trio.abc.Stream = tcp
        if self.ssl_context is not None:
            raw = socket.socket(fileno=tcp.socket.detach())
            raw.setblocking(False)
            tls = TlsSocketStream(self.ssl_context.wrap_socket(
                raw, server_side=True, do_handshake_on_connect=False))
            try:
                await tls.handshake()
            except (ssl.SSLError, OSError):
                await tls.aclose()
                return
            stream = tls
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_BODY)
        try:
            while True:
                request = await self._next(conn, stream)
                if not isinstance(request, h11.Request):
                    return
                body = b""
                while True:
                    event = await self._next(conn, stream)
                    if isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                reply = self._on_request(request, body)
                if reply.drop:
                    return
                if reply.hang:
                    await self._release.wait()
                    reply = Reply()
                headers = [("Content-Length", str(len(reply.body))), *reply.headers]
                await stream.send_all(conn.send(h11.Response(status_code=reply.status,
                                                             headers=headers)))
                await stream.send_all(conn.send(h11.Data(data=reply.body)))
                await stream.send_all(conn.send(h11.EndOfMessage()))
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError,
                ssl.SSLError, OSError):
            return
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await trio.aclose_forcefully(stream)

    @staticmethod
    async def _next(conn: h11.Connection, stream: trio.abc.Stream) -> Any:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
                continue
            return event

    def _on_request(self, request: h11.Request, body: bytes) -> Reply:
        headers = {k.decode().lower(): v.decode() for k, v in request.headers}
        path = request.target.decode()
        if request.method == b"GET" and path == "/stats":
            stats = {
                "count": len(self.received),
                "connections": self.connections,
                "cpu_seconds": time.process_time(),
                "signature_failures": sum(not r.signature_ok for r in self.received),
                "at": {r.delivery: r.at for r in self.received},
            }
            return Reply(body=json.dumps(stats).encode())
        self.received.append(
            Received(
                method=request.method.decode(), path=path, headers=headers, body=body,
                at=time.time(),
                signature_ok=verify_service(
                    headers.get("x-service-signature", ""), self.secrets, body
                ),
                standard_ok=verify_standard(headers, self.secrets, body),
            )
        )
        self._changed.set()
        self._changed = trio.Event()
        return self.script.popleft() if self.script else self.default


# The names the test receiver's certificate covers (tests map hook.test to 127.0.0.1).
CERT_NAMES = ("localhost", "127.0.0.1", "::1", "hook.test")


def trustme_context(ca: Any, names: tuple[str, ...] = CERT_NAMES) -> ssl.SSLContext:
    """A server context with a certificate from a trustme CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


def server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


async def _main(args: argparse.Namespace) -> None:
    receiver = Receiver(server_context(args.cert, args.key), [s.encode() for s in args.secret],
                        host=args.host)
    receiver.port = args.port
    async with trio.open_nursery() as nursery:
        await receiver.start(nursery)
        print(f"PORT {receiver.port}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--secret", action="append", default=[])
    try:
        trio.run(_main, parser.parse_args())
    except KeyboardInterrupt:
        sys.exit(0)
