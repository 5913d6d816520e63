"""`ipamd run | db-server | migrate | token | status | check-config`."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from typing import Any

from ipamd import __version__, logsetup
from ipamd.config import Config, ConfigError, load, redacted
from ipamd.db.bridge import DatabaseRefused
from ipamd.db.cluster import ClusterError

log = logging.getLogger("ipamd")


def _config(args: argparse.Namespace) -> Config:
    return load(args.config)


def cmd_run(args: argparse.Namespace) -> int:
    import trio

    from ipamd import runtime

    config = _config(args)
    logsetup.configure(config.logging.level)
    trio.run(runtime.run, config)
    return 0


def cmd_db_server(args: argparse.Namespace) -> int:
    """Supervisor's `postgres` program: initdb once, then become postgres."""
    from ipamd import runtime

    config = _config(args)
    logsetup.configure(config.logging.level)
    if not config.database.bundled:
        # Supervisor starts this program on every box; with an external database it has
        # nothing to run. Exiting would make supervisor restart it forever (BACKOFF), so
        # say so once and idle until stopped.
        signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))
        log.info("database.dsn is set (external database): the bundled postgres is not "
                 "used; idle until stopped")
        while True:
            signal.pause()
    cluster = runtime.bundled_cluster(config)
    cluster.init()
    cluster.exec_server(fast=not config.database.durable)
    return 0  # not reached


def cmd_migrate(args: argparse.Namespace) -> int:
    from ipamd import runtime
    from ipamd.db.bridge import run_sync

    config = _config(args)
    logsetup.configure(config.logging.level)

    async def go() -> None:
        db = await runtime.prepare_database(config)
        await db.close()

    run_sync(go)
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    """Mint a token directly in the database: recovery on the box itself."""
    from ipamd import runtime
    from ipamd.db.bridge import run_sync
    from ipamd.ipam import tokens

    config = _config(args)
    logsetup.configure("WARNING")

    async def go() -> dict[str, Any]:
        db = await runtime.prepare_database(config)
        try:
            return await db.transaction(
                tokens.create, "cli:local", args.name, args.role, None, False
            )
        finally:
            await db.close()

    created = run_sync(go)
    print(json.dumps({"id": str(created["id"]), "token": created["token"]}))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """The token-free probe: 0 when the database answers and every enabled service of this
    node heartbeats as running; 1 naming what is not."""
    import socket

    import trio

    from ipamd import runtime
    from ipamd.db.bridge import run_once, run_sync
    from ipamd.ops import status

    config = _config(args)
    logsetup.configure("ERROR")
    name = config.node_name or socket.gethostname()

    async def go() -> dict[str, Any] | None:
        with trio.fail_after(args.timeout):
            return await run_once(runtime.database_dsn(config), status.node_row, name,
                                  config.ops.node_down_seconds)

    try:
        row = run_sync(go)
    except Exception as error:  # any failure to answer is "the database does not answer"
        print(f"ipamd status: database does not answer: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    problems = status.judge(row, name, status.expected_services(config), config.ops.enabled)
    for problem in problems:
        print(f"ipamd status: {problem}", file=sys.stderr)
    if not problems:
        print(f"ipamd status: ok: node {name}, database answers, services running: "
              f"{', '.join(status.expected_services(config))}")
    return 1 if problems else 0


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _config(args)
    print(json.dumps(redacted(config), indent=2))  # never a password (issue 10)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ipamd", description="IPAM and DHCP appliance")
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("--config", help="TOML file (default: $IPAMD_CONFIG, else built-in)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the appliance (API, DHCP, outbox, workers)").set_defaults(
        fn=cmd_run
    )
    sub.add_parser("db-server", help="initdb if needed, then run the bundled postgres"
                   ).set_defaults(fn=cmd_db_server)
    sub.add_parser("migrate", help="create the database and apply migrations").set_defaults(
        fn=cmd_migrate
    )
    token = sub.add_parser("token", help="mint an API token directly (on the box)")
    token.add_argument("--name", required=True)
    token.add_argument("--role", choices=["admin", "operator", "viewer"], default="admin")
    token.set_defaults(fn=cmd_token)
    probe = sub.add_parser("status", help="probe this node (no token): exit 0 when the "
                           "database answers and every enabled service runs")
    probe.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    probe.set_defaults(fn=cmd_status)
    sub.add_parser(
        "check-config", help="validate the TOML file and print it (passwords redacted)"
    ).set_defaults(fn=cmd_check_config)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except (ConfigError, ClusterError, DatabaseRefused, BaseExceptionGroup) as error:
        refusal = _refusal(error)
        if refusal is None:
            raise
        if isinstance(refusal, ConfigError):
            print(f"ipamd: configuration error: {refusal}", file=sys.stderr)
            return 2
        if isinstance(refusal, ClusterError):
            print(f"ipamd: bundled postgres: {refusal}", file=sys.stderr)
            return 3
        print(f"ipamd: {refusal}", file=sys.stderr)  # the database refused us
        return 4
    except KeyboardInterrupt:
        return 130


Refusal = ConfigError | ClusterError | DatabaseRefused


def _refusal(error: BaseException) -> Refusal | None:
    """The start-up refusal behind ``error``: a service that cannot start inside the nursery
    reaches us wrapped in exception groups."""
    if isinstance(error, Refusal):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _refusal(inner)
            if found is not None:
                return found
    return None
