"""`ipamd-import`: plan, then apply, a Kea or ISC dhcpd configuration (docs/migrating.md).

    ipamd-import plan FILE [--json OUT] [--format auto|kea|isc] [--resolve]
    ipamd-import apply FILE --url URL [--token-file F] [--ca-file F] [--format ...] [--resolve]

`plan` writes nothing anywhere but OUT. `apply` speaks only the HTTP API, with a token from
`--token-file` or `IPAMD_TOKEN` (never printed). Exit codes (docs/migrating.md):
0 done, everything planned exists; 1 done with conflicts, invalid or skipped objects;
2 usage; 3 the file cannot be read; 4 stopped at the license cap; 5 stopped otherwise
(credentials, the API unreachable or failing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import stat
import sys
from collections.abc import Sequence
from typing import TextIO

from ipamd.importer import apply as applying
from ipamd.importer import isc, kea
from ipamd.importer.model import Plan, ReadError, Resolver, render_text, to_json

EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, EXIT_UNREADABLE, EXIT_LICENSE, EXIT_STOPPED = range(6)
TOKEN_ENV = "IPAMD_TOKEN"  # noqa: S105 - the variable's name, not a secret
_KEA_START = re.compile(r'\A(?:\s+|//[^\n]*|#[^\n]*|/\*.*?\*/)*(?:\{|<\?include)', re.DOTALL)


class UsageError(Exception):
    """A command line that cannot run (no token, an unreadable token or output file)."""


def system_resolver(name: str, family: int) -> list[str]:
    """The host's resolver, as dhcpd resolves names at start (only with --resolve)."""
    kind = socket.AF_INET if family == 4 else socket.AF_INET6
    try:
        found = socket.getaddrinfo(name, None, kind, socket.SOCK_DGRAM)
    except socket.gaierror as error:
        raise LookupError(error.strerror) from None
    return sorted({str(item[4][0]) for item in found})


def detect(path: str) -> str:
    """`kea` when the file starts (after comments) with `{` or an include, else `isc`."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "kea"  # the reader refuses it by name, before opening it
        with open(path, "rb") as handle:
            head = handle.read(65536).decode("utf-8", errors="replace")
    except OSError as error:
        raise ReadError(path, 1, f"cannot be read ({error.strerror or error})") from None
    return "kea" if _KEA_START.match(head) else "isc"


def read_plan(path: str, fmt: str = "auto", resolver: Resolver | None = None) -> Plan:
    """The plan of a file; `ReadError` when it cannot be read."""
    chosen = detect(path) if fmt == "auto" else fmt
    reader = kea.read if chosen == "kea" else isc.read
    try:
        return reader(path, resolver)
    except RecursionError:
        raise ReadError(path, 1, "nested too deeply to read") from None


def read_token(token_file: str | None) -> str:
    if token_file:
        try:
            with open(token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as error:
            raise UsageError(f"the token file {token_file} cannot be read "
                             f"({error.strerror or error})") from None
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise UsageError(f"no token: give --token-file or set {TOKEN_ENV}")
    return token


def apply_file(path: str, url: str, token: str, *, fmt: str = "auto",
               resolver: Resolver | None = None, ca_file: str | None = None,
               out: TextIO | None = None) -> tuple[int, applying.Report]:
    """Read and apply a file; returns the exit code and the report (tests call this)."""
    stream = out or sys.stdout
    plan = read_plan(path, fmt, resolver)
    progress = _Progress(stream)
    with applying.client(url, token, ca_file) as api:
        report = applying.Applier(api, progress).apply(plan)
    progress.done()
    for entry in report.entries:
        if entry.outcome in ("conflict", "invalid", "skipped"):
            stream.write(f"{entry.outcome}: {entry.key} [{entry.source}]: {entry.detail}\n")
    stream.write(f"refused in the plan: {len(plan.refused)} (ipamd-import plan lists them)\n")
    stream.write(report.summary(len(plan.objects)) + "\n")
    return _exit_code(report), report


def _exit_code(report: applying.Report) -> int:
    if report.stopped:
        return EXIT_LICENSE if report.stopped.startswith("the license cap") else EXIT_STOPPED
    bad = sum(report.count(name) for name in ("conflict", "invalid", "skipped"))
    return EXIT_PARTIAL if bad else EXIT_OK


class _Progress:
    """A bar on a terminal; plain lines otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()

    def __call__(self, number: int, total: int, entry: applying.Entry) -> None:
        if self.tty:
            filled = number * 30 // max(total, 1)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {number}/{total} "
                              f"{entry.outcome:<8} {entry.key[:60]:<60}")
            self.stream.flush()
        else:
            detail = f" ({entry.detail})" if entry.detail and entry.outcome == "exists" else ""
            self.stream.write(f"{number}/{total} {entry.outcome} {entry.key}{detail}\n")

    def done(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="ipamd-import", description="Map a Kea or ISC dhcpd "
                                  "configuration onto the ipamd API: plan first, then apply.")
    commands = top.add_subparsers(dest="command", required=True)
    for name, text in (("plan", "print what would be created and what is refused; writes "
                        "nothing"), ("apply", "create the plan through the API")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("file")
        sub.add_argument("--format", choices=("auto", "kea", "isc"), default="auto")
        sub.add_argument("--resolve", action="store_true", help="look up DNS names written "
                         "where an address belongs (as dhcpd does at start); else refused")
        if name == "plan":
            sub.add_argument("--json", metavar="OUT", help="also write the plan as JSON")
        else:
            sub.add_argument("--url", required=True, help="the appliance, e.g. https://ipam")
            sub.add_argument("--token-file", help=f"a file holding the token (else ${TOKEN_ENV})")
            sub.add_argument("--ca-file", help="the CA or certificate to trust for --url")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    resolver = system_resolver if args.resolve else None
    try:
        if args.command == "plan":
            plan = read_plan(args.file, args.format, resolver)
            sys.stdout.write(render_text(plan))
            if args.json:
                _write_json(args.json, plan)
            return EXIT_OK
        token = read_token(args.token_file)
        code, _ = apply_file(args.file, args.url, token, fmt=args.format, resolver=resolver,
                             ca_file=args.ca_file)
        return code
    except ReadError as error:
        sys.stderr.write(f"ipamd-import: {error}\n")
        return EXIT_UNREADABLE
    except UsageError as error:
        sys.stderr.write(f"ipamd-import: {error}\n")
        return EXIT_USAGE


def _write_json(path: str, plan: Plan) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(to_json(plan), handle, indent=2)
            handle.write("\n")
    except OSError as error:
        raise UsageError(f"{path} cannot be written ({error.strerror or error})") from None


if __name__ == "__main__":
    sys.exit(main())
