"""image/inputs.sh, the build's recorded inputs (CI never runs mmdebstrap): the .debs a tree
installed are kept with its lock and apt sources, sealed with hashes; `make image FROM=` takes
them back (a directory or a tarball) only whole and untouched, as a local apt repository; the
repository's mount leaves no trace in the tree and puts the recorded apt sources back."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "image/inputs.sh"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SOURCES = "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n"

pytestmark = pytest.mark.skipif(
    shutil.which("dpkg-deb") is None or shutil.which("apt-ftparchive") is None,
    reason="needs dpkg-deb and apt-ftparchive (make system-image installs apt-utils)")


def _run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *map(str, argv)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SOURCE_DATE_EPOCH": "1700000000"})


def _deb(where: Path, name: str, version: str) -> None:
    """A minimal real .deb, named as apt names its downloads."""
    tree = where / f"{name}-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN/control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: t <t@t>\n"
        f"Description: test package\n")
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(tree),
                    str(where / f"{name}_{version.replace(':', '%3a')}_all.deb")],
                   check=True, capture_output=True)
    shutil.rmtree(tree)


def _tree(tmp_path: Path) -> Path:
    """What mmdebstrap leaves before its cleanup: the apt cache and the image's apt sources."""
    root = tmp_path / "rootfs"
    cache = root / "var/cache/apt/archives"
    cache.mkdir(parents=True)
    (root / "etc/apt/sources.list.d").mkdir(parents=True)
    (root / "etc/apt/sources.list.d/0000debian.sources").write_text(SOURCES)
    _deb(cache, "alpha", "1.0-1")
    _deb(cache, "beta", "2:3.1-2")
    return root


def _recorded(tmp_path: Path) -> Path:
    root = _tree(tmp_path)
    debs = tmp_path / "out/debs"
    assert _run("record", root, debs).returncode == 0
    lock = tmp_path / "out/packages.lock"
    lock.write_text("alpha=1.0-1\nbeta=2:3.1-2\n")
    sealed = _run("seal", debs, lock, COMMIT)
    assert sealed.returncode == 0, sealed.stderr
    return debs


def test_recorded_inputs_are_sealed_and_load_as_a_repository(tmp_path: Path) -> None:
    debs = _recorded(tmp_path)
    assert sorted(p.name for p in debs.iterdir()) == [
        "SHA256SUMS", "alpha_1.0-1_all.deb", "apt-sources.tar", "beta_2%3a3.1-2_all.deb",
        "build-info", "packages.lock"]
    assert (debs / "build-info").read_text() == f"commit={COMMIT}\n"
    with tarfile.open(debs / "apt-sources.tar") as tar:
        assert tar.getnames() == ["etc/apt/sources.list.d",
                                  "etc/apt/sources.list.d/0000debian.sources"]
    archive = tmp_path / "inputs.tar"  # the tarball form of FROM=
    with tarfile.open(archive, "w") as tar:
        tar.add(debs, arcname="debs")
    for source in (debs, archive):
        repo = tmp_path / f"repo-{source.name}"
        loaded = _run("load", source, repo, COMMIT)
        assert loaded.returncode == 0, loaded.stderr
        packages = (repo / "Packages").read_text()
        assert "Package: alpha\n" in packages and "Version: 1.0-1\n" in packages
        assert "Filename: ./beta_2%3a3.1-2_all.deb" in packages
        assert "Codename: bookworm" in (repo / "Release").read_text()
    other = _run("load", debs, tmp_path / "repo-other", "f" * 40)
    assert other.returncode == 0 and f"recorded by commit {COMMIT}" in other.stderr


def test_a_changed_or_missing_input_is_refused(tmp_path: Path) -> None:
    debs = _recorded(tmp_path)
    (debs / "alpha_1.0-1_all.deb").write_bytes(b"not the recorded file")
    changed = _run("load", debs, tmp_path / "repo", COMMIT)
    assert changed.returncode == 1
    assert "a file does not match SHA256SUMS" in changed.stderr
    debs = _recorded(tmp_path / "again")
    (debs / "beta_2%3a3.1-2_all.deb").unlink()
    missing = _run("load", debs, tmp_path / "repo", COMMIT)
    assert missing.returncode == 1 and "does not match SHA256SUMS" in missing.stderr


def test_seal_refuses_debs_that_are_not_the_installed_set(tmp_path: Path) -> None:
    debs = _recorded(tmp_path)
    _deb(debs, "stray", "1")
    lock = tmp_path / "out/packages.lock"
    refused = _run("seal", debs, lock, COMMIT)
    assert refused.returncode == 1
    assert "the .debs (<) are not the installed packages (>)" in refused.stderr
    assert "< stray=1" in refused.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_the_repository_mount_leaves_no_trace(tmp_path: Path) -> None:
    debs = _recorded(tmp_path)
    repo = tmp_path / "work/from"
    assert _run("load", debs, repo, COMMIT).returncode == 0
    root = tmp_path / "fresh"
    (root / "etc/apt").mkdir(parents=True)
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file://{repo} ./\n")
    mounted = _run("mount", root, repo)
    assert mounted.returncode == 0, mounted.stderr
    try:
        assert (root / str(repo).lstrip("/") / "Packages").is_file()
    finally:
        unmounted = _run("unmount", root, repo)
    assert unmounted.returncode == 0, unmounted.stderr
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == [
        "etc", "etc/apt", "etc/apt/sources.list.d", "etc/apt/sources.list.d/0000debian.sources"]
    assert (root / "etc/apt/sources.list.d/0000debian.sources").read_text() == SOURCES
