"""No code in src/ changes another package's module attributes (run by `make lint`).

Rebinding a name in another library's module (``hypercorn.trio.run.TCPServer = ours``) is a
process-wide change that leans on that library's internals and breaks silently when it
changes (docs/DEVELOPING.md: no global mutable state; pass what you need as a parameter).
Found, in every file under the given folder, for any name an import of a package that is
not ipamd binds to a module or a class (``import x``, ``import x.y as z``, ``from a import
b`` where ``a.b`` is a submodule, a module or a class; other objects taken from a package,
such as Quart's request-scoped ``g``, are made to be written):

- an assignment, augmented assignment or ``del`` of an attribute under it:
  ``import x; x.y = ...``, ``import x.y; x.y.z = ...``, ``from a import b; b.c = ...``;
- ``setattr(x, ...)`` / ``delattr(x, ...)`` on it or an attribute under it.

A local name that shadows the import (a parameter, an assignment, a loop variable) is not
the import. Attributes of objects a call returns (``logging.getLogger(...).disabled``) are
not module attributes and are not looked at.

Usage: `python -m tests.support.no_patching [FOLDER]` (default src/) prints one line per
finding (file, line, what is assigned) and exits 1; silent with exit 0 when there is none.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OURS = "ipamd"
SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    target: str  # what is assigned, as written
    origin: str  # the import the name comes from

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: assigns {self.target}, an attribute of "
                f"{self.origin} (another package's): pass what is needed as a parameter")


def _foreign_imports(tree: ast.AST) -> dict[str, str]:
    """Names bound by imports of other packages -> what they are ("module x", "y from x")."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == OURS:
                    continue
                if alias.asname:
                    names[alias.asname] = f"module {alias.name}"
                else:
                    top = alias.name.split(".")[0]
                    names[top] = f"module {top}"
        elif isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] == OURS:
                continue
            for alias in node.names:
                kind = _kind(node.module or "", alias.name)
                if kind:
                    names[alias.asname or alias.name] = f"{kind} {node.module}.{alias.name}"
    return names


def _kind(module: str, name: str) -> str | None:
    """"module" or "class" when ``from module import name`` binds one, else None (an
    object, or nothing importable here)."""
    try:
        if importlib.util.find_spec(f"{module}.{name}") is not None:
            return "module"
    except (ImportError, ValueError):
        pass
    try:
        value = getattr(importlib.import_module(module), name)
        if inspect.ismodule(value):
            return "module"
        return "class" if inspect.isclass(value) else None
    except Exception:  # a proxy may raise on any look; an absent name is not a class
        return None


def _shadowed(tree: ast.AST) -> set[str]:
    """Names also bound otherwise than by an import: parameters, assignments, loops."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _root(node: ast.expr) -> ast.Name | None:
    """The name an attribute chain starts from (``x`` of ``x.y.z``), else None."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    """What a statement assigns or deletes (tuple targets unpacked)."""
    found: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        found = [node.target]
    elif isinstance(node, ast.Delete):
        found = list(node.targets)
    while found:
        target = found.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            found.extend(target.elts)
        elif isinstance(target, ast.Starred):
            found.append(target.value)
        else:
            yield target


def _patched(node: ast.AST) -> Iterator[ast.expr]:
    """Attribute chains a statement or call changes: assigned attributes, setattr's and
    delattr's first argument."""
    for target in _targets(node):
        if isinstance(target, ast.Attribute):
            yield target
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in ("setattr", "delattr") and node.args:
        yield node.args[0]


def findings_in(source: str, path: Path) -> list[Finding]:
    tree = ast.parse(source, filename=str(path))
    foreign = _foreign_imports(tree)
    for name in _shadowed(tree):
        foreign.pop(name, None)
    found = []
    for node in ast.walk(tree):
        for changed in _patched(node):
            root = _root(changed)
            if root is not None and root.id in foreign:
                what = ast.unparse(changed)
                if isinstance(node, ast.Call):
                    what = ast.unparse(node)
                found.append(Finding(path, node.lineno, what, foreign[root.id]))
    return sorted(found, key=lambda f: (str(f.path), f.line))


def check(root: Path) -> list[Finding]:
    found: list[Finding] = []
    for path in sorted(root.rglob("*.py")):
        found += findings_in(path.read_text(encoding="utf-8"), path)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else SRC
    found = check(root)
    for finding in found:
        print(finding)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
