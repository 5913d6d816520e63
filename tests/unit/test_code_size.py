"""The length limits of tests/support/code_size.py: what it names and what it lets pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import code_size


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "ipamd"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def _function(name: str, lines: int) -> str:
    """A function of exactly ``lines`` lines, its def line included."""
    body = "".join(f"    x{n} = {n}\n" for n in range(lines - 1))
    return f"def {name}() -> None:\n{body}"


def test_a_function_at_the_limit_passes_and_one_line_more_is_named(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "ok.py": _function("fits", code_size.MAX_FUNCTION_LINES),
        "room/long.py": "\n\n" + _function("too_long", code_size.MAX_FUNCTION_LINES + 1),
    })
    found = code_size.check(package)
    assert [str(o) for o in found] == [
        f"ipamd/room/long.py:3: function too_long is {code_size.MAX_FUNCTION_LINES + 1} lines "
        f"(at most {code_size.MAX_FUNCTION_LINES})"]


def test_methods_and_nested_functions_count_too(tmp_path: Path) -> None:
    method = "class C:\n" + "".join(
        "    " + line + "\n" for line in _function("m", 61).splitlines())
    nested = "def outer() -> None:\n" + "".join(
        "    " + line + "\n" for line in _function("inner", 61).splitlines())
    package = _package(tmp_path, {"a.py": method, "b.py": nested})
    named = {o.what for o in code_size.check(package)}
    assert named == {"function m", "function inner", "function outer"}


def test_a_long_module_is_named_unless_it_is_an_exempt_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = "\n".join(f"T{n} = {n}" for n in range(code_size.MAX_MODULE_LINES + 1)) + "\n"
    exempt = "dhcp/tables.py"
    monkeypatch.setitem(code_size.EXEMPT_MODULES, exempt, "a table")
    package = _package(tmp_path, {"big.py": table, exempt: table,
                                  "fits.py": table.split("\n", 1)[1]})
    found = code_size.check(package)
    assert [(o.path, o.what, o.length) for o in found] == [
        ("ipamd/big.py", "module", code_size.MAX_MODULE_LINES + 1)]


def test_main_prints_the_offenders_and_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    package = _package(tmp_path, {"long.py": _function("f", 70)})
    assert code_size.main([str(package)]) == 1
    assert "ipamd/long.py:1: function f is 70 lines" in capsys.readouterr().out
    (package / "long.py").write_text(_function("f", 10))
    assert code_size.main([str(package)]) == 0


def test_the_real_tree_keeps_the_limits() -> None:
    source = Path(__file__).resolve().parents[2] / "src" / "ipamd"
    found = code_size.check(source)
    assert found == [], "\n".join(map(str, found))
