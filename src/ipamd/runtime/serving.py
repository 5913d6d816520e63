"""The API on the wire: hypercorn's configuration, the TLS context, the listening sockets,
and serving an app in the main process or in an API worker. The only module of the runtime
that knows hypercorn."""

from __future__ import annotations

import logging
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.typing import ASGIFramework
from hypercorn.utils import repr_socket_addr

from ipamd.api.balance import ConnectionShare
from ipamd.api.conncap import ConnectionCaps
from ipamd.api.serve import serve
from ipamd.config import Config, ConfigError
from ipamd.dhcp.sockets import interface_addresses
from ipamd.tls import ensure_self_signed, harden_server_context, load_pair


class _ServerConfig(HypercornConfig):
    """hypercorn's configuration, with its TLS context adding to Python's defaults instead of
    replacing them (tls.harden_server_context)."""

    def create_ssl_context(self) -> ssl.SSLContext | None:
        context = super().create_ssl_context()
        return None if context is None else harden_server_context(context)


def hypercorn_config(config: Config) -> HypercornConfig:
    hc = _ServerConfig()
    hc.graceful_timeout = config.api.graceful_timeout_seconds
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")
    # Read by api/http1.py: between requests, and for a request's whole head.
    hc.keep_alive_timeout = config.api.idle_timeout_seconds
    hc.ssl_handshake_timeout = config.api.tls_handshake_timeout_seconds
    # HTTP/1.1 only: hypercorn's h2 would serve a connection outside every bound of
    # api/http1.py (head size, pipelining, idle deadlines, the rate limit before the app);
    # the console and the scripts speak HTTP/1.1.
    hc.alpn_protocols = ["http/1.1"]
    if config.api.public_enabled and config.api.public_listen:
        cert, key = _tls_pair(config)
        hc.certfile, hc.keyfile = str(cert), str(key)
        hc.bind = list(config.api.public_listen)
        hc.insecure_bind = [config.api.loopback_listen]
    else:
        hc.bind = [config.api.loopback_listen]
    return hc


def _tls_pair(config: Config) -> tuple[Path, Path]:
    """The public face's certificate and key: the configured pair, or a self-signed one."""
    if config.api.tls_cert and config.api.tls_key:
        cert, key = config.path(config.api.tls_cert), config.path(config.api.tls_key)
        try:
            load_pair(cert, key)
        except (OSError, ValueError) as error:
            # Named here, not as a traceback from deep inside hypercorn's TLS set-up.
            raise ConfigError(f"api.tls_cert / api.tls_key: {error}") from None
        return cert, key
    return ensure_self_signed(config.path(config.state_dir) / "tls", interface_addresses())


def connection_caps(config: Config) -> ConnectionCaps:
    """This API process's caps (api/conncap.py)."""
    return ConnectionCaps(config.api.max_connections_per_address,
                          config.api.max_connections_per_worker)


async def serve_in_main_process(app: ASGIFramework, config: Config, stop: trio.Event, *,
                                task_status: trio.TaskStatus[list[str]]) -> None:
    """The API in this process, on the configured addresses, until ``stop``; then it drains."""
    await serve(app, hypercorn_config(config), connection_caps(config),
                shutdown_trigger=stop.wait, task_status=task_status)


@dataclass
class Listeners:
    """The listening sockets every API worker accepts from (bound once, in the main
    process, so a restarted worker finds the backlog waiting), and their URLs."""

    secure: list[socket.socket]
    plain: list[socket.socket]
    binds: list[str]

    def close(self) -> None:
        for sock in (*self.secure, *self.plain):
            sock.close()


def _bind_url(scheme: str, sock: socket.socket) -> str:
    return f"{scheme}://{repr_socket_addr(sock.family, sock.getsockname())}"


def listeners(config: Config) -> Listeners:
    """Bind the API's sockets (a port 0 in the configuration, as the tests use, is resolved
    here). How the workers share the connections is api/balance.py's rule, not the kernel's."""
    hc = hypercorn_config(config)
    sockets = hc.create_sockets()
    for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
        sock.listen(hc.backlog)
    binds = ([_bind_url("https", s) for s in sockets.secure_sockets]
             + [_bind_url("http", s) for s in sockets.insecure_sockets])
    return Listeners(list(sockets.secure_sockets), list(sockets.insecure_sockets), binds)


async def serve_in_worker(app: ASGIFramework, config: Config, https_fds: list[int],
                          http_fds: list[int], share: ConnectionShare, stop: trio.Event, *,
                          task_status: trio.TaskStatus[list[str]]) -> None:
    """The API in an API worker, on the sockets its parent passed, taking connections by
    ``share``'s rule (api/balance.py), until ``stop``; then it drains."""
    hc = hypercorn_config(config)
    hc.bind = [f"fd://{fd}" for fd in https_fds]
    hc.insecure_bind = [f"fd://{fd}" for fd in http_fds]
    if not https_fds:
        hc.bind, hc.insecure_bind = hc.insecure_bind, []
    share.start_serving()
    try:
        await serve(app, hc, connection_caps(config), share=share,
                    shutdown_trigger=stop.wait, task_status=task_status)
    finally:
        share.stop_serving()
