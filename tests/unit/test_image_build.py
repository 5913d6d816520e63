"""The image build's determinism, cheaply (CI never runs mmdebstrap): the OCI archive writer
gives the same bytes for the same root file system whatever the build's place and clock, and
stamps nothing but SOURCE_DATE_EPOCH; the build script takes its epoch from the commit and
clamps every time."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import os
import tarfile
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
EPOCH = 1_700_000_000


def _oci() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_oci", ROOT / "image/oci.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rootfs(path: Path) -> Path:
    """A small root file system tar, written as GNU tar would with --sort=name --mtime."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("etc/ipamd/ipamd.toml", b"state_dir = '/var/lib/ipamd'\n"),
                           ("sbin/init", b"#!/bin/sh\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), EPOCH
            tar.addfile(info, io.BytesIO(data))
    return path


def _build(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    tmp.mkdir()
    rootfs = _rootfs(tmp / "rootfs.tar")
    os.utime(rootfs, (time.time() - 1000 * len(str(tmp)), time.time()))  # a different clock
    out = tmp / "image.tar"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    _oci().build(rootfs, out, "localhost/ipamd:0.1.0-abc", "abc")
    return out.read_bytes()


def test_same_rootfs_same_bytes_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _build(tmp_path / "one", monkeypatch)
    second = _build(tmp_path / "a-much-longer-build-directory", monkeypatch)
    assert first == second
    assert str(tmp_path).encode() not in first


def test_nothing_stamped_but_the_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _build(tmp_path / "b", monkeypatch)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == sorted(m.name for m in members)
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {
            (EPOCH, 0, 0, "", "")}
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
        manifest_digest = index["manifests"][0]["digest"].split(":")[1]
        manifest = json.loads(tar.extractfile(  # type: ignore[union-attr]
            f"blobs/sha256/{manifest_digest}").read())
        config = json.loads(tar.extractfile(  # type: ignore[union-attr]
            "blobs/sha256/" + manifest["config"]["digest"].split(":")[1]).read())
        layer = tar.extractfile(  # type: ignore[union-attr]
            "blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]).read()
        docker = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert config["created"] == "2023-11-14T22:13:20Z"  # EPOCH
    assert config["config"]["Entrypoint"] == ["/sbin/init"]
    assert config["config"]["Volumes"] == {"/var/lib/ipamd": {}}
    assert layer[4:8] == b"\0\0\0\0"  # gzip MTIME field: zero
    assert not layer[3] & 0x08  # gzip FNAME flag: no file name stored
    assert gzip.decompress(layer) == (tmp_path / "b/rootfs.tar").read_bytes()
    assert docker[0]["RepoTags"] == ["localhost/ipamd:0.1.0-abc"]
    (tmp_path / "b/again.tar").write_bytes(archive)
    listed = _oci().listing(tmp_path / "b/again.tar")  # what image-verify compares
    assert [line.split()[0] for line in listed] == ["etc/ipamd/ipamd.toml", "sbin/init"]
    assert all(f" 0:0 {EPOCH} 0 " in line for line in listed)


def test_needs_the_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    with pytest.raises(SystemExit, match="SOURCE_DATE_EPOCH"):
        _oci().build(_rootfs(tmp_path / "r.tar"), tmp_path / "o.tar", "x:y", "z")


def test_build_script_takes_time_from_the_commit_and_clamps() -> None:
    script = (ROOT / "image/build.sh").read_text()
    assert "git log -1 --format=%ct" in script
    assert "--sort=name" in script and "--clamp-mtime" in script and "--numeric-owner" in script
    assert "delete=atime,delete=ctime" in script
    assert "git archive" in script
    customize = (ROOT / "image/customize.sh").read_text()
    assert "--invalidation-mode checked-hash" in customize
    assert "--require-hashes" in customize
    assert ": > \"$root/etc/machine-id\"" in customize
    # The host's pip settings are unmounted and what was made for them removed.
    assert "umount" in customize and 'rm -rf "${created[i]}"' in customize
