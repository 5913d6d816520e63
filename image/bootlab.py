"""What the two boot tests (container: boot_test.py, VM: vm_boot_test.py) share: running a
command (in a network namespace) and waiting, bounded, for a step while printing its time."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable


def sh(*argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def ns(name: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return sh("ip", "netns", "exec", name, *argv, check=check)


def wait(what: str, check: Callable[[], bool], timeout: float, started: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            took = time.monotonic() - started
            print(f"  {took:6.1f} s  {what}", flush=True)
            return took
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def veth_pairs(pairs: list[tuple[str, str, str | None, str, str, str | None]]) -> None:
    """Each (a, a_ns, a_address, b, b_ns, b_address): a veth pair, one end in each
    namespace, addressed where given, up."""
    for a, a_ns, a_ip, b, b_ns, b_ip in pairs:
        sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        for link, where, address in ((a, a_ns, a_ip), (b, b_ns, b_ip)):
            sh("ip", "link", "set", link, "netns", where)
            if address:
                ns(where, "ip", "addr", "add", address, "dev", link)
            ns(where, "ip", "link", "set", link, "up")
