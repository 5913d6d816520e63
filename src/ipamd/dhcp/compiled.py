"""The DHCP hot paths compiled to C by mypyc, used only when built from these sources.

A DORA's packet work (parse, the stages, the engine, the reply) is typed Python. mypyc (mypy's
compiler) turns the modules in ``HOT_PATH`` — the same source, unchanged — into C extension
modules: that work went from ~55 to ~27 µs of CPU per DORA (``bench/bench_dhcp_engine.py``).

DHCPv6's (``ipamd.dhcp6``: parse, relay chain, validation, decision) is built with them, in
the same group. ``make`` builds them (``python -m ipamd.dhcp.compiled``, after any change to a
source) into ``build/mypyc/`` beside ``src/``, with a stamp: the SHA-256 of every source
compiled and the interpreter's ABI tag. ``activate``, run by each package's ``__init__``, puts
that directory first on the package's ``__path__`` only when the stamp matches the sources
exactly. A source edited since the build, another interpreter, or no build at all: the
pure-Python modules run, the same code, only slower (``STATUS`` says why; the server logs it
at start). ``IPAMD_PURE_PYTHON=1`` asks for the pure-Python modules.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import sysconfig
from pathlib import Path

# The modules a DORA runs through, compiled together (calls between them are then C calls).
# The server, the committer and the lease store stay Python: they await (trio, asyncpg);
# the server's synchronous per-packet part is ``dispatch``.
# DHCPv6's server, sockets, plan_loader and counters stay Python for the same reasons.
# One list, by room (a package under ipamd/): the build, the stamp and activate follow it.
HOT_PATH: dict[str, tuple[str, ...]] = {
    "dhcp": (
        "accept", "classify", "codec", "context", "destination", "dispatch", "engine",
        "freepool", "identity", "leasecache", "message", "options", "outgoing", "packing",
        "plan", "relay_agent", "relays", "reply", "scopes", "shared", "subnet_select",
    ),
    "dhcp6": (
        "assign", "bindings", "classify", "codec", "decision", "dispatch", "duid", "engine",
        "option_classes", "option_common", "option_decoders", "option_framing", "options",
        "plan", "protocol", "relay", "validate",
    ),
}
MODULES = tuple(f"{room}/{name}" for room, names in HOT_PATH.items() for name in names)
GROUP = "ipamd_dhcp_hot"  # mypyc's shared library for the group: <GROUP>__mypyc.<abi>.so
STAMP = "stamp.json"
PURE_ENV = "IPAMD_PURE_PYTHON"

_HERE = Path(__file__).resolve().parent
_ROOMS = _HERE.parent  # src/ipamd: the stamp names a module by its path from here
BUILD_DIR = _HERE.parents[2] / "build" / "mypyc"

STATUS = "pure Python: not activated"


def _abi() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def source_hashes(source_dir: Path = _ROOMS) -> dict[str, str]:
    return {name: hashlib.sha256((source_dir / f"{name}.py").read_bytes()).hexdigest()
            for name in MODULES}


def check(build_dir: Path = BUILD_DIR, source_dir: Path = _ROOMS) -> str | None:
    """None when ``build_dir`` holds the compiled form of the sources in ``source_dir`` for
    this interpreter; otherwise why not."""
    try:
        stamp = json.loads((build_dir / STAMP).read_text())
    except FileNotFoundError:
        return f"not built ({build_dir} has no {STAMP}: `make` builds it)"
    except (OSError, ValueError) as error:
        return f"unreadable {STAMP}: {error}"
    if not isinstance(stamp, dict):
        return f"unreadable {STAMP}: not an object"
    if stamp.get("abi") != _abi():
        return f"built for another interpreter ({stamp.get('abi')})"
    built = stamp.get("sources")
    if not isinstance(built, dict) or set(built) != set(MODULES):
        # A module left out since would still shadow its source from the build directory.
        return "built for another set of modules"
    changed = sorted(name for name, digest in source_hashes(source_dir).items()
                     if built.get(name) != digest)
    if changed:
        return "stale: " + ", ".join(f"{name}.py" for name in changed) + " changed since the build"
    return None


def activate(package_path: list[str], build_dir: Path = BUILD_DIR, room: str = "dhcp") -> bool:
    """Make the compiled modules of ``room`` the ones imported, when they match the sources
    (see above)."""
    global STATUS
    if os.environ.get(PURE_ENV):
        STATUS = f"pure Python: {PURE_ENV} is set"
        return False
    reason = check(build_dir)
    if reason is not None:
        STATUS = f"pure Python: compiled hot path {reason}"
        return False
    # The group's shared library (a top-level module the modules import by name), loaded
    # from this very file first: one that does not load leaves the package as it was.
    try:
        _load_library(build_dir)
    except (ImportError, OSError) as error:
        STATUS = f"pure Python: compiled hot path does not load ({error})"
        return False
    compiled = str(build_dir / "ipamd" / room)
    if compiled not in package_path:
        package_path.insert(0, compiled)
    STATUS = f"compiled hot path (mypyc) from {build_dir}"
    return True


def _load_library(build_dir: Path) -> None:
    """The group's shared library, once for both rooms (the second ``activate`` finds it)."""
    name = f"{GROUP}__mypyc"
    path = build_dir / f"{name}{_abi()}"
    if getattr(sys.modules.get(name), "__file__", None) == str(path):
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("no loader")
    library = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(library)
    sys.modules.setdefault(name, library)


def build(build_dir: Path = BUILD_DIR) -> None:
    """Compile HOT_PATH into ``build_dir`` and write its stamp (needs mypy and a C compiler).

    No debug information (-g0) and relative paths: two builds of one tree give the same files.
    Run it in a process of its own (``main``, as make does): mypy retunes the garbage collector
    of the process it runs in, and the build changes directory while it compiles.
    """
    import shutil
    import tempfile

    from mypyc.build import mypycify  # build time only: mypy is in requirements-build.lock
    from setuptools import Distribution

    src = _HERE.parents[1]
    hashes = source_hashes()  # before compiling: a source saved meanwhile makes it stale
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / STAMP).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="ipamd-mypyc-") as temp:
        previous = os.getcwd()
        os.chdir(src)  # mypyc names modules by their path from here
        try:
            modules = mypycify(
                ["--follow-imports=silent", "--ignore-missing-imports",
                 *(f"ipamd/{name}.py" for name in MODULES)],
                opt_level="3", debug_level="0", group_name=GROUP,
                target_dir=str(Path(temp) / "c"),
            )
            dist = Distribution({"name": GROUP, "ext_modules": modules})
            command = dist.get_command_obj("build_ext")
            command.build_lib = str(Path(temp) / "lib")
            command.build_temp = str(Path(temp) / "obj")
            dist.run_command("build_ext")
        finally:
            os.chdir(previous)
        for old in build_dir.rglob(f"*{_abi()}"):
            old.unlink()
        shutil.copytree(Path(temp) / "lib", build_dir, dirs_exist_ok=True)
    (build_dir / STAMP).write_text(json.dumps({"abi": _abi(), "sources": hashes}, indent=1,
                                              sort_keys=True) + "\n")


def main() -> int:
    """``make``'s entry (after any change in ipamd/dhcp or dhcp6): builds unless up to date."""
    if check() is None:
        (BUILD_DIR / STAMP).touch()  # newer than the sources make compared it with
        print(f"compiled hot path up to date in {BUILD_DIR}")
        return 0
    build()
    problem = check()
    if problem:
        print(f"compiled hot path: {problem}", file=sys.stderr)
        return 1
    print(f"compiled {len(MODULES)} modules into {BUILD_DIR}")
    return 0
