"""Network namespaces, veth pairs, bridges and processes for end-to-end tests and the bench.

Everything a ``Lab`` makes is named ``ipt<6 hex>…`` (parallel runs never collide) and
addressed inside 10.77.0.0/16 only. ``Lab.close()`` (the context manager's exit) removes all
of it, even on failure or Ctrl-C: it kills the processes it started (by pid), every process
still inside its namespaces, then deletes the namespaces (their interfaces go with them), the
root-side links and the policy routes. A registry file per lab under /run/ipamd-netns lets the
next lab sweep whatever a SIGKILLed run left behind.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("tests.netns")

ALLOWED = ipaddress.ip_network("10.77.0.0/16")
# IPv6 labs (the DHCPv6 end-to-end tests): part of the documentation prefix (RFC 3849),
# which no network routes; each lab takes its own /64s from it (dhcp_lab.build6).
ALLOWED6 = ipaddress.ip_network("2001:db8:77::/48")
REGISTRY = Path("/run/ipamd-netns")
PREFIX = "ipt"
IFNAMSIZ = 15  # the kernel's limit on interface names (without the NUL)
COMMAND_TIMEOUT = 20.0

_probe: str | bool | None = False  # False: not probed yet; None: available; str: why not


class NetnsError(RuntimeError):
    """A namespace operation failed; the message carries the command and its stderr."""


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here (None when they can); probed once per process."""
    global _probe
    if _probe is not False:
        return _probe  # type: ignore[return-value]
    if os.geteuid() != 0:
        _probe = "network-namespace tests need root (CI runs them as root)"
    elif shutil.which("ip") is None:
        _probe = "the 'ip' command (Debian package iproute2) is not installed"
    else:
        name = f"{PREFIX}probe{os.getpid()}"
        made = _sh(["ip", "netns", "add", name], check=False)
        if made.returncode != 0:
            _probe = f"'ip netns add' does not work here: {made.stderr.strip()}"
        else:
            _sh(["ip", "netns", "del", name], check=False)
            _probe = None
    return _probe  # type: ignore[return-value]


def require_tools(*names: str) -> str | None:
    """Why the test cannot run (a missing command or no namespaces), else None."""
    reason = unavailable_reason()
    if reason:
        return reason
    missing = [n for n in names if shutil.which(n) is None]
    return f"missing commands: {', '.join(missing)}" if missing else None


def check_address(value: str) -> str:
    """An address or interface address (a.b.c.d[/len]) that must lie inside 10.77.0.0/16
    (IPv6: inside 2001:db8:77::/48)."""
    iface = ipaddress.ip_interface(value)
    allowed = ALLOWED if iface.version == 4 else ALLOWED6
    if iface.ip not in allowed or not iface.network.subnet_of(allowed):  # type: ignore[arg-type]
        raise ValueError(f"{value}: test networks must stay inside {allowed}")
    return value


