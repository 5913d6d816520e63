"""What the tests' real servers (BIND, PowerDNS, the Kerberos KDC) share: stopping the process
they started, and asking a DNS server on loopback for an answer."""

from __future__ import annotations

import shutil
import signal
import subprocess
from typing import Any

DIG = shutil.which("dig") or "/usr/bin/dig"


def terminate(proc: subprocess.Popen[Any] | None) -> None:
    """SIGTERM, wait up to 10 s, then SIGKILL: only the process this test started."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def dig_short(port: int, name: str, rtype: str = "A") -> list[str]:
    """The answer's RDATA at 127.0.0.1:port (dig +short), sorted; empty for none."""
    out = subprocess.run(
        [DIG, "+short", "+time=1", "+tries=1", "-p", str(port), "@127.0.0.1", name, rtype],
        capture_output=True, text=True, timeout=10, check=False,
    )
    if out.returncode != 0:
        return []
    return sorted(line for line in out.stdout.splitlines() if line and ";" not in line)
