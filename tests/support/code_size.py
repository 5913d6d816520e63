"""Short functions and modules in src/ipamd, checked from the source (run by `make lint`).

A function (or method, or nested function) longer than MAX_FUNCTION_LINES, or a module longer
than MAX_MODULE_LINES, is named with its length. A function's length runs from its `def` line
(decorators not counted) to its last line, docstring and comments included: what a reader has
to hold at once. Tables of data are the one exemption, listed in EXEMPT_MODULES with the
reason (docs/DEVELOPING.md names them too); their functions are still held to the limit.

Usage: `python -m tests.support.code_size [SRC_PACKAGE_DIR]` prints one line per offender
(path:line, what, its length, the limit) and exits 1; silent with exit 0 when all keep it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450

# Modules allowed past MAX_MODULE_LINES (path from the package folder -> why): tables of
# data, not code. None today: the DHCP codec tables (dhcp/options.py, dhcp6/option_classes.py)
# fit; a table that outgrows the limit goes in its own module, listed here.
EXEMPT_MODULES: dict[str, str] = {}


@dataclass(frozen=True)
class Offender:
    path: str
    line: int
    what: str
    length: int
    limit: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} is {self.length} lines (at most {self.limit})"


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def check_module(path: Path, package: Path) -> list[Offender]:
    """The offenders of one module (``package`` is the folder its path is shown from)."""
    text = path.read_text(encoding="utf-8")
    shown = path.relative_to(package.parent).as_posix()
    found: list[Offender] = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES and path.relative_to(package).as_posix() not in EXEMPT_MODULES:
        found.append(Offender(shown, 1, "module", lines, MAX_MODULE_LINES))
    for node in _functions(ast.parse(text, filename=str(path))):
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > MAX_FUNCTION_LINES:
            found.append(Offender(shown, node.lineno, f"function {node.name}", length,
                                  MAX_FUNCTION_LINES))
    return found


def check(package: Path) -> list[Offender]:
    """Every offender under ``package`` (src/ipamd), in path order."""
    found: list[Offender] = []
    for path in sorted(package.rglob("*.py")):
        found += check_module(path, package)
    return found


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parents[2] / "src" / "ipamd"
    package = Path(argv[0]) if argv else default
    found = check(package)
    for offender in found:
        print(offender)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
