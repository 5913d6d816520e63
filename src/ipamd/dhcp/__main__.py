"""Run only the DHCP server (and its expiry worker) on a chosen address:port.

    python -m ipamd.dhcp --config config/ipamd.toml --listen 127.0.0.1:6767 \\
        --reply-port 6768 --trusted 127.0.0.0/8

Everything else comes from the TOML file ([database], the rest of [dhcp]); the
options given here replace the matching [dhcp] keys. No HTTP API is started: this is
for benchmarks and for running the server next to an appliance that serves the API.
``ipamd run`` runs the whole appliance, DHCP included, from the TOML file alone.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import trio

from ipamd import logsetup
from ipamd.config import Config, ConfigError, load, parse
from ipamd.db.bridge import asyncio_loop
from ipamd.dhcp import expiry
from ipamd.dhcp.server import DhcpServer
from ipamd.runtime import prepare_database, supervise
from ipamd.state import AppState

log = logging.getLogger("ipamd.dhcp")


def configure(args: argparse.Namespace) -> Config:
    config = load(args.config)
    data = config.model_dump()
    dhcp = data["dhcp"]
    dhcp["enabled"] = True
    if args.listen:
        dhcp["listen"] = args.listen
    if args.reply_port is not None:
        dhcp["reply_port"] = args.reply_port
    if args.client_port is not None:
        dhcp["client_port"] = args.client_port
    if args.trusted:
        dhcp["trusted_relays"] = args.trusted
    if args.server_id is not None:
        dhcp["server_id"] = args.server_id
    if args.dsn:
        data["database"]["dsn"] = args.dsn
    return parse(data)


async def serve(config: Config) -> None:
    async with asyncio_loop():
        db = await prepare_database(config)
        try:
            state = AppState(config=config, db=db)
            async with trio.open_nursery() as nursery:
                server = DhcpServer(state)
                await nursery.start(server.run)
                await nursery.start(supervise, "dhcp_expiry", expiry.run, state)
                log.info("dhcp listening on %s",
                         ", ".join(f"{h}:{p}" for h, p in server.addresses))
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        break
                log.info("dhcp counters %s", server.counters.snapshot())
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await db.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ipamd.dhcp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="TOML file (default: $IPAMD_CONFIG, else built-in)")
    parser.add_argument("--listen", action="append", metavar="HOST:PORT",
                        help="replaces dhcp.listen (repeatable)")
    parser.add_argument("--reply-port", type=int, help="replaces dhcp.reply_port")
    parser.add_argument("--client-port", type=int, help="replaces dhcp.client_port")
    parser.add_argument("--trusted", action="append", metavar="CIDR",
                        help="replaces dhcp.trusted_relays (repeatable)")
    parser.add_argument("--server-id", help="replaces dhcp.server_id")
    parser.add_argument("--dsn", help="replaces database.dsn (an external Postgres)")
    args = parser.parse_args(argv)
    try:
        config = configure(args)
    except ConfigError as error:
        print(f"ipamd.dhcp: configuration error: {error}", file=sys.stderr)
        return 2
    logsetup.configure(config.logging.level)
    try:
        trio.run(serve, config)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
