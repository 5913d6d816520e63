"""The appliance as an operator runs it: supervisord with postgres and ipamd from the shipped
supervisord.conf; the first token minted on loopback; a restart; SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _logs(home: Path) -> str:
    return "\n".join(
        f"== {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        for log in sorted((home / "var/log").glob("*.log"))
    )


def _wait_for(url: str, home: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s\n{_logs(home)}")


def _start(home: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(ROOT / ".venv/bin/supervisord"), "-n", "-c", str(home / "appliance/supervisord.conf")],
        cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def _stop(process: subprocess.Popen) -> float:
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    return time.monotonic() - started


@pytest.fixture
def home():
    # Not under pytest's tmp_path: the postgres user must be able to traverse every parent.
    home = Path(tempfile.mkdtemp(prefix="ipamd-appliance-"))
    os.chmod(home, 0o755)
    (home / "appliance").mkdir()
    shutil.copy(ROOT / "appliance/supervisord.conf", home / "appliance/supervisord.conf")
    (home / ".venv").symlink_to(ROOT / ".venv")
    for sub in ("var", "var/log", "var/supervisor"):
        (home / sub).mkdir(mode=0o755)
    yield home
    shutil.rmtree(home, ignore_errors=True)


def test_run_bootstrap_restart_and_sigterm(home: Path):
    loopback, public = free_port(), free_port()
    config = home / "ipamd.toml"
    config.write_text(
        f"""
[api]
public_listen = ["127.0.0.1:{public}"]
loopback_listen = "127.0.0.1:{loopback}"
[database]
durable = false
[dhcp]
enabled = false
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("IPAMD_")}
    env["IPAMD_CONFIG"] = str(config)
    base = f"http://127.0.0.1:{loopback}/api/v1"

    process = _start(home, env)
    try:
        _wait_for(base + "/openapi.json", home)
        made = httpx.post(base + "/tokens", json={"name": "first", "role": "admin"})
        assert made.status_code == 201, made.text
        secret = made.json()["token"]
        assert secret.startswith("service_live_")
        denied = httpx.get(base + "/health")
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "unauthorized"
        auth = {"Authorization": f"Bearer {secret}"}
        assert httpx.get(base + "/health", headers=auth).status_code == 200
        # The public face is TLS with the self-signed pair made on first boot.
        tls = httpx.get(f"https://127.0.0.1:{public}/api/v1/health", headers=auth, verify=False)
        assert tls.status_code == 200
        assert (home / "var/tls/key.pem").stat().st_mode & 0o777 == 0o600
    finally:
        took = _stop(process)
    assert took < 10, f"stop took {took:.1f}s"
    assert process.returncode == 0

    process = _start(home, env)
    try:
        _wait_for(base + "/openapi.json", home)
        assert httpx.get(base + "/health", headers=auth).status_code == 200
        assert httpx.post(base + "/tokens", json={"name": "x", "role": "admin"}).status_code == 401
    finally:
        took = _stop(process)
    assert took < 10 and process.returncode == 0
    for log in (home / "var/log").glob("*.log"):
        assert "Traceback" not in log.read_text(errors="replace"), log.name
