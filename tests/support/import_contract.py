"""The import contract between ipamd's rooms, checked from the source (run by `make lint`).

A room is a folder under src/ipamd (`ipam`, `dhcp`, ...) or a top-level module (`config`,
`state`, `cli`, ...). Every import counts: module level, inside functions (lazy) and under
`if TYPE_CHECKING:` — a type-only import still ties two rooms together.

The rules (docs/DEVELOPING.md, "The room map", explains them):
- `core` imports no other room; `db` imports only `core`.
- Domain rooms (`ipam`, `dhcp`, `dhcp6`, `outbox`, `dns`, `ops`) never import `api`, `runtime`,
  `cli` or `console`; they raise core's domain errors and the API maps them.
- `dhcp` and `dhcp6` never import `outbox` (the DHCP path never waits for a delivery).
- `dhcp` never imports `dhcp6`: the DHCPv6 server builds on what DHCPv4 shares, not back.
- Nothing but the entry points (`cli`, `__main__`) imports `runtime` or `cli`; nothing but
  `runtime` and the entry points imports `api`.
- No two rooms import each other.
- `importer` (`ipamd-import`) imports nothing else of ipamd, and of third-party packages only
  httpx: it talks to the appliance through the HTTP API alone.

Usage: `python -m tests.support.import_contract [SRC_PACKAGE_DIR]` prints one line per broken
rule (file, line, the import, the rule) and exits 1; silent with exit 0 when the tree keeps it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "ipamd"
DOMAIN = frozenset({"ipam", "dhcp", "dhcp6", "outbox", "dns", "ops"})
ENTRY = frozenset({"cli", "__main__"})

# room -> the only rooms it may import (absent: no allow-list, the deny rules below apply)
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "db": frozenset({"core"}),
    # the messages between a node's processes: plain records, shared by both ends
    "messages": frozenset(),
    # `ipamd-import`: speaks only the HTTP API, runs on a laptop (docs/migrating.md)
    "importer": frozenset(),
}
# room -> the only third-party packages it may import (besides the standard library)
EXTERNAL: dict[str, frozenset[str]] = {
    "importer": frozenset({"httpx"}),
}
# room -> rooms it must never import
FORBIDDEN: dict[str, frozenset[str]] = {
    **{room: frozenset({"api", "runtime", "cli", "__main__", "console"}) for room in DOMAIN},
    "dhcp": frozenset({"api", "runtime", "cli", "__main__", "console", "outbox", "dhcp6"}),
    "dhcp6": frozenset({"api", "runtime", "cli", "__main__", "console", "outbox"}),
}
# rooms only some may import: target -> importers allowed
ONLY_FROM: dict[str, frozenset[str]] = {
    "runtime": ENTRY,
    "cli": ENTRY,
    "api": ENTRY | {"runtime"},
}


@dataclass(frozen=True)
class Import:
    path: Path  # the importing file
    line: int
    source: str  # importing room
    target: str  # imported room
    name: str  # the dotted module as written (resolved when relative)


@dataclass(frozen=True)
class Violation:
    imp: Import
    rule: str

    def __str__(self) -> str:
        path = self.imp.path
        if path.is_relative_to(Path.cwd()):
            path = path.relative_to(Path.cwd())
        return f"{path}:{self.imp.line}: {self.imp.source} imports {self.imp.name} ({self.rule})"


def _module_of(path: Path, root: Path) -> list[str]:
    """Dotted parts of a file's module, the package name first (…/ipamd/dhcp/x.py → ipamd.dhcp.x)."""
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def room_of(parts: list[str]) -> str | None:
    """`ipamd.dhcp.codec` → `dhcp`; `ipamd.config` → `config`; `ipamd` alone → None."""
    if len(parts) < 2 or parts[0] != PACKAGE:
        return None
    return parts[1]


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import of an ipamd module in one file (any depth of the syntax tree)."""
    module = _module_of(path, root)
    is_package = path.name == "__init__.py"
    source = room_of(module) or PACKAGE
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def add(node: ast.stmt, dotted: list[str]) -> None:
        target = room_of(dotted)
        if target is not None and target != source:
            found.append(Import(path, node.lineno, source, target, ".".join(dotted)))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # relative: climb from the importing module's package
                base = module if is_package else module[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = base + (node.module.split(".") if node.module else [])
            else:
                prefix = (node.module or "").split(".")
            if prefix == [PACKAGE]:
                # `from ipamd import config, cli`: each name that is a module is its own room;
                # other names (`__version__`) come from the package's __init__, no room
                for alias in node.names:
                    if (root / f"{alias.name}.py").exists() or (root / alias.name).is_dir():
                        add(node, [PACKAGE, alias.name])
            else:
                add(node, prefix)
    return found


def third_party_of(path: Path, root: Path) -> list[Import]:
    """Every import of a package outside ipamd and the standard library in one file."""
    source = room_of(_module_of(path, root)) or PACKAGE
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in (PACKAGE, "__future__") and top not in sys.stdlib_module_names:
                found.append(Import(path, node.lineno, source, top, name))
    return found


def _third_party_violations(root: Path) -> list[Violation]:
    out: list[Violation] = []
    for path in sorted(root.rglob("*.py")):
        source = room_of(_module_of(path, root))
        allowed = EXTERNAL.get(source or "")
        if allowed is None:
            continue
        for imp in third_party_of(path, root):
            if imp.target not in allowed:
                only = ", ".join(sorted(allowed))
                out.append(Violation(imp, f"{imp.source} may import only the standard library "
                                          f"and {only}"))
    return out


def collect(root: Path) -> list[Import]:
    found: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        found.extend(imports_of(path, root))
    return found


def check(root: Path) -> list[Violation]:
    """All broken rules under one package directory (src/ipamd or a synthetic tree)."""
    imports = collect(root)
    out: list[Violation] = []
    for imp in imports:
        allowed = ALLOWED.get(imp.source)
        if allowed is not None and imp.target not in allowed:
            only = ", ".join(sorted(allowed)) or "no other room"
            out.append(Violation(imp, f"{imp.source} may import only {only}"))
            continue
        if imp.target in FORBIDDEN.get(imp.source, ()):
            out.append(Violation(imp, f"{imp.source} must not import {imp.target}"))
            continue
        importers = ONLY_FROM.get(imp.target)
        if importers is not None and imp.source not in importers:
            who = ", ".join(sorted(importers))
            out.append(Violation(imp, f"only {who} may import {imp.target}"))
    edges: dict[tuple[str, str], Import] = {}
    for imp in imports:
        edges.setdefault((imp.source, imp.target), imp)
    for (a, b), imp in sorted(edges.items()):
        back = edges.get((b, a))
        if back is not None and a < b:
            out.append(Violation(imp, f"two-way pair: {b} imports {a} too ({back.name})"))
            out.append(Violation(back, f"two-way pair: {a} imports {b} too ({imp.name})"))
    return out + _third_party_violations(root)


def graph(root: Path) -> dict[str, set[str]]:
    """Room → rooms it imports (for docs and for eyeballing the house)."""
    out: dict[str, set[str]] = {}
    for imp in collect(root):
        out.setdefault(imp.source, set()).add(imp.target)
    return out


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parents[2] / "src" / PACKAGE
    root = Path(argv[1]) if len(argv) > 1 else default
    if "--graph" in argv:
        root = default if argv[1] == "--graph" else root
        for room, targets in sorted(graph(root).items()):
            print(f"{room:10} -> {', '.join(sorted(targets))}")
        return 0
    violations = check(root)
    for violation in violations:
        print(violation)
    if violations:
        print(f"import contract: {len(violations)} broken rule(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
