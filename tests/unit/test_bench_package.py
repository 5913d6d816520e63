"""bench/ is one package run with `python -m bench.<name>` (bench/README.md): no module of it
edits sys.path, and every bench `make bench` runs is a module of it."""

from __future__ import annotations

import ast
from pathlib import Path

from bench import run_all

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _edits_sys_path(tree: ast.AST) -> list[int]:
    """Lines that assign to sys.path (or a slice of it) or call one of its mutating methods."""
    lines = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AugAssign) else [])
        for target in targets:
            base = target.value if isinstance(target, ast.Subscript) else target
            if ast.unparse(base) == "sys.path":
                lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and ast.unparse(node.func.value) == "sys.path":
            lines.append(node.lineno)
    return lines


def test_no_bench_module_edits_sys_path() -> None:
    modules = sorted(BENCH.glob("*.py"))
    assert BENCH / "__init__.py" in modules
    found = {m.name: _edits_sys_path(ast.parse(m.read_text())) for m in modules}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_check_sees_each_form_of_edit() -> None:
    for source in ("sys.path[:0] = ['x']", "sys.path.insert(0, 'x')", "sys.path += ['x']",
                   "sys.path = ['x']"):
        assert _edits_sys_path(ast.parse(source)) == [1], source
    assert _edits_sys_path(ast.parse("print(sys.path)")) == []


def test_make_bench_runs_modules_of_the_package() -> None:
    assert run_all.ORDER
    missing = [name for name in run_all.ORDER if not (BENCH / f"{name}.py").exists()]
    assert missing == []
