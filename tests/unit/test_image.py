"""The appliance artifact is reproducible: two builds of one commit are the same bytes."""

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _build() -> Path:
    out = subprocess.run([str(ROOT / "image/tarball.sh")], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120).stdout.strip().splitlines()[-1]
    return ROOT / out


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None,
                    reason="needs the git checkout")
def test_two_builds_are_identical():
    first = hashlib.sha256(_build().read_bytes()).hexdigest()
    built = _build()  # (dist/ may hold other commits' artifacts: list this one)
    assert hashlib.sha256(built.read_bytes()).hexdigest() == first
    listing = subprocess.run(["tar", "tzf", built],
                             capture_output=True, text=True, check=True).stdout
    for needed in ("ipamd/Makefile", "ipamd/requirements.lock", "ipamd/appliance/supervisord.conf",
                   "ipamd/config/ipamd.toml", "ipamd/src/ipamd/runtime/appliance.py"):
        assert needed in listing
