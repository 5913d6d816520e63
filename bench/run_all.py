"""`make bench`: run every benchmark in turn and print its figures.

Each bench is a module of the `bench` package run on its own (`python -m bench.bench_X` from
the repository root), starts its own private Postgres and whatever peer it compares against,
prints a table, and cleans up after itself. A failing bench is reported and the others still
run; the exit status says whether all succeeded.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["bench_dhcp", "bench_dhcp6", "bench_dhcp_engine", "bench_dhcp6_engine", "bench_ipam",
         "bench_api", "bench_outbox", "bench_history", "bench_dashboard", "bench_dns"]


def main(argv: list[str]) -> int:
    chosen = [name for name in ORDER if not argv or any(a in name for a in argv)]
    failed = []
    for name in chosen:
        if not (HERE / f"{name}.py").exists():
            print(f"== {name}: missing", flush=True)
            failed.append(name)
            continue
        print(f"\n== {name}", flush=True)
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=HERE.parent,
                                check=False)
        print(f"== {name}: exit {result.returncode} after {time.monotonic() - started:.0f}s",
              flush=True)
        if result.returncode != 0:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
