"""`ipamd restore` with its database unreachable says so in one line and exits 5 (documented
in docs/operations.md), never a trio traceback; with a supervisor it stops the appliance's
ipamd program for the restore and starts it again after, whatever the outcome."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import free_port


def _backup(path: Path) -> Path:
    """A well-formed backup (what `ipamd backup` writes): restore reads it before connecting."""
    dump = b"PGDMP not replayed in these tests"
    manifest = {"format": 1, "ipamd_version": "0.0.0", "schema_version": 1, "node": "n1",
                "created_at": "2026-12-07T00:00:00+00:00",
                "dump_sha256": hashlib.sha256(dump).hexdigest(), "tls": False}
    with tarfile.open(path, "w") as tar:
        for name, data in (("manifest.json", json.dumps(manifest).encode()),
                           ("ipamd.dump", dump)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _config(tmp_path: Path, dsn: str) -> Path:
    """The bundled postgres (a socket directory where none listens), or an external DSN."""
    for sub in ("state", "run", "pgdata"):
        (tmp_path / sub).mkdir(exist_ok=True)
    config = tmp_path / "ipamd.toml"
    config.write_text(f"""state_dir = "{tmp_path / 'state'}"
[database]
dsn = "{dsn}"
data_dir = "{tmp_path / 'pgdata'}"
socket_dir = "{tmp_path / 'run'}"
connect_timeout_seconds = 1.0
""")
    return config


def _restore(config: Path, backup: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ipamd", "--config", str(config), "restore",
                           str(backup), *extra], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("external", [False, True], ids=["bundled", "dsn"])
def test_restore_without_its_database_says_so_in_one_line(tmp_path: Path,
                                                           external: bool) -> None:
    dsn = f"postgresql://ipamd:secret@127.0.0.1:{free_port()}/ipamd" if external else ""
    result = _restore(_config(tmp_path, dsn), _backup(tmp_path / "ipamd.backup"))
    assert result.returncode == 5, result.stderr
    assert "Traceback" not in result.stderr and "TooSlowError" not in result.stderr
    assert result.stderr.count("\n") == 1
    if external:
        assert result.stderr.startswith("ipamd: restore: the database does not answer "
                                        "(database.dsn = postgresql://ipamd:***@127.0.0.1:")
        assert result.stderr.endswith("check that server and try again. Nothing was "
                                      "changed.\n")
    else:
        assert result.stderr == (
            "ipamd: restore: the bundled postgres does not answer (waited 1s on its socket "
            f"in {tmp_path / 'run'}): start it (supervisorctl start postgres) and try again. "
            "Nothing was changed.\n")
    assert "secret" not in result.stderr
    assert result.stdout == ""


SUPERVISOR = """[supervisord]
nodaemon = true
logfile = {d}/supervisord.log
pidfile = {d}/supervisord.pid
childlogdir = {d}

[unix_http_server]
file = {d}/supervisor.sock
chmod = 0700

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl = unix://{d}/supervisor.sock

[program:ipamd]
command = sleep 600
startsecs = 0
stopwaitsecs = 5
"""


def _ctl(conf: Path, *argv: str) -> str:
    return subprocess.run([sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf),
                           *argv], capture_output=True, text=True, timeout=30).stdout


def _ipamd_pid(conf: Path) -> str | None:
    """The pid of supervisor's running ipamd program (None when it is not running)."""
    fields = _ctl(conf, "status", "ipamd").split()
    return fields[3].rstrip(",") if fields[1:3] == ["RUNNING", "pid"] else None


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Path]:
    """A real supervisord whose `ipamd` program is a stand-in (sleep)."""
    home = tmp_path / "sv"
    home.mkdir()
    conf = home / "supervisord.conf"
    conf.write_text(SUPERVISOR.format(d=home))
    daemon = subprocess.Popen([sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):  # bounded: up to ~20 s for supervisord to start its program
            if _ipamd_pid(conf):
                break
            time.sleep(0.1)
        else:
            pytest.fail("supervisord did not start its ipamd program")
        yield conf
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def test_restore_stops_and_starts_the_supervised_ipamd(tmp_path: Path, supervisor: Path) -> None:
    before = _ipamd_pid(supervisor)
    result = _restore(_config(tmp_path, ""), _backup(tmp_path / "ipamd.backup"),
                      "--supervisor", str(supervisor))
    assert result.returncode == 5 and result.stderr.count("\n") == 1, result.stderr
    after = _ipamd_pid(supervisor)
    assert after is not None and after != before  # stopped for the restore, started after
    log = (supervisor.parent / "supervisord.log").read_text()
    assert "stopped: ipamd" in log


def test_restore_leaves_a_stopped_ipamd_stopped(tmp_path: Path, supervisor: Path) -> None:
    """The manual way (stop, restore, start) still works: a stopped program is not started."""
    _ctl(supervisor, "stop", "ipamd")
    result = _restore(_config(tmp_path, ""), _backup(tmp_path / "ipamd.backup"),
                      "--supervisor", str(supervisor))
    assert result.returncode == 5, result.stderr
    assert _ipamd_pid(supervisor) is None
