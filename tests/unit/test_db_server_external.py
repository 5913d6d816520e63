"""`ipamd db-server` with an external database (database.dsn set): supervisor starts it on
every box, so it must not exit (an exit is a restart loop, then BACKOFF/FATAL). It says so
once, stays up, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def test_db_server_with_an_external_dsn_idles_until_stopped(tmp_path: Path) -> None:
    config = tmp_path / "ipamd.toml"
    config.write_text(f'state_dir = "{tmp_path}"\n[database]\n'
                      'dsn = "postgresql://ipamd:s3cret@db1,db2/ipamd"\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "ipamd", "--config", str(config), "db-server"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the one line it logs, then it waits
        assert "external database" in line and "idle until stopped" in line, line
        assert "s3cret" not in line
        assert process.poll() is None  # still running: supervisor sees RUNNING, not BACKOFF
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
