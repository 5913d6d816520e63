"""The rig both DHCP benches run on (bench_dhcp.py for DHCPv4, bench_dhcp6.py for DHCPv6):
a private work directory, one private durable PostgreSQL cluster, the two namespaces the
server and perfdhcp live in, fresh databases (Kea's schema by ``kea-admin db-init pgsql``,
ipamd's cloned from a migrated template), Kea and ipamd started inside the server's
namespace and stopped again, and the order of a sweep.

What differs between the two benches (perfdhcp's flags, the addresses, the plan, the Kea
template) stays in each bench; what they share lives here once.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import shutil
import signal
import string
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.support import netns

from bench.appliance import BenchError as BenchError
from bench.appliance import ipamd_argv, ipamd_env, tail, wait_api
from bench.appliance import post as post
from ipamd.db.cluster import Cluster, find_bin_dir

ROOT = Path(__file__).resolve().parents[1]

KEA_DIR = Path(__file__).resolve().parent / "kea"
RESULTS = Path(__file__).resolve().parent / "results"
API_PORT = 18080  # ipamd's loopback face inside the server's namespace
PG_USER = "bench"
WORK_PREFIX = "ipamd-bench-"


@dataclass
class Rig(abc.ABC):
    """The lab (namespace ``srv`` for the server, ``rly`` for perfdhcp), the work directory,
    the results folder and the PostgreSQL cluster of one bench run."""

    lab: netns.Lab
    srv: str
    rly: str
    work: Path
    out: Path
    pg: Cluster
    pg_proc: subprocess.Popen[Any] | None = None
    kea_severity: str = "WARN"
    counter: int = 0

    @abc.abstractmethod
    def answers(self) -> bool:
        """A client of the bench's own (not one of the measured ones) completes an exchange."""

    def psql(self, database: str, sql: str, timeout: float = 60.0) -> str:
        try:
            done = subprocess.run(
                ["psql", "-h", str(self.pg.socket_dir), "-p", str(self.pg.port), "-U", PG_USER,
                 "-d", database, "-v", "ON_ERROR_STOP=1", "-qAtc", sql],
                capture_output=True, text=True, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise BenchError(f"psql {sql!r}: no answer within {timeout:.0f} s") from None
        if done.returncode != 0:
            raise BenchError(f"psql {sql!r}: {done.stderr.strip()}")
        return done.stdout.strip()

    def fresh_database(self, prefix: str, template: str | None = None) -> str:
        self.counter += 1
        name = f"{prefix}_{self.counter}"
        self.psql("postgres", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.psql("postgres", f"CREATE DATABASE {name}" + (f" TEMPLATE {template}"
                                                           if template else ""))
        return name

    def drop_database(self, name: str) -> None:
        with contextlib.suppress(BenchError):
            self.psql("postgres", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def udp_overflows(self, ns: str) -> int:
        """Datagrams a full socket buffer dropped in a namespace: UDP over IPv4 counts in
        /proc/net/snmp (``Udp:`` RcvbufErrors), over IPv6 in /proc/net/snmp6
        (Udp6RcvbufErrors); both, so one call serves the DHCPv4 and the DHCPv6 bench."""
        done = self.lab.run(ns, ["cat", "/proc/net/snmp", "/proc/net/snmp6"], timeout=10,
                            check=False)
        lines = done.stdout.splitlines()
        rows = [line.split() for line in lines if line.startswith("Udp:")]
        v4 = (int(rows[1][rows[0].index("RcvbufErrors")])
              if len(rows) >= 2 and "RcvbufErrors" in rows[0] else 0)
        v6 = sum(int(line.split()[1]) for line in lines
                 if line.startswith("Udp6RcvbufErrors"))
        return v4 + v6

    def journal_derived(self, database: str, timeout: float = 120.0) -> float:
        """Seconds until ipamd's lease journal is empty (its deriver caught up with the run):
        one session, looking every 0.1 s."""
        start = time.monotonic()
        # (The session's own timeout ends the wait; psql's is only the backstop. With psql's
        # default 60 s it ended first, once, and the exception ended the whole sweep.)
        self.psql(database, f"SET statement_timeout = '{timeout:.0f}s'; "
                  "DO $$ BEGIN WHILE EXISTS (SELECT 1 FROM lease_journal) LOOP "
                  "PERFORM pg_sleep(0.1); END LOOP; END $$", timeout=timeout + 15)
        return time.monotonic() - start

    def ipamd_metrics(self, keep: Path) -> str | None:
        """ipamd's /metrics text from its loopback face (kept in ``keep``); None when it does
        not answer."""
        try:
            with netns.inside(self.srv):
                text = httpx.get(f"http://127.0.0.1:{API_PORT}/api/v1/metrics", timeout=10).text
        except httpx.HTTPError:
            return None
        keep.write_text(text)
        return text

    def wait_answering(self, proc: subprocess.Popen[Any], seconds: float, log: Path) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BenchError(f"server exited ({proc.returncode}): {tail(log)}")
            if self.answers():
                return
            time.sleep(0.3)
        raise BenchError(f"no DHCP answer within {seconds:.0f} s: {tail(log)}")


# --- the work directory and PostgreSQL ----------------------------------------------------

def preflight(tools: tuple[str, ...], kea_server_package: str) -> None:
    """Refuse to start without the commands a DHCP bench runs, or without namespaces."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise BenchError(f"missing commands: {', '.join(missing)} (Debian packages: iproute2, "
                         f"kea-admin (perfdhcp, kea-admin), {kea_server_package}, "
                         "postgresql-client)")
    reason = netns.unavailable_reason()
    if reason:
        raise BenchError(reason)


def sweep_stale_work() -> None:
    """Stop and remove what a bench killed outright (SIGKILL) left: its postgres, its files."""
    for path in Path(tempfile.gettempdir()).glob(WORK_PREFIX + "*"):
        try:
            owner = int((path / "bench.pid").read_text())
        except (OSError, ValueError):
            continue
        if Path(f"/proc/{owner}").exists():
            continue  # that bench still runs
        data = path / "pg" / "data"
        with contextlib.suppress(OSError, ValueError, IndexError):
            pg_pid = int((data / "postmaster.pid").read_text().split()[0])
            # Only the postmaster of that data directory, never a recycled pid.
            if str(data).encode() in Path(f"/proc/{pg_pid}/cmdline").read_bytes():
                os.kill(pg_pid, signal.SIGINT)  # fast shutdown
                deadline = time.monotonic() + 20
                while Path(f"/proc/{pg_pid}").exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
        print(f"removed the leftovers of an interrupted bench: {path}", flush=True)
        shutil.rmtree(path, ignore_errors=True)


def terminate(signum: int, frame: object) -> None:
    """SIGTERM (timeout, supervisor) unwinds like Ctrl-C, so everything is torn down."""
    raise KeyboardInterrupt


def make_work() -> Path:
    """A private work directory, marked with this process's pid (see sweep_stale_work)."""
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    (work / "bench.pid").write_text(str(os.getpid()))
    return work


def start_postgres(work: Path, durable: bool) -> tuple[Cluster, subprocess.Popen[Any]]:
    base = work / "pg"
    base.mkdir()
    os.chmod(work, 0o755)
    os.chmod(base, 0o755)
    cluster = Cluster(data_dir=base / "data", socket_dir=base / "run", bin_dir=find_bin_dir(),
                      superuser=PG_USER, port=5432)
    cluster.init()
    # Durable by default (fsync on, synchronous commits); one cluster serves Kea and ipamd.
    proc = cluster.spawn_server(fast=not durable, log_file=base / "postgres.log")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"postgres exited: {tail(base / 'postgres.log')}")
        ready = subprocess.run(
            ["psql", "-h", str(cluster.socket_dir), "-U", PG_USER, "-d", "postgres",
             "-qAtc", "SELECT 1"], capture_output=True, text=True, timeout=10, check=False,
        )
        if ready.returncode == 0:
            return cluster, proc
        time.sleep(0.2)
    raise BenchError("postgres did not start")


def stop_postgres(proc: subprocess.Popen[Any] | None) -> None:
    if proc is None:
        return
    proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
    if proc.poll() is None:
        proc.kill()


# --- Kea ----------------------------------------------------------------------------------

def kea_env(rig: Rig) -> dict[str, str]:
    # Kea refuses to start without writable lock and pid directories of its own.
    return dict(os.environ, KEA_LOCKFILE_DIR=str(rig.work), KEA_PIDFILE_DIR=str(rig.work))


def kea_database(rig: Rig) -> str:
    """A fresh database with Kea's lease schema (one schema serves kea-dhcp4 and kea-dhcp6)."""
    database = rig.fresh_database("kea")
    init = subprocess.run(
        ["kea-admin", "db-init", "pgsql", "-h", str(rig.pg.socket_dir),
         "-P", str(rig.pg.port), "-u", PG_USER, "-n", database],
        capture_output=True, text=True, timeout=120, check=False, env=kea_env(rig),
        stdin=subprocess.DEVNULL,
    )
    if init.returncode != 0:
        raise BenchError(f"kea-admin db-init: {init.stderr.strip() or init.stdout.strip()}")
    return database


def fill_kea_template(rig: Rig, template: str, **values: Any) -> Path:
    """``bench/kea/<template>`` with its ``${...}`` filled, checked as JSON, written to the
    work directory."""
    filled = string.Template((KEA_DIR / template).read_text()).substitute(**values)
    json.loads(filled)  # a broken template fails here, not inside Kea
    rig.counter += 1
    path = rig.work / f"kea-{rig.counter}.json"
    path.write_text(filled)
    return path


@contextlib.contextmanager
def kea_running(rig: Rig, binary: str, config: Path, label: str,
                database: str | None) -> Iterator[subprocess.Popen[Any]]:
    """``binary`` (kea-dhcp4 or kea-dhcp6) on ``config`` inside ``srv``, answering; stopped
    and its database dropped on exit."""
    log = rig.out / f"{label}.log"
    try:
        with open(log, "w") as handle:
            proc = rig.lab.spawn(rig.srv, [binary, "-c", str(config)], env=kea_env(rig),
                                 stdout=handle, stderr=subprocess.STDOUT)
        try:
            rig.wait_answering(proc, 30, log)
            yield proc
        finally:
            rig.lab.stop(proc)
    finally:
        if database:
            rig.drop_database(database)


# --- ipamd --------------------------------------------------------------------------------

def ipamd_base() -> str:
    return f"http://127.0.0.1:{API_PORT}/api/v1"


@contextlib.contextmanager
def ipamd_running(rig: Rig, config: Path, database: str, label: str,
                  create_plan: Callable[[str], None],
                  profile: Path | None = None) -> Iterator[subprocess.Popen[Any]]:
    """The appliance on ``config`` (its own fresh ``database``) inside ``srv``, its plan made
    by ``create_plan(api_base)`` through its API, answering; stopped and the database
    dropped on exit. With ``profile``, its main process (the DHCP servers, the committer,
    the database crossings: one thread) runs under cProfile, whose statistics are written
    there when it stops (SIGTERM: a graceful stop)."""
    log = rig.out / f"{label}.log"
    profiler = ("-m", "cProfile", "-o", str(profile)) if profile else ()
    try:
        with open(log, "w") as handle:
            proc = rig.lab.spawn(rig.srv, ipamd_argv(config, python_args=profiler), cwd=ROOT,
                                 env=ipamd_env(), stdout=handle, stderr=subprocess.STDOUT)
        try:
            with netns.inside(rig.srv):  # the loopback face lives in the server's namespace
                wait_api(ipamd_base(), proc, log)
                create_plan(ipamd_base())
            rig.wait_answering(proc, 60, log)
            yield proc
        finally:
            rig.lab.stop(proc, timeout=30 if profile else 10)
    finally:
        rig.drop_database(database)


def ipamd_template(rig: Rig, config_for: Callable[[str], Path]) -> str:
    """A database migrated by ``ipamd migrate`` (``config_for(name)`` writes a config on
    it), the template every run's fresh database is cloned from."""
    name = rig.fresh_database("ipamd_template")
    done = subprocess.run(ipamd_argv(config_for(name), "migrate"), cwd=ROOT, env=ipamd_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise BenchError(f"ipamd migrate: {done.stderr.strip()[-500:]}")
    return name


# --- the sweep and its figures --------------------------------------------------------------

def sweep_order(servers: list[str], rates: list[int]) -> list[tuple[str, int]]:
    """Every (server, rate), rate by rate, each rate starting one server later than the last.

    Rate by rate, so the servers compared at a rate run within a minute of each other: this
    VM has slow phases (host steal) lasting minutes, and a server-by-server sweep once gave
    one server a phase with 25 % steal and the other none. The rotation spreads what a run
    leaves behind (a PostgreSQL checkpoint after a database-heavy run, a warm page cache)
    over every server instead of always over the same next one."""
    order: list[tuple[str, int]] = []
    for i, rate in enumerate(rates):
        turn = i % len(servers) if servers else 0
        order += [(server, rate) for server in servers[turn:] + servers[:turn]]
    return order


def stamp_args(rate: int, stamps_max: int) -> tuple[str, ...]:
    """perfdhcp's every-exchange timestamps (the latency percentiles) up to ``stamps_max``."""
    return ("-x", "t") if rate <= stamps_max else ()


def load_average() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"
