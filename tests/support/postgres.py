"""The suite's private Postgres cluster: initdb in a temp dir, unix socket, fsync off.

One template database is migrated once per session; each test gets a clone.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ipamd.db.bridge import run_once, run_sync
from ipamd.db.cluster import Cluster, find_bin_dir
from ipamd.db.migrate import migrate

TEMPLATE = "ipamd_template"
_counter = itertools.count()


@dataclass
class PgServer:
    cluster: Cluster
    process: subprocess.Popen
    base: Path
    durable: bool = False  # fsync and synchronous commit on, as in the appliance

    def dsn(self, database: str) -> str:
        return self.cluster.dsn(database)

    def restart(self) -> None:
        """Fast shutdown (backends are told the server is going) and start again, as a
        package upgrade or an operator would; returns once the server answers queries."""
        self.stop_server()
        self.start_server()

    def stop_server(self) -> None:
        """Fast shutdown, and stay down until ``start_server``: no database answers."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)

    def start_server(self) -> None:
        self.process = self.cluster.spawn_server(fast=not self.durable,
                                                 log_file=self.base / "postgres.log")
        _wait_ready(self.cluster, self.process)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.base, ignore_errors=True)


def _wait_ready(cluster: Cluster, process: subprocess.Popen, timeout: float = 60) -> None:
    """Until a query answers: the socket appears before the server accepts connections."""
    socket = cluster.socket_dir / f".s.PGSQL.{cluster.port}"
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited with {process.returncode}")
        if socket.exists():
            try:
                run_sync(run_once, cluster.dsn("postgres"), _ping)
                return
            except Exception as error:  # "the database system is starting up", refused, ...
                last = error
        time.sleep(0.1)
    raise RuntimeError(f"postgres did not become ready: {last!r}")


async def _ping(conn) -> int:
    return await conn.fetchval("SELECT 1")


async def _make_template(conn) -> None:
    await conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
    await conn.execute(f"CREATE DATABASE {TEMPLATE}")


def start(durable: bool = False) -> PgServer:
    """The suite runs with fsync off (faster, and nothing here outlives the run); benchmarks
    that measure what a commit costs ask for `durable`, as the appliance runs."""
    base = Path(tempfile.mkdtemp(prefix="ipamd-test-pg-"))
    os.chmod(base, 0o755)  # the postgres user must traverse it when we are root
    cluster = Cluster(
        data_dir=base / "data", socket_dir=base / "run", bin_dir=find_bin_dir(), port=5432
    )
    cluster.init()
    process = cluster.spawn_server(fast=not durable, log_file=base / "postgres.log")
    try:
        _wait_ready(cluster, process)
        run_sync(run_once, cluster.dsn("postgres"), _make_template)
        run_sync(run_once, cluster.dsn(TEMPLATE), migrate)
    except BaseException:
        process.kill()
        raise
    return PgServer(cluster=cluster, process=process, base=base, durable=durable)


def next_name() -> str:
    return f"t_{os.getpid()}_{next(_counter)}"


async def clone(conn, name: str) -> None:
    await conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")


async def drop(conn, name: str) -> None:
    await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
