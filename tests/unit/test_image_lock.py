"""image/lockcheck.py: a packages.lock the mirror no longer serves is named in one line (the
first missing pin and the command that refreshes the lock), not mmdebstrap's page of pins.
The versions come from an injected source here, and from this machine's own apt lists where
it has them (`apt-cache madison`, no network)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
MIRROR = {"base-files": {"12.4+deb12u15"}, "linux-image-amd64": {"6.1.176-1", "6.1.192-3"},
          "dash": {"0.5.12-2"}}


def _lockcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_lockcheck", ROOT / "image/lockcheck.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _mirror(names: list[str]) -> dict[str, set[str]]:
    return {name: MIRROR[name] for name in names if name in MIRROR}


def _lock(tmp_path: Path, *pins: str) -> Path:
    lock = tmp_path / "packages.lock"
    lock.write_text("".join(f"{pin}\n" for pin in pins))
    return lock


def test_stale_lock_names_the_first_missing_pin_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = _lock(tmp_path, "base-files=12.4+deb12u15", "linux-image-amd64=6.1.192-2",
                 "gone-package=1.0", "dash=0.5.12-2")
    assert _lockcheck().main([str(lock)], available=_mirror) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == (f"{lock} is stale: linux-image-amd64=6.1.192-2 is no longer on the mirror "
                   f"(it has 6.1.176-1, 6.1.192-3); refresh it: make image && cp "
                   f"build/image/packages.lock {lock}\n")


def test_a_package_the_mirror_dropped_and_warn_mode(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = _lock(tmp_path, "dash=0.5.12-2", "gone-package=1.0")
    assert _lockcheck().main([str(lock), "--warn", "--refresh", "make image"],
                             available=_mirror) == 0
    assert capsys.readouterr().err == (
        f"warning: {lock} is stale: gone-package=1.0 is no longer on the mirror (no such "
        "package there); refresh it: make image\n")


def test_current_lock_passes_silently(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    lock = _lock(tmp_path, "# a comment", "", "base-files=12.4+deb12u15", "dash=0.5.12-2")
    assert _lockcheck().main([str(lock)], available=_mirror) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("text", ["base-files\n", "=1.0\n", "dash=\n"])
def test_malformed_lock_cannot_be_checked(tmp_path: Path, text: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    lock = tmp_path / "packages.lock"
    lock.write_text(text)
    assert _lockcheck().main([str(lock)], available=_mirror) == 2
    assert "cannot check: line 1:" in capsys.readouterr().err


def test_madison_output_is_parsed() -> None:
    output = (" base-files | 12.4+deb12u15 | http://deb.debian.org/debian bookworm/main amd64 "
              "Packages\n      dpkg |    1.21.23 | http://deb.debian.org/debian bookworm/main "
              "amd64 Packages\n      dpkg |    1.21.22 | http://x bookworm/main Sources\n")
    assert _lockcheck().parse_madison(output) == {"base-files": {"12.4+deb12u15"},
                                                   "dpkg": {"1.21.23"}}


def _apt_versions(name: str) -> list[str]:
    if shutil.which("apt-cache") is None:
        return []
    out = subprocess.run(["apt-cache", "madison", name], capture_output=True, text=True,
                         check=False).stdout
    return [line.split("|")[1].strip() for line in out.splitlines() if line.count("|") == 2]


@pytest.mark.skipif(not _apt_versions("base-files"),
                    reason="no apt lists on this machine (apt-get update makes them)")
def test_machine_apt_lists_find_an_edited_lock_stale(tmp_path: Path) -> None:
    """The CLI as `make image LOCK=` runs it, against this machine's lists: a lock edited to
    name a version that does not exist is refused in one line; the real version passes."""
    current = _apt_versions("base-files")[0]
    good = _lock(tmp_path, f"base-files={current}")
    script = [sys.executable, str(ROOT / "image/lockcheck.py")]
    passed = subprocess.run([*script, str(good)], capture_output=True, text=True, timeout=60)
    assert (passed.returncode, passed.stderr) == (0, "")
    edited = _lock(tmp_path, f"base-files={current}", "dash=0.0~no-such-version")
    stale = subprocess.run([*script, str(edited)], capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1
    assert stale.stderr.count("\n") == 1
    assert stale.stderr.startswith(f"{edited} is stale: dash=0.0~no-such-version is no longer "
                                   "on the mirror (it has ")
    assert stale.stderr.endswith(f"refresh it: make image && cp build/image/packages.lock "
                                 f"{edited}\n")
