"""A real PowerDNS Authoritative server (pdns-server + pdns-backend-sqlite3) on loopback with
its HTTP API on, started and stopped by the test (by its own pid)."""

from __future__ import annotations

import secrets
import shutil
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.bind import free_port
from tests.support.daemons import dig_short, terminate

PDNS = shutil.which("pdns_server") or "/usr/sbin/pdns_server"
SCHEMA = Path("/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql")
START_TIMEOUT = 10.0


def need_pdns() -> None:
    if not Path(PDNS).exists() or not SCHEMA.exists():
        pytest.skip("pdns-server and pdns-backend-sqlite3 are not installed (make system-test)")


@dataclass
class PowerDns:
    root: Path
    dns_port: int = field(default_factory=free_port)
    api_port: int = field(default_factory=free_port)
    key: str = field(default_factory=lambda: secrets.token_hex(16))
    proc: subprocess.Popen[bytes] | None = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.api_port}/api/v1"

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        db = self.root / "pdns.sqlite3"
        if not db.exists():
            with sqlite3.connect(db) as conn:
                conn.executescript(SCHEMA.read_text())
        (self.root / "pdns.conf").write_text(f"""
launch=gsqlite3
gsqlite3-database={db}
local-address=127.0.0.1
local-port={self.dns_port}
api=yes
api-key={self.key}
webserver=yes
webserver-address=127.0.0.1
webserver-port={self.api_port}
webserver-allow-from=127.0.0.0/8
socket-dir={self.root}
guardian=no
daemon=no
disable-syslog=yes
write-pid=no
setuid=
setgid=
""")
        log = open(self.root / "pdns.log", "ab")  # noqa: SIM115 - kept for the process's life
        self.proc = subprocess.Popen([PDNS, f"--config-dir={self.root}"], stdout=log,
                                     stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("pdns exited: " + (self.root / "pdns.log").read_text()[-2000:])
            try:
                if httpx.get(f"{self.api}/servers/localhost", headers={"X-API-Key": self.key},
                             timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("pdns API did not answer in time")

    def create_zone(self, zone: str) -> None:
        response = httpx.post(f"{self.api}/servers/localhost/zones",
                              headers={"X-API-Key": self.key}, timeout=5, json={
                                  "name": zone + ".", "kind": "Native",
                                  # No DNSSEC here: rectifying the zone after every API
                                  # change would cost PowerDNS time in the zone's size.
                                  "api_rectify": False,
                                  "nameservers": [f"ns.{zone}."]})
        assert response.status_code == 201, response.text

    def delete_zone(self, zone: str) -> None:
        response = httpx.delete(f"{self.api}/servers/localhost/zones/{zone}.",
                                headers={"X-API-Key": self.key}, timeout=30)
        assert response.status_code == 204, response.text

    def stop(self) -> None:
        terminate(self.proc)
        self.proc = None

    def dig(self, name: str, rtype: str = "A") -> list[str]:
        return dig_short(self.dns_port, name, rtype)
