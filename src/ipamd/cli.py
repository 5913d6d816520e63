"""`ipamd run | db-server | migrate | token | status | check-config | backup | restore | child`."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ipamd import __version__, logsetup
from ipamd.config import Config, ConfigError, load, redact_dsn, redacted
from ipamd.db.backup import BackupError
from ipamd.db.bridge import DatabaseRefused
from ipamd.db.cluster import ClusterError
from ipamd.db.migrate import SchemaTooNew

log = logging.getLogger("ipamd")
# The appliance image's /usr/local/bin/ipamd sets it: `ipamd restore` then stops and starts
# the ipamd program itself (image/README.md).
ENV_SUPERVISOR = "IPAMD_SUPERVISOR"


def _config(args: argparse.Namespace) -> Config:
    return load(args.config)


def cmd_run(args: argparse.Namespace) -> int:
    import trio

    from ipamd import runtime

    config = _config(args)
    logsetup.configure(config.logging.level)
    trio.run(runtime.run, config)
    return 0


def cmd_child(args: argparse.Namespace) -> int:
    """A role `ipamd run` runs in a child process; the configuration comes on stdin."""
    import trio

    from ipamd import child, runtime

    config = child.read_config()
    logsetup.configure(config.logging.level)
    if args.role == runtime.API_WORKER:
        from ipamd.api.balance import ConnectionShare

        share = ConnectionShare(args.share_fd, config.api.worker_count, args.slot)
        trio.run(runtime.run_api_worker, config, _fds(args.https_fds), _fds(args.http_fds),
                 share)
    else:
        trio.run(runtime.run_child, config, args.role)
    return 0


def _fds(text: str) -> list[int]:
    return [int(fd) for fd in text.split(",") if fd]


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


def _backup_paths(config: Config) -> tuple[str, Any, Any]:
    """(DSN, PostgreSQL client tools' directory, the self-signed TLS pair's directory or None
    when the pair comes from api.tls_cert/tls_key: files the operator manages)."""
    from ipamd import runtime
    from ipamd.db.cluster import find_bin_dir

    own_tls = not (config.api.tls_cert and config.api.tls_key)
    tls_dir = config.path(config.state_dir) / "tls" if own_tls else None
    return runtime.database_dsn(config), find_bin_dir(config.database.bin_dir), tls_dir


def cmd_backup(args: argparse.Namespace) -> int:
    """Database dump + manifest + TLS pair in one 0600 archive; ipamd may keep running."""
    import socket
    from pathlib import Path

    from ipamd.db import backup

    config = _config(args)
    dsn, bin_dir, tls_dir = _backup_paths(config)
    manifest = backup.write(
        Path(args.file), dsn=dsn, bin_dir=bin_dir, ipamd_version=__version__,
        node=config.node_name or socket.gethostname(), tls_dir=tls_dir,
    )
    print(json.dumps({"file": args.file, "schema_version": manifest.schema_version,
                      "created_at": manifest.created_at, "tls": manifest.tls}))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Replace the database and TLS pair with a backup's (postgres running), then migrate an
    older backup up to this version. With a supervisor (``--supervisor``, $IPAMD_SUPERVISOR:
    the appliance image sets it) a running ipamd program is stopped first and started again
    after; otherwise ipamd must be stopped by hand, as before."""
    from pathlib import Path

    import trio

    from ipamd import runtime
    from ipamd.db import backup, migrate
    from ipamd.db.bridge import run_once, run_sync

    config = _config(args)
    logsetup.configure("WARNING")
    dsn, bin_dir, tls_dir = _backup_paths(config)
    known = migrate.latest()
    backup.read(Path(args.file), known)  # refuse a newer schema before connecting at all

    async def create() -> None:  # a fresh appliance: wait for postgres, create the database
        try:
            db = await runtime.prepare_database(config)
        except (trio.TooSlowError, ConnectionError) as error:  # waited connect_timeout_seconds
            raise BackupError(_unreachable(config, error)) from None
        await db.close()

    async def upgrade() -> list[int]:
        return await run_once(dsn, migrate.migrate)

    with _program_stopped(args.supervisor, "ipamd"):
        run_sync(create)
        manifest = backup.restore(Path(args.file), dsn=dsn, bin_dir=bin_dir,
                                  known_schema=known, tls_dir=tls_dir)
        applied = run_sync(upgrade)
    print(json.dumps({"file": args.file, "schema_version": manifest.schema_version,
                      "node": manifest.node, "created_at": manifest.created_at,
                      "migrated": applied, "tls": manifest.tls and tls_dir is not None}))
    return 0


