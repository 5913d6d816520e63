"""The appliance as its own process for the benchmarks (`python -m ipamd run` on a TOML of
its own), a private PostgreSQL's fresh databases, and a loopback DHCP relay load: shared by
bench_dns.py and bench_api.py."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.integration.dhcp import harness
from tests.support import postgres
from tests.support.bind import free_port
from tests.unit.dhcp.packets import mac_bytes, request

from ipamd.db.bridge import run_once, run_sync
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import MalformedPacket, parse

ROOT = Path(__file__).resolve().parents[1]

# the relay's subnet for DHCP over loopback (all of 127/8 is loopback)
RELAY_IP, DHCP_NET = harness.RELAY_IP, "127.77.0.0/16"


class BenchError(RuntimeError):
    """A bench could not run (a server that never came up, a refused request): reported, and
    the other benches still run."""


# --- the one launcher: an appliance's config, environment, command and readiness -------------
# Every bench that runs ipamd as a process (here, bench_dhcp, bench_dhcp6 and ha_lab in their
# network namespaces) writes its config, starts it and waits for it with these.

def toml_text(sections: dict[str, dict[str, Any]], top: dict[str, Any]) -> str:
    """Enough TOML for the config: strings, numbers, booleans and lists of them (JSON forms)."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in top.items()]
    for name, values in sections.items():
        lines.append(f"\n[{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def write_config(path: Path, sections: dict[str, dict[str, Any]],
                 top: dict[str, Any] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml_text(sections, top or {}))
    return path


def ipamd_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """An appliance process's environment: this checkout's code first (the venv may hold an
    editable install of another checkout)."""
    path = os.environ.get("PYTHONPATH")
    src = str(ROOT / "src") + (os.pathsep + path if path else "")
    return {**os.environ, **(extra or {}), "PYTHONPATH": src}


def ipamd_argv(config: Path, command: str = "run", python_args: Sequence[str] = ()) -> list[str]:
    """``ipamd <command>`` on ``config``; ``python_args`` go to the interpreter first (e.g.
    ``-m cProfile -o FILE``)."""
    return [sys.executable, *python_args, "-m", "ipamd", "--config", str(config), command]