def _sh(argv: Sequence[str], *, check: bool = True, timeout: float = COMMAND_TIMEOUT,
        input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, check=False,
        input=input_text,
    )
    if check and result.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def _exited(pid: int, timeout: float) -> bool:
    """Wait until our child ``pid`` has exited, without reaping it (it keeps its ids)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True  # already reaped
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Veth:
    """A veth pair: ``a`` lives in ``a_ns`` (None: the root namespace), ``b`` in ``b_ns``."""

    a: str
    b: str
    a_ns: str | None
    b_ns: str | None


@dataclass
class Lab:
    """A set of namespaces, links and processes that is always removed as a whole."""

    suffix: str = field(default_factory=lambda: secrets.token_hex(3))
    namespaces: list[str] = field(default_factory=list)
    root_links: list[str] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    processes: list[subprocess.Popen[Any]] = field(default_factory=list)
    closed: bool = False

    def __post_init__(self) -> None:
        reason = unavailable_reason()
        if reason:
            raise NetnsError(reason)
        sweep_stale()
        self._save()

    # --- names and bookkeeping -----------------------------------------------------------

    @property
    def base(self) -> str:
        return f"{PREFIX}{self.suffix}"

    def ifname(self, role: str) -> str:
        name = f"{self.base}{role}"
        if len(name) > IFNAMSIZ or not role.isalnum():
            raise ValueError(f"interface role {role!r}: alphanumeric, at most "
                             f"{IFNAMSIZ - len(self.base)} characters")
        return name

    def _registry_file(self) -> Path:
        return REGISTRY / f"{self.base}.json"

    def _save(self) -> None:
        REGISTRY.mkdir(parents=True, exist_ok=True)
        record = {"pid": os.getpid(), "namespaces": self.namespaces,
                  "root_links": self.root_links, "rules": self.rules}
        self._registry_file().write_text(json.dumps(record))

    # --- building ------------------------------------------------------------------------

    def namespace(self, role: str) -> str:
        """A new namespace ``ipt<suffix>-<role>`` with its loopback up."""
        name = f"{self.base}-{role}"
        _sh(["ip", "netns", "add", name])
        self.namespaces.append(name)
        self._save()
        self.ip(name, "link", "set", "lo", "up")
        return name

    def ip(self, ns: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``ip`` in a namespace (None: the root namespace)."""
        return _sh(["ip", *(["-n", ns] if ns else []), *args])

    def veth(self, role: str, a_ns: str | None, b_ns: str | None,
             a_addr: str | None = None, b_addr: str | None = None) -> Veth:
        """A veth pair ``<base><role>a`` / ``<base><role>b``, up, with optional addresses."""
        pair = Veth(self.ifname(role + "a"), self.ifname(role + "b"), a_ns, b_ns)
        argv = ["ip", "link", "add", pair.a]
        if a_ns:
            argv += ["netns", a_ns]
        argv += ["type", "veth", "peer", "name", pair.b]
        if b_ns:
            argv += ["netns", b_ns]
        _sh(argv)
        if a_ns is None:
            self.root_links.append(pair.a)
        if b_ns is None:
            self.root_links.append(pair.b)
        self._save()
        for ns, name, addr in ((a_ns, pair.a, a_addr), (b_ns, pair.b, b_addr)):
            if addr:
                self.address(ns, name, addr)
            self.ip(ns, "link", "set", name, "up")
        return pair

    def bridge(self, ns: str | None, role: str, addr: str | None = None) -> str:
        name = self.ifname(role)
        self.ip(ns, "link", "add", name, "type", "bridge")
        if ns is None:
            self.root_links.append(name)
            self._save()
        if addr:
            self.address(ns, name, addr)
        self.ip(ns, "link", "set", name, "up")
        return name

    def attach(self, ns: str | None, ifname: str, bridge: str) -> None:
        self.ip(ns, "link", "set", ifname, "master", bridge)

    def address(self, ns: str | None, ifname: str, addr: str) -> None:
        check_address(addr)
        v6 = ipaddress.ip_interface(addr).version == 6
        if "/" not in addr:
            addr += "/128" if v6 else "/32"
        # IPv6: no duplicate address detection (a tentative address cannot be bound).
        self.ip(ns, "addr", "add", addr, "dev", ifname, *(["nodad"] if v6 else []))

    def route(self, ns: str, dest: str, via: str) -> None:
        """A route inside a lab namespace (never in the root namespace: see policy_route)."""
        if dest != "default":
            check_address(dest)
        check_address(via)
        self.ip(ns, "route", "add", dest, "via", via)

    def policy_route(self, source: str, dest: str, via: str) -> None:
        """A root-namespace route used only by traffic from ``source`` (a lab address).

        Policy routing keeps the root's main table untouched, so parallel labs that reuse
        one destination network (10.77.1.0/24 behind their own relays) never collide.
        """
        for value in (source, dest, via):
            check_address(value)
        table = 20000 + secrets.randbelow(10000)
        rule = {"source": source, "table": table}
        self.rules.append(rule)
        self._save()
        _sh(["ip", "rule", "add", "from", source, "table", str(table), "priority", "100"])
        _sh(["ip", "route", "add", dest, "via", via, "table", str(table)])

    def sysctl(self, ns: str, key: str, value: str) -> None:
        """Set a per-namespace sysctl (written to /proc/sys: no procps needed)."""
        path = "/proc/sys/" + key.replace(".", "/")
        self.run(ns, ["sh", "-c", 'echo "$1" > "$2"', "sh", value, path])

    def free_pair(self, network: str) -> tuple[str, str]:
        """Two addresses of a /30 in ``network`` that no root-namespace interface uses yet.

        The first /30 is tried first, so a lone run gets x.x.x.1 and x.x.x.2.
        """
        net = ipaddress.ip_network(check_address(network))
        used = set()
        for line in _sh(["ip", "-4", "-o", "addr", "show"]).stdout.splitlines():
            parts = line.split()
            if "inet" in parts:
                used.add(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network)
        blocks = list(net.subnets(new_prefix=30))
        for block in [blocks[0], *sorted(blocks[1:], key=lambda _: secrets.randbelow(1 << 30))]:
            if not any(block.overlaps(u) for u in used):
                hosts = list(block.hosts())
                return str(hosts[0]), str(hosts[1])
        raise NetnsError(f"no free /30 left in {network}")

    # --- processes -----------------------------------------------------------------------

    def argv(self, ns: str | None, argv: Sequence[str]) -> list[str]:
        """The command line that runs ``argv`` inside ``ns`` (`ip netns exec` execs it: same pid)."""
        return (["ip", "netns", "exec", ns] if ns else []) + [str(a) for a in argv]

    def run(self, ns: str | None, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT,
            check: bool = True, env: dict[str, str] | None = None,
            cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command to completion inside ``ns``; bounded by ``timeout``."""
        proc = self.spawn(ns, argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            self.stop(proc)
            self.processes.remove(proc)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if check and result.returncode != 0:
            raise NetnsError(
                f"{' '.join(self.argv(ns, argv))} failed ({result.returncode}): "
                f"{(err or out).strip()[-2000:]}"
            )
        return result

    async def run_async(self, ns: str | None, argv: Sequence[str], *,
                        timeout: float = COMMAND_TIMEOUT, check: bool = True,
                        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``run`` from a trio task without blocking the event loop (servers in-process)."""
        import trio

        def go() -> subprocess.CompletedProcess[str]:
            return self.run(ns, argv, timeout=timeout, check=check, env=env)

        return await trio.to_thread.run_sync(go)

    def spawn(self, ns: str | None, argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
        """Start a process inside ``ns`` in its own session; it is stopped on close."""
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("text", True)
        proc = subprocess.Popen(self.argv(ns, argv), start_new_session=True, **popen)
        self.processes.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[Any], timeout: float = 5.0) -> int | None:
        """SIGTERM the process's group (its own session), SIGKILL after ``timeout``.

        The group is signalled only while its leader is unreaped (alive or a zombie of
        ours), so the group id cannot have been recycled by an unrelated process.
        """
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            if not _exited(proc.pid, timeout):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _exited(proc.pid, timeout)
            # Members that outlive the leader (a shell's children) go too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=timeout)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return proc.returncode

    def pids(self, ns: str) -> list[int]:
        result = _sh(["ip", "netns", "pids", ns], check=False)
        return [int(p) for p in result.stdout.split() if p.isdigit()]

    # --- teardown ------------------------------------------------------------------------

    def close(self) -> None:
        """Remove everything this lab made; every step is attempted even if one fails."""
        if self.closed:
            return
        self.closed = True
        for proc in reversed(self.processes):
            try:
                self.stop(proc)
            except Exception as error:  # keep tearing down
                log.warning("stopping pid %s: %s", proc.pid, error)
        _teardown(self.namespaces, self.root_links, self.rules)
        with contextlib.suppress(FileNotFoundError):
            self._registry_file().unlink()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _teardown(namespaces: list[str], root_links: list[str], rules: list[dict[str, Any]]) -> None:
    for ns in namespaces:
        # Whatever still runs in our namespace is ours (daemonised children included).
        for pid in [int(p) for p in _sh(["ip", "netns", "pids", ns], check=False).stdout.split()
                    if p.isdigit()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for ns in namespaces:
        for _ in range(50):  # `ip netns del` can race a process that is still exiting
            if _sh(["ip", "netns", "del", ns], check=False).returncode == 0:
                break
            if not Path("/run/netns", ns).exists():
                break
            time.sleep(0.05)
    for link in root_links:
        if Path("/sys/class/net", link).exists():
            _sh(["ip", "link", "del", link], check=False)
    for rule in rules:
        table = str(rule["table"])
        _sh(["ip", "rule", "del", "from", rule["source"], "table", table], check=False)
        _sh(["ip", "route", "flush", "table", table], check=False)


def sweep_stale() -> None:
    """Remove what labs of dead processes left (a run killed with SIGKILL)."""
    if not REGISTRY.is_dir():
        return
    for path in REGISTRY.glob(f"{PREFIX}*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _alive(int(record.get("pid", 0))):
            continue
        log.warning("sweeping a stale test lab: %s", path.name)
        _teardown(record.get("namespaces", []), record.get("root_links", []),
                  record.get("rules", []))
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def lab() -> Iterator[Lab]:
    """``with lab() as net:`` — a Lab that is torn down on any exit, Ctrl-C included."""
    made = Lab()
    try:
        yield made
    finally:
        made.close()


CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def inside(ns: str) -> Iterator[None]:
    """Move the calling thread into ``ns`` and back (for single-threaded tools: the bench).

    Sockets opened and processes started meanwhile belong to ``ns``; other threads do not
    move, so never use this in a process that serves from several threads.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise NetnsError(f"setns({ns}): {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise NetnsError(f"setns(back): {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(target)
        os.close(home)


def wait_for(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate()`` until true or ``timeout`` seconds pass (blocking)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
