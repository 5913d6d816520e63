"""The mypyc-compiled DHCP hot path is used only when built from the sources beside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ipamd.dhcp
import ipamd.dhcp6
from ipamd.dhcp import codec, compiled, engine
from ipamd.dhcp6 import codec as codec6
from ipamd.dhcp6 import engine as engine6
from ipamd.dhcp6 import option_classes

ROOT = Path(__file__).resolve().parents[2]
SOURCES = Path(compiled.__file__).parents[1]  # src/ipamd: the stamp's names are paths from here


def _stamped(tmp_path: Path, **overrides: object) -> tuple[Path, Path]:
    """A copy of the sources and a build dir whose stamp matches them (plus overrides)."""
    source_dir, build_dir = tmp_path / "src", tmp_path / "build"
    source_dir.mkdir()
    build_dir.mkdir()
    for name in compiled.MODULES:
        (source_dir / name).parent.mkdir(exist_ok=True)
        shutil.copy(SOURCES / f"{name}.py", source_dir / f"{name}.py")
    stamp = {"abi": compiled._abi(), "sources": compiled.source_hashes(source_dir), **overrides}
    (build_dir / compiled.STAMP).write_text(json.dumps(stamp))
    return source_dir, build_dir


def test_a_build_matching_every_source_is_accepted(tmp_path: Path) -> None:
    source_dir, build_dir = _stamped(tmp_path)
    assert compiled.check(build_dir, source_dir) is None


def test_no_build_says_how_to_make_one(tmp_path: Path) -> None:
    assert "not built" in (compiled.check(tmp_path, SOURCES) or "")


def test_a_source_edited_after_the_build_makes_it_stale_and_names_the_file(
    tmp_path: Path,
) -> None:
    source_dir, build_dir = _stamped(tmp_path)
    with (source_dir / "dhcp6" / "engine.py").open("a") as f:
        f.write("\n# edited\n")
    assert compiled.check(build_dir, source_dir) == (
        "stale: dhcp6/engine.py changed since the build")


def test_one_list_names_both_rooms_hot_paths() -> None:
    assert compiled.MODULES[0] == "dhcp/accept"
    assert {"dhcp/engine", "dhcp6/codec", "dhcp6/engine"} <= set(compiled.MODULES)
    assert len(set(compiled.MODULES)) == len(compiled.MODULES)
    assert all((SOURCES / f"{name}.py").is_file() for name in compiled.MODULES)


def test_a_build_for_another_interpreter_is_refused(tmp_path: Path) -> None:
    source_dir, build_dir = _stamped(tmp_path, abi=".cpython-312-x86_64-linux-gnu.so")
    assert "another interpreter" in (compiled.check(build_dir, source_dir) or "")


def test_a_build_of_another_module_set_is_refused(tmp_path: Path) -> None:
    source_dir, build_dir = _stamped(tmp_path)
    stamp = json.loads((build_dir / compiled.STAMP).read_text())
    stamp["sources"]["dhcp/server"] = "0" * 64  # a module compiled then, not now
    (build_dir / compiled.STAMP).write_text(json.dumps(stamp))
    assert compiled.check(build_dir, source_dir) == "built for another set of modules"


def test_a_broken_stamp_is_refused_not_raised(tmp_path: Path) -> None:
    (tmp_path / compiled.STAMP).write_text("{not json")
    assert "unreadable" in (compiled.check(tmp_path, SOURCES) or "")


def test_activate_leaves_the_package_alone_unless_the_build_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    path = [str(SOURCES / "dhcp6")]
    assert not compiled.activate(path, tmp_path, room="dhcp6")
    assert path == [str(SOURCES / "dhcp6")]
    assert compiled.STATUS.startswith("pure Python: compiled hot path not built")

    monkeypatch.setenv(compiled.PURE_ENV, "1")
    assert not compiled.activate(path, compiled.BUILD_DIR, room="dhcp6")
    assert path == [str(SOURCES / "dhcp6")] and compiled.PURE_ENV in compiled.STATUS


def test_a_build_that_does_not_load_leaves_the_package_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    _, build_dir = _stamped(tmp_path)  # a stamp matching these sources…
    (build_dir / f"{compiled.GROUP}__mypyc{compiled._abi()}").write_bytes(b"not a library")
    path = [str(SOURCES / "dhcp")]
    assert not compiled.activate(path, build_dir)  # …and a library that is not one
    assert path == [str(SOURCES / "dhcp")]
    assert compiled.STATUS.startswith("pure Python: compiled hot path does not load")


@pytest.mark.skipif(not os.environ.get("IPAMD_EXPECT_COMPILED"),
                    reason="`make test` builds the compiled hot path and sets this")
def test_make_test_runs_the_compiled_hot_path() -> None:
    assert compiled.check() is None
    assert ipamd.dhcp.__path__[0] == str(compiled.BUILD_DIR / "ipamd" / "dhcp")
    assert ipamd.dhcp6.__path__[0] == str(compiled.BUILD_DIR / "ipamd" / "dhcp6")
    for module in (codec, engine, codec6, engine6, option_classes):
        assert module.__file__ and module.__file__.endswith(compiled._abi())
        assert Path(module.__file__).is_relative_to(compiled.BUILD_DIR)


def test_the_pure_python_modules_pass_the_dhcp_and_dhcp6_unit_tests_too() -> None:
    """The fallback (no compiler, a stale build) is the same code; keep it passing."""
    env = {**os.environ, compiled.PURE_ENV: "1"}
    env.pop("IPAMD_EXPECT_COMPILED", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/dhcp",
         "tests/unit/test_dhcp_codec.py", "tests/unit/test_dhcp_relay_agent.py",
         "tests/unit/dhcp6"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=480, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


@pytest.mark.skipif(not os.environ.get("IPAMD_EXPECT_COMPILED"),
                    reason="compares with the build `make test` made")
def test_a_second_build_of_the_same_sources_is_byte_identical(tmp_path: Path) -> None:
    """The image ships these modules and must build reproducibly (image/build.sh)."""
    again = tmp_path / "again"
    # In its own process: mypy retunes the garbage collector (thresholds, freeze) of the
    # process it runs in, and the build changes directory.
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from ipamd.dhcp.compiled import build; build(Path(sys.argv[1]))", str(again)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert compiled.check(again) is None

    def files(top: Path) -> dict[str, bytes]:
        return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*.so"))}

    made, rebuilt = files(compiled.BUILD_DIR), files(again)
    assert len(made) == len(compiled.MODULES) + 1  # the modules and the group's library
    assert made.keys() == rebuilt.keys()
    assert [name for name in made if made[name] != rebuilt[name]] == []
    for blob in rebuilt.values():
        assert str(tmp_path).encode() not in blob and str(ROOT).encode() not in blob
