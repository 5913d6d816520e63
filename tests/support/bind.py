"""A real BIND 9 (`named` from the bind9 package) on loopback for the DNS tests: a TSIG key,
zones that accept signed updates, started and stopped by the test (by its own pid)."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

NAMED = shutil.which("named") or "/usr/sbin/named"
DIG = shutil.which("dig") or "/usr/bin/dig"
KEY_NAME = "ddns-key"
START_TIMEOUT = 10.0


def free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free port")


def need_bind() -> None:
    if not Path(NAMED).exists() or not Path(DIG).exists():
        pytest.skip("bind9 and bind9-dnsutils are not installed (make system-test)")


_ZONE = """$TTL 300
@ IN SOA ns.{zone}. hostmaster.{zone}. 1 3600 600 86400 60
@ IN NS ns.{zone}.
ns.{zone}. IN A 127.0.0.1
"""


@dataclass
class Bind:
    root: Path
    zones: list[str]
    port: int = field(default_factory=free_port)
    secret: str = field(default_factory=lambda: base64.b64encode(os.urandom(32)).decode())
    proc: subprocess.Popen[bytes] | None = None
    # Secondary of a primary at this (address, port) instead of a primary of its own zones.
    primary: tuple[str, int] | None = None
    # GSS-TSIG (RFC 3645): BIND's keytab and the Kerberos principal allowed to update.
    gss_keytab: Path | None = None
    gss_principal: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def write(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        zones = ""
        for zone in self.zones:
            if self.primary is not None:
                host, port = self.primary
                zones += (f'zone "{zone}" {{ type secondary; file "{self.root}/{zone}.bak"; '
                          f"primaries {{ {host} port {port}; }}; }};\n")
                continue
            path = self.root / f"{zone}.zone"
            if not path.exists():
                path.write_text(_ZONE.format(zone=zone if not zone.endswith("arpa") else
                                             "lan.example"))
            if self.gss_principal:
                policy = f"update-policy {{ grant {self.gss_principal} zonesub ANY; }};"
            else:
                policy = f"allow-update {{ key {KEY_NAME}; }};"
            zones += f'zone "{zone}" {{ type primary; file "{path}"; {policy} }};\n'

        (self.root / "named.conf").write_text(f"""
controls {{ }};
key "{KEY_NAME}" {{ algorithm hmac-sha256; secret "{self.secret}"; }};
options {{
    directory "{self.root}";
    pid-file none;
    session-keyfile "{self.root}/session.key";
    managed-keys-directory "{self.root}";
    listen-on port {self.port} {{ 127.0.0.1; }};
    listen-on-v6 {{ none; }};
    recursion no;
    allow-query {{ any; }};
    notify no;
    dnssec-validation no;
    {f'tkey-gssapi-keytab "{self.gss_keytab}";' if self.gss_keytab else ""}
}};
{zones}""")

    def start(self) -> None:
        self.write()
        log = open(self.root / "named.log", "ab")  # noqa: SIM115 - kept for the process's life
        self.proc = subprocess.Popen(
            [NAMED, "-g", "-4", "-c", str(self.root / "named.conf")],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("named exited: " + (self.root / "named.log").read_text()[-2000:])
            if self.dig(f"{self.zones[0]}", "SOA") or (
                    self.primary is not None and "running" in
                    (self.root / "named.log").read_text(errors="replace")):
                return
            time.sleep(0.1)
        raise RuntimeError("named did not answer in time")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def dig(self, name: str, rtype: str = "A") -> list[str]:
        return dig_short(self.port, name, rtype)


def dig_short(port: int, name: str, rtype: str = "A") -> list[str]:
    """The answer's RDATA (dig +short) from a DNS server on 127.0.0.1:``port``, sorted; empty
    for none or no answer. Blocking: call it in a thread from the appliance's trio loop."""
    out = subprocess.run(
        [DIG, "+short", "+time=1", "+tries=1", "-p", str(port), "@127.0.0.1", name, rtype],
        capture_output=True, text=True, timeout=10, check=False,
    )
    if out.returncode != 0:
        return []
    return sorted(line for line in out.stdout.splitlines() if line and ";" not in line)
