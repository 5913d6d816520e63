"""The bundled Postgres cluster: find the binaries, initdb once, build the server command.

Used by ``ipamd db-server`` (supervisor's ``postgres`` program) and by the test
harness. initdb and postgres refuse to run as root, so when we are root they run
as the ``postgres`` system user and the directories are handed to it.
"""

from __future__ import annotations

import glob
import logging
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger("ipamd.db")

SERVICE_USER = "postgres"

# Settings for the bundled server: unix socket only, small footprint.
BASE_SETTINGS = {
    "listen_addresses": "",
    "unix_socket_permissions": "0700",
    "max_connections": "100",
    "shared_buffers": "128MB",
    "log_min_messages": "warning",
    "log_destination": "stderr",
    "logging_collector": "off",
    # Short OLTP statements: JIT compilation costs far more than it saves (100-200 ms seen on
    # utilisation counts that cross jit_above_cost).
    "jit": "off",
}
# Tests only: durability traded for speed (never used by `ipamd db-server` unless configured).
FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class ClusterError(Exception):
    pass


def find_bin_dir(configured: str = "") -> Path:
    """The directory holding initdb and postgres (Debian keeps them per major version)."""
    candidates = [configured] if configured else []
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    )
    found = shutil.which("initdb")
    if found:
        candidates.append(str(Path(found).resolve().parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
            return Path(candidate)
    raise ClusterError(
        "no PostgreSQL server binaries found (install the 'postgresql' package, "
        "or set database.bin_dir)"
    )


@dataclass(frozen=True)
class Cluster:
    data_dir: Path
    socket_dir: Path
    bin_dir: Path
    superuser: str = "ipamd"
    port: int = 5432

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    def dsn(self, database: str) -> str:
        host = quote(str(self.socket_dir), safe="")
        return f"postgresql://{self.superuser}@{host}:{self.port}/{database}"

    def _demote(self) -> Callable[[], None] | None:
        if not self.as_root:
            return None
        entry = pwd.getpwnam(SERVICE_USER)

        def demote() -> None:
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)

        return demote

    def _own(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)
        if self.as_root:
            entry = pwd.getpwnam(SERVICE_USER)
            os.chown(path, entry.pw_uid, entry.pw_gid)
            # The service user must be able to reach the directory through its parents.
            for parent in path.resolve().parents:
                if not os.access(parent, os.X_OK) or (parent.stat().st_mode & 0o001) == 0:
                    raise ClusterError(
                        f"{path}: the '{SERVICE_USER}' user cannot traverse {parent}; "
                        "choose database.data_dir and database.socket_dir under a "
                        "world-traversable directory"
                    )

    @property
    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> bool:
        """initdb when the data directory is empty; returns True when it ran."""
        self._own(self.socket_dir)
        if self.initialised:
            return False
        self._own(self.data_dir)
        argv = [
            str(self.bin_dir / "initdb"),
            "-D", str(self.data_dir),
            "-U", self.superuser,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
        ]
        result = subprocess.run(  # noqa: S603 - fixed argv, no shell
            argv, preexec_fn=self._demote(), capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise ClusterError(f"initdb failed: {result.stderr.strip() or result.stdout.strip()}")
        log.info("initialised PostgreSQL cluster in %s", self.data_dir)
        return True

    def server_argv(self, *, fast: bool = False) -> list[str]:
        settings = dict(BASE_SETTINGS)
        if fast:
            settings |= FAST_SETTINGS
        settings["unix_socket_directories"] = str(self.socket_dir)
        settings["port"] = str(self.port)
        argv = [str(self.bin_dir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def exec_server(self, *, fast: bool = False) -> None:
        """Replace this process with postgres (as the service user when root)."""
        demote = self._demote()
        if demote:
            demote()
        argv = self.server_argv(fast=fast)
        os.execv(argv[0], argv)  # noqa: S606 - fixed argv

    def spawn_server(
        self, *, fast: bool = False, log_file: Path | None = None
    ) -> subprocess.Popen[bytes]:
        """Start postgres as a child process (the test harness)."""
        out = open(log_file, "ab") if log_file else subprocess.DEVNULL  # noqa: SIM115
        return subprocess.Popen(  # noqa: S603
            self.server_argv(fast=fast), preexec_fn=self._demote(), stdout=out, stderr=out
        )
