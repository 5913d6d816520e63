"""`ipamd status` on the box: no token; 0 when the database answers and every enabled service
of this node runs, 1 naming what is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ipamd import runtime

SRC = str(Path(__file__).resolve().parents[3] / "src")


@pytest.fixture
def config_overrides() -> dict[str, dict[str, Any]]:
    return {"ops": {"heartbeat_seconds": 0.2, "node_down_seconds": 1.0}}


def _toml(tmp: Path, dsn: str, outbox: bool) -> Path:
    path = tmp / f"ipamd-{outbox}.toml"
    path.write_text(f'[database]\ndsn = "{dsn}"\n[dhcp]\nenabled = false\n'
                    f'[outbox]\nenabled = {str(outbox).lower()}\n'
                    '[ops]\nheartbeat_seconds = 0.2\nnode_down_seconds = 1.0\n')
    return path


async def _status(config: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": SRC}
    with trio.fail_after(60):
        return await trio.run_process(
            [sys.executable, "-m", "ipamd", "--config", str(config), "status", "--timeout", "20"],
            capture_stdout=True, capture_stderr=True, check=False, env=env)


async def test_status_probe(appliance: runtime.Running, dsn: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        while not appliance.state.running_services.get("ops"):
            await trio.sleep(0.1)
    await trio.sleep(0.5)  # a heartbeat with every service marked running
    ok = await _status(_toml(tmp_path, dsn, outbox=False))
    assert ok.returncode == 0, ok.stderr.decode()
    assert b"ok" in ok.stdout

    # This node's configuration enables the outbox, which the appliance does not run.
    missing = await _status(_toml(tmp_path, dsn, outbox=True))
    assert missing.returncode == 1
    assert b"service outbox is not running" in missing.stderr

    appliance.stop.set()
    with trio.fail_after(10):
        while appliance.state.running_services.get("ops"):
            await trio.sleep(0.1)
    await trio.sleep(0.3)
    stopped = await _status(_toml(tmp_path, dsn, outbox=False))
    assert stopped.returncode == 1
    assert b"stopped" in stopped.stderr, stopped.stderr

    unreachable = await _status(_toml(tmp_path, "postgresql://nobody@127.0.0.1:1/none", False))
    assert unreachable.returncode == 1
    assert b"database does not answer" in unreachable.stderr
