"""`ipamd run` on a configuration it cannot serve: exit 2, the key named, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio


def _write(tmp_path: Path, dsn: str, api: str = "", dhcp: str = "[dhcp]\nenabled = false\n") -> Path:
    config = tmp_path / "ipamd.toml"
    config.write_text(
        f'state_dir = "{tmp_path}"\n'
        f'[database]\ndsn = "{dsn}"\nconnect_timeout_seconds = 20.0\n'
        '[api]\npublic_listen = ["127.0.0.1:0"]\nloopback_listen = "127.0.0.1:0"\n' + api
        + dhcp + "[outbox]\nenabled = false\n"
    )
    return config


async def _run(config: Path) -> subprocess.CompletedProcess[str]:
    return await trio.to_thread.run_sync(lambda: subprocess.run(
        [sys.executable, "-m", "ipamd", "--config", str(config), "run"],
        capture_output=True, text=True, timeout=120,
    ))


@pytest.mark.parametrize("case", ["missing", "mismatched"])
async def test_unusable_tls_pair_is_named(tmp_path: Path, dsn: str, case: str) -> None:
    from ipamd.tls import ensure_self_signed

    if case == "missing":
        cert, key = tmp_path / "nope-cert.pem", tmp_path / "nope-key.pem"
    else:
        cert, _ = ensure_self_signed(tmp_path / "one")
        _, key = ensure_self_signed(tmp_path / "two")
    result = await _run(_write(tmp_path, dsn, f'tls_cert = "{cert}"\ntls_key = "{key}"\n'))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "api.tls_cert / api.tls_key" in result.stderr
    assert "Traceback" not in result.stderr


async def test_dhcp_listen_address_the_host_lacks_is_named(tmp_path: Path, dsn: str) -> None:
    # 10.77.99.1 is on no interface here: bind() fails at once (EADDRNOTAVAIL), nothing is sent.
    dhcp = '[dhcp]\nenabled = true\nlisten = ["10.77.99.1:0"]\n'
    result = await _run(_write(tmp_path, dsn, dhcp=dhcp))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "dhcp.listen '10.77.99.1:0': cannot open" in result.stderr
    assert "Traceback" not in result.stderr
