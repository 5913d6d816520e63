"""Real monitoring counterparts for the ops tests, all on loopback: Prometheus and
Alertmanager (Debian packages) as child processes, and an SMTP server (aiosmtpd)."""

from __future__ import annotations

import mailbox
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready within {seconds} s")


@contextmanager
def _process(args: list[str], ready_url: str, log: Path) -> Iterator[None]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_ready(ready_url, proc)
        yield
    finally:
        proc.terminate()  # our own child, by its handle
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def binary(name: str) -> str | None:
    return shutil.which(name)


@contextmanager
def alertmanager(tmp: Path) -> Iterator[str]:
    """A real Alertmanager; yields its base URL (http://127.0.0.1:port)."""
    port = free_port()
    config = tmp / "alertmanager.yml"
    config.write_text("route:\n  receiver: nowhere\nreceivers:\n  - name: nowhere\n")
    args = [binary("prometheus-alertmanager") or "prometheus-alertmanager",
            f"--config.file={config}", f"--storage.path={tmp / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]
    base = f"http://127.0.0.1:{port}"
    with _process(args, base + "/-/ready", tmp / "alertmanager.log"):
        yield base


@contextmanager
def prometheus(tmp: Path, target: str, token: str) -> Iterator[str]:
    """A real Prometheus scraping ipamd's /api/v1/metrics every second with a bearer token."""
    port = free_port()
    config = tmp / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: ipamd\n    metrics_path: /api/v1/metrics\n"
        f"    authorization:\n      type: Bearer\n      credentials: {token}\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    args = [binary("prometheus") or "prometheus", f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'prom-data'}", f"--web.listen-address=127.0.0.1:{port}"]
    base = f"http://127.0.0.1:{port}"
    with _process(args, base + "/-/ready", tmp / "prometheus.log"):
        yield base


class MailSink:
    """The messages a Maildir holds (aiosmtpd's Mailbox handler writes one)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def messages(self) -> list[dict[str, Any]]:
        box = mailbox.Maildir(self.path, create=False)
        return [{"from": m["From"], "to": m["To"], "subject": str(m["Subject"]),
                 "data": m.as_string()} for m in box]


@contextmanager
def smtp_server(tmp: Path) -> Iterator[tuple[int, MailSink]]:
    """A real SMTP server (aiosmtpd) in its own process: this one's asyncio loop is asyncpg's."""
    port = free_port()
    maildir = tmp / "maildir"
    args = [sys.executable, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{port}",
            "-c", "aiosmtpd.handlers.Mailbox", str(maildir)]
    with (tmp / "smtp.log").open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("aiosmtpd did not start") from None
                time.sleep(0.1)
        yield port, MailSink(maildir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