def tail(path: Path, lines: int = 8) -> str:
    """The last lines of a log, on one line (for an error message)."""
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def post(api: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A create through the API; BenchError unless it answered 201."""
    made = api.post(path, json=body)
    if made.status_code != 201:
        raise BenchError(f"POST {path}: {made.status_code} {made.text[:300]}")
    return made.json()


def wait_api(base: str, proc: subprocess.Popen[Any], log: Path, seconds: float = 60) -> None:
    """Until the API at ``base`` answers /health; BenchError if ``proc`` ends or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"ipamd exited ({proc.returncode}): {tail(log)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise BenchError(f"ipamd's API did not come up: {tail(log)}")


# --- the appliance as a process on loopback -------------------------------------------------


@dataclass
class Appliance:
    """`python -m ipamd run` on its own database, its API on a loopback port (no token: the
    loopback face is open until the first token exists)."""

    work: Path
    dsn: str
    label: str
    sections: dict[str, dict[str, Any]]
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.api_port = free_port()
        self.base = f"http://127.0.0.1:{self.api_port}/api/v1"
        self.log = self.work / f"{self.label}.ipamd.log"

    def start(self) -> None:
        sections = {
            "database": {"dsn": self.dsn, "pool_min": 2, "pool_max": 8},
            "api": {"public_enabled": False, "loopback_listen": f"127.0.0.1:{self.api_port}"},
            "dhcp": {"enabled": False}, "outbox": {"enabled": False},
            "logging": {"level": "WARNING", "access_log": False},
        }
        for name, values in self.sections.items():
            sections.setdefault(name, {}).update(values)
        config = write_config(self.work / f"{self.label}.toml", sections,
                              {"state_dir": str(self.work / f"{self.label}-state")})
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(ipamd_argv(config), cwd=ROOT, env=ipamd_env(self.env),
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_api(self.base, self.proc, self.log)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with httpx.Client(base_url=self.base, timeout=30) as api:
            return post(api, path, body)

    def cpu_seconds(self) -> float:
        """User + system CPU of the appliance process and its children (the DNS delivery
        process) so far."""
        if self.proc is None:
            return 0.0
        return sum(_cpu_of(pid) for pid in [self.proc.pid, *_children(self.proc.pid)])

    def cpu_split(self) -> dict[str, float]:
        """CPU so far of the appliance's own process, of its DNS delivery child and of its
        API worker processes, apart."""
        split = {"appliance": 0.0, "dns_delivery": 0.0, "api_workers": 0.0}
        if self.proc is None:
            return split
        split["appliance"] = _cpu_of(self.proc.pid)
        for pid in _children(self.proc.pid):
            role = "dns_delivery" if b"dns-delivery" in _cmdline(pid) else "api_workers"
            split[role] += _cpu_of(pid)
        return split


def _cpu_of(pid: int, reaped: bool = False) -> float:
    """User + system CPU of `pid`; with `reaped`, also of its children that have ended and
    been waited for (Postgres backends that came and went)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0  # gone meanwhile
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and all of its children, living or ended (e.g. a postmaster)."""
    return _cpu_of(pid, reaped=True) + sum(_cpu_of(child) for child in _children(pid))


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""  # gone meanwhile


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


@contextlib.contextmanager
def running(appliance: Appliance) -> Iterator[Appliance]:
    try:
        appliance.start()
        yield appliance
    finally:
        appliance.stop()


@dataclass
class Pg:
    """Fresh databases (clones of the migrated template) on a private PostgreSQL."""

    server: postgres.PgServer
    tag: str = "dns"
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        name = f"bench_{self.tag}_{prefix}_{self.counter}"

        async def make(conn: Any) -> None:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            await conn.execute(f"CREATE DATABASE {name} TEMPLATE {postgres.TEMPLATE}")

        run_sync(run_once, self.server.dsn("postgres"), make)
        return self.server.dsn(name)

    @staticmethod
    def run(dsn: str, fn: Any, *args: Any) -> Any:
        return run_sync(run_once, dsn, fn, *args)


# --- dhcp: DORA over a loopback relay -------------------------------------------------------

def relay_socket() -> socket.socket:
    """The tests' relay socket (127.77.0.1, a big receive buffer), blocking with a short
    timeout for the load loop below."""
    sock = harness.relay_socket(RELAY_IP)
    sock.settimeout(0.05)
    return sock


def dora_load(sock: socket.socket, server: tuple[str, int], clients: int, first: int,
              window: int, hostnames: bool, seconds: float = 120,
              rate: float | None = None) -> dict[str, Any]:
    """`clients` DORAs, `window` in flight, as a relay (giaddr 127.77.0.1); an exchange with
    no reply in 2 s starts again (at most 3 times). DORA/s = Acks ÷ (last Ack - first send).
    With `rate`, new exchanges start no faster than `rate` a second (an offered load)."""
    todo = list(range(first, first + clients))
    todo.reverse()
    pending: dict[int, list[Any]] = {}  # xid → [client, phase, sent_at, tries]
    acks = naks = abandoned = 0
    xid = first * 16
    began = time.monotonic()
    last_ack = began
    deadline = began + seconds

    def extra(client: int) -> dict[int, bytes]:
        return {o.HOSTNAME: f"dora-{client}".encode()} if hostnames else {}

    def discover(client: int, tries: int) -> None:
        nonlocal xid
        xid += 1
        pending[xid] = [client, "discover", time.monotonic(), tries]
        sock.sendto(request(o.DISCOVER, mac_bytes(client), xid=xid, giaddr=RELAY_IP,
                            extra=extra(client)).to_bytes(), server)

    started = 0
    while (todo or pending) and time.monotonic() < deadline:
        allowed = window if rate is None else min(
            window, len(pending) + int((time.monotonic() - began) * rate) - started)
        while todo and len(pending) < allowed:
            discover(todo.pop(), 1)
            started += 1
        try:
            data = sock.recv(4096)
        except TimeoutError:
            data = b""
        now = time.monotonic()
        if data:
            try:
                reply = parse(data)
            except MalformedPacket:
                continue
            entry = pending.get(reply.xid)
            if entry is not None:
                client = entry[0]
                if entry[1] == "discover" and reply.message_type == o.OFFER:
                    entry[1], entry[2] = "request", now
                    sock.sendto(request(
                        o.REQUEST, mac_bytes(client), xid=reply.xid, giaddr=RELAY_IP,
                        server_id="127.0.0.1", requested=o.ip_to_str(reply.yiaddr),
                        extra=extra(client)).to_bytes(), server)
                elif entry[1] == "request" and reply.message_type in (o.ACK, o.NAK):
                    del pending[reply.xid]
                    if reply.message_type == o.ACK:
                        acks += 1
                        last_ack = now
                    else:
                        naks += 1
        for key, entry in list(pending.items()):
            if now - entry[2] > 2.0:
                del pending[key]
                if entry[3] < 3:
                    discover(entry[0], entry[3] + 1)
                else:
                    abandoned += 1
    seconds_used = last_ack - began
    return {"clients": clients, "acks": acks, "naks": naks, "abandoned": abandoned,
            "unfinished": len(todo) + len(pending), "seconds": round(seconds_used, 3),
            "dora_per_s": round(acks / seconds_used, 1) if acks and seconds_used > 0 else None}


def wait_dhcp(sock: socket.socket, server: tuple[str, int], seconds: float = 30) -> None:
    """One DORA from a client of its own (no host name: no DNS change) completes."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if dora_load(sock, server, 1, 7_000_000, 1, False, seconds=3)["acks"]:
            return
        time.sleep(0.2)
    raise BenchError("the appliance's DHCP server did not answer over the loopback relay")


