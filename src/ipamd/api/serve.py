"""The API served on trio listeners by a loop of our own, every part of it a parameter: the
listening sockets, the connection share of api/balance.py (API workers), the connection
caps of api/conncap.py, and api/http1.py as the connection handler.

hypercorn's trio server builds its listeners and a server per connection inside its serve
function, with a parameter for neither, so serving through it meant rebinding names in
its modules (docs/DEVELOPING.md: no global mutable state). hypercorn still reads the
configuration (``Config``: bind, TLS files, timeouts; its sockets and TLS context) and
drives the app's ASGI lifespan.

The order is hypercorn's: the app's lifespan starts; the listeners accept, each connection
(TLS or plain) passing the caps before a byte is read or written; on shutdown every
connection is told to stop (no request after the one in hand; an idle one closes at once),
the listeners close, those still busy get ``graceful_timeout`` to finish, and then the
app's lifespan ends.
"""

from __future__ import annotations

import functools
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import trio
from hypercorn.config import Config, Sockets
from hypercorn.trio.lifespan import Lifespan
from hypercorn.typing import ASGIFramework
from hypercorn.utils import repr_socket_addr, wrap_app

from ipamd.api.balance import BalancedListener, ConnectionShare
from ipamd.api.conncap import ConnectionCaps, serve_capped
from ipamd.api.http1 import AsgiApp, Http1Settings, serve_connection

log = logging.getLogger("ipamd.api.serve")

Handler = Callable[[trio.abc.Stream], Awaitable[None]]
Listener = trio.abc.Listener[trio.abc.Stream]


def open_listeners(sockets: Sockets, tls: ssl.SSLContext | None,
                   share: ConnectionShare | None = None) -> tuple[list[Listener], list[str]]:
    """trio listeners on ``sockets`` (TLS on the secure ones), each accepting by
    ``share``'s rule when given (an API worker's), and their URLs."""
    listeners: list[Listener] = []
    binds: list[str] = []
    for sock in sockets.secure_sockets:
        if tls is None:
            raise ValueError("secure sockets need a TLS context (certfile and keyfile)")
        listeners.append(trio.SSLListener(_accepting(sock, share), tls,
                                          https_compatible=True))
        binds.append(f"https://{repr_socket_addr(sock.family, sock.getsockname())}")
    for sock in sockets.insecure_sockets:
        listeners.append(_accepting(sock, share))
        binds.append(f"http://{repr_socket_addr(sock.family, sock.getsockname())}")
    return listeners, binds


def _accepting(sock: socket.socket, share: ConnectionShare | None,
               ) -> trio.SocketListener | BalancedListener:
    inner = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    return inner if share is None else BalancedListener(inner, share)


async def _guarded(handler: Handler, stream: trio.abc.Stream) -> None:
    """One connection's fault ends that connection, never the accept loop."""
    try:
        await handler(stream)
    except Exception:
        log.exception("serving a connection failed")


async def serve_listeners(listeners: Sequence[Listener], handler: Handler, *,
                          shutdown_trigger: Callable[[], Awaitable[Any]],
                          stopping: trio.Event, graceful_timeout: float) -> None:
    """Accept on every listener and run ``handler`` per connection until
    ``shutdown_trigger`` returns; then set ``stopping`` (which ``handler`` watches), close
    the listeners and give the connections ``graceful_timeout`` to end."""
    async def guarded(stream: trio.abc.Stream) -> None:
        await _guarded(handler, stream)

    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            async def accept() -> None:
                await trio.serve_listeners(guarded, list(listeners),
                                           handler_nursery=connections)

            accepting.start_soon(accept)
            await shutdown_trigger()
            # Told before the listeners close: a request answered from now on says
            # Connection: close, and a connection accepted meanwhile is closed unserved.
            stopping.set()
            accepting.cancel_scope.cancel()  # each listener closes as its loop ends
        connections.cancel_scope.deadline = trio.current_time() + graceful_timeout


def _listening(config: Config, sockets: Sockets | None) -> Sockets:
    if sockets is None:
        sockets = config.create_sockets()
    for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
        sock.listen(config.backlog)
    return sockets


async def serve(app: ASGIFramework, config: Config, caps: ConnectionCaps, *,
                shutdown_trigger: Callable[[], Awaitable[Any]],
                sockets: Sockets | None = None, share: ConnectionShare | None = None,
                task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
                ) -> None:
    """Serve ``app`` over HTTP/1.x on ``sockets`` (else those ``config`` binds) until
    ``shutdown_trigger`` returns, then drain; ``task_status`` gets the URLs served."""
    lifespan_state: dict[str, Any] = {}
    lifespan = Lifespan(wrap_app(app, config.wsgi_max_body_size, "asgi"), config,
                        lifespan_state)
    async with trio.open_nursery() as lifespan_nursery:
        await lifespan_nursery.start(lifespan.handle_lifespan)
        await lifespan.wait_for_startup()
        listeners, binds = open_listeners(_listening(config, sockets),
                                          config.create_ssl_context(), share)
        stopping = trio.Event()
        # http1 passes the ASGI messages as ASGI defines them: plain dicts.
        connection = functools.partial(serve_connection, cast(AsgiApp, app),
                                       Http1Settings.from_config(config), stopping,
                                       lifespan_state)
        task_status.started(binds)
        await serve_listeners(listeners, functools.partial(serve_capped, caps, connection),
                              shutdown_trigger=shutdown_trigger, stopping=stopping,
                              graceful_timeout=config.graceful_timeout)
        await lifespan.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()