def _unreachable(config: Config, error: BaseException) -> str:
    if config.database.dsn:
        return (f"restore: the database does not answer (database.dsn = "
                f"{redact_dsn(config.database.dsn)}; {error}): check that server and try "
                "again. Nothing was changed.")
    return (f"restore: the bundled postgres does not answer (waited "
            f"{config.database.connect_timeout_seconds:g}s on its socket in "
            f"{config.path(config.database.socket_dir)}): start it (supervisorctl start "
            "postgres) and try again. Nothing was changed.")


@contextlib.contextmanager
def _program_stopped(supervisor_conf: str | None, program: str) -> Iterator[None]:
    """``program`` stopped under the supervisord of ``supervisor_conf`` while the block runs,
    when it was running; started again after, whether the block succeeded or not (a restore
    that fails changes nothing). No configuration, or not running: nothing to do."""
    def ctl(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - supervisor's own client, fixed argv
            [sys.executable, "-m", "supervisor.supervisorctl", "-c", supervisor_conf or "",
             *argv], capture_output=True, text=True, check=False, timeout=60)

    running = bool(supervisor_conf) and ctl("status", program).stdout.split()[1:2] == [
        "RUNNING"]
    if running:
        stopped = ctl("stop", program)
        if stopped.returncode != 0:
            raise BackupError(f"could not stop {program} under supervisor ({supervisor_conf}): "
                              f"{stopped.stdout.strip() or stopped.stderr.strip()}")
    try:
        yield
    finally:
        if running:
            started = ctl("start", program)
            if started.returncode != 0:
                print(f"ipamd: could not start {program} again under supervisor "
                      f"({supervisor_conf}): {started.stdout.strip() or started.stderr.strip()}",
                      file=sys.stderr)


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _config(args)
    print(json.dumps(redacted(config), indent=2))  # never a password (docs/security.md)
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
    made = sub.add_parser("backup", help="write the database, a manifest and the TLS pair "
                          "to FILE (mode 0600)")
    made.add_argument("file", metavar="FILE")
    made.set_defaults(fn=cmd_backup)
    back = sub.add_parser("restore", help="replace the database and TLS pair with FILE's, "
                          "all or nothing (stop ipamd first, or give --supervisor; refuses "
                          "a newer schema)")
    back.add_argument("file", metavar="FILE")
    back.add_argument("--supervisor", metavar="CONF", default=os.environ.get(ENV_SUPERVISOR),
                      help="supervisord.conf of a running appliance: its ipamd program is "
                      "stopped for the restore and started again after (default: "
                      f"${ENV_SUPERVISOR})")
    back.set_defaults(fn=cmd_restore)
    role = sub.add_parser("child", help="internal: a role `ipamd run` runs in a child "
                          "process (the configuration comes on stdin)")
    role.add_argument("role", choices=["dns-delivery", "api-worker"])
    role.add_argument("--https-fds", default="", help="api-worker: its TLS listening sockets")
    role.add_argument("--http-fds", default="", help="api-worker: its plain listening sockets")
    role.add_argument("--share-fd", type=int, default=-1,
                      help="api-worker: the workers' shared connection counts (a memfd)")
    role.add_argument("--slot", type=int, default=0, help="api-worker: its count's slot")
    role.set_defaults(fn=cmd_child)
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.fn
    try:
        return command(args)
    except (ConfigError, ClusterError, DatabaseRefused, SchemaTooNew, BackupError,
            BaseExceptionGroup) as error:
        refusal = _refusal(error)
        if refusal is None:
            raise
        prefix, code = next(v for kind, v in REFUSALS.items() if isinstance(refusal, kind))
        print(f"ipamd: {prefix}{refusal}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return 130


# What stops a command with one clear line on stderr, and its exit code (documented in
# docs/operations.md): anything else is a bug and keeps its traceback.
REFUSALS: dict[type[Exception], tuple[str, int]] = {
    ConfigError: ("configuration error: ", 2),
    ClusterError: ("bundled postgres: ", 3),
    DatabaseRefused: ("", 4),  # the database refused our login: database.dsn is named
    BackupError: ("", 5),
    SchemaTooNew: ("", 6),  # a newer ipamd migrated this database: left untouched
}
Refusal = ConfigError | ClusterError | DatabaseRefused | BackupError | SchemaTooNew


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
