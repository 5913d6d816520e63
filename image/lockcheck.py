#!/usr/bin/env python3
"""Can a packages.lock still be installed? One line naming the first pinned version the mirror
no longer has, and the command that refreshes the lock, instead of mmdebstrap's page of pins.

    python3 image/lockcheck.py [--sources FILE] [--refresh CMD] [--warn] LOCK

Debian's mirror keeps only the current version of each package (a point release or a
security update replaces the old one), so any lock of exact versions goes stale within weeks.
`make image` therefore needs no lock (image/README.md); this check is for `make image
LOCK=<a build's packages.lock>` (run before mmdebstrap) and for any lock kept elsewhere.

The versions the mirror has come from `apt-cache madison`: the machine's own apt lists (after
`apt-get update`), or with --sources a private apt state updated from that sources file (the
one the build uses). Exit 0: every pin is available; 1: stale (0 with --warn, the line then
starts with "warning:"); 2: the check cannot be made (no apt lists, an unreadable lock).
Standard library only: it runs with the build host's python3, before any venv exists.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

Available = Callable[[list[str]], dict[str, set[str]]]


class CheckError(Exception):
    """The lock cannot be checked at all (not the same as stale)."""


@dataclass(frozen=True)
class Stale:
    package: str
    version: str
    available: tuple[str, ...]  # what the mirror has instead (empty: no such package)


def parse(text: str) -> list[tuple[str, str]]:
    """The lock's (package, version) pins in file order; comments and blank lines skipped."""
    pins = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("=")
        if not sep or not name or not version:
            raise CheckError(f"line {number}: {raw!r} is not package=version")
        pins.append((name.strip(), version.strip()))
    return pins


def first_stale(pins: Iterable[tuple[str, str]],
                available: dict[str, set[str]]) -> Stale | None:
    for name, version in pins:
        have = available.get(name, set())
        if version not in have:
            return Stale(name, version, tuple(sorted(have)))
    return None


def message(lock: str, stale: Stale, refresh: str) -> str:
    instead = (f"it has {', '.join(stale.available)}" if stale.available
               else "no such package there")
    return (f"{lock} is stale: {stale.package}={stale.version} is no longer on the mirror "
            f"({instead}); refresh it: {refresh}")


def parse_madison(output: str) -> dict[str, set[str]]:
    """`apt-cache madison` lines: ` name | version | uri suite/component arch Packages`."""
    found: dict[str, set[str]] = {}
    for line in output.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) == 3 and fields[2].endswith("Packages"):
            found.setdefault(fields[0], set()).add(fields[1])
    return found


def madison(options: list[str]) -> Available:
    """Every version apt knows of each name (apt-cache with ``options``)."""
    def available(names: list[str]) -> dict[str, set[str]]:
        result = subprocess.run(  # noqa: S603 - apt's own client, fixed argv
            ["apt-cache", *options, "madison", *names],  # noqa: S607 - apt from PATH
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CheckError(f"apt-cache madison failed: {result.stderr.strip()[-300:]}")
        found = parse_madison(result.stdout)
        if not found:  # not even one of the lock's names: apt has no lists to look in
            raise CheckError("apt knows none of the lock's packages: no apt lists "
                             "(run apt-get update first)")
        return found
    return available


def private_apt(sources: Path, state: Path) -> list[str]:
    """apt options for a state of its own, updated from ``sources`` (the build's mirror)."""
    parts = state / "sources.list.d"
    for sub in (parts, state / "lists/partial", state / "cache/archives/partial"):
        sub.mkdir(parents=True, exist_ok=True)
    text = sources.read_text()
    deb822 = any(line.startswith("Types:") for line in text.splitlines())
    (parts / ("build.sources" if deb822 else "build.list")).write_text(text)
    options = ["-o", f"Dir::State::Lists={state / 'lists'}",
               "-o", f"Dir::Cache={state / 'cache'}",
               "-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={parts}"]
    result = subprocess.run(  # noqa: S603 - apt's own client, fixed argv
        ["apt-get", *options, "-qq", "update"],  # noqa: S607 - apt from PATH
        capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CheckError(f"apt-get update from {sources} failed: "
                         f"{result.stderr.strip().splitlines()[-1:]}")
    return options


def check(lock: Path, available: Available, refresh: str) -> str | None:
    """The one line saying ``lock`` is stale, or None when every pin is available."""
    try:
        pins = parse(lock.read_text())
    except OSError as error:
        raise CheckError(f"cannot read it ({error.strerror})") from None
    stale = first_stale(pins, available([name for name, _ in pins]))
    return None if stale is None else message(str(lock), stale, refresh)


def main(argv: list[str] | None = None, available: Available | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lock", type=Path)
    parser.add_argument("--sources", type=Path,
                        help="apt sources file to check against (default: this machine's lists)")
    parser.add_argument("--refresh", help="the command that refreshes the lock "
                        "(default: make image && cp build/image/packages.lock LOCK)")
    parser.add_argument("--warn", action="store_true", help="a stale lock exits 0 (a warning)")
    args = parser.parse_args(argv)
    refresh = args.refresh or f"make image && cp build/image/packages.lock {args.lock}"
    try:
        with tempfile.TemporaryDirectory(prefix="ipamd-lockcheck-") as state:
            if available is None:
                options = private_apt(args.sources, Path(state)) if args.sources else []
                available = madison(options)
            line = check(args.lock, available, refresh)
    except CheckError as error:
        print(f"lockcheck: {args.lock}: cannot check: {error}", file=sys.stderr)
        return 2
    if line is None:
        return 0
    print(f"warning: {line}" if args.warn else line, file=sys.stderr)
    return 0 if args.warn else 1


if __name__ == "__main__":
    sys.exit(main())
