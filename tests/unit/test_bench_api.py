"""bench/bench_api.py's verdict and table: a run with any non-2xx answer is invalid, said so,
and left out of the medians; the CPU columns are the workers' and PostgreSQL's apart."""

from __future__ import annotations

from typing import Any

from bench import bench_api


def _run(req_per_s: float, workers: int, non_2xx: int = 0) -> dict[str, Any]:
    return {"req_per_s": req_per_s, "p50_ms": 1.0, "p99_ms": 2.0, "cpu_us_per_request": 900,
            "workers_cpu_us_per_request": workers, "postgres_cpu_us_per_request": 130,
            "non_2xx": non_2xx, "socket_errors": 0, "valid": non_2xx == 0, "load": 1.0,
            "steal_pct": 0.0, "split": [4, 4]}


def _report(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"path": bench_api.PATH, "runs": len(runs), "duration_s": 10,
            "api": {"c8": runs}, "dhcp": {}}


def test_invalid_runs_are_named_and_left_out_of_the_medians() -> None:
    report = _report([_run(1000.0, 800), _run(5000.0, 100, non_2xx=7), _run(1200.0, 700)])
    assert bench_api.invalid_runs(report) == ["c8 run 2: 7 non-2xx, 0 socket errors"]
    assert bench_api.median_of(report["api"]["c8"], "req_per_s") == 1100.0
    text = bench_api.table(report)
    assert "INVALID: 1 run(s)" in text and "c8 run 2: 7 non-2xx" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("8 "))
    assert row.split()[1:7] == ["1100.0", "1.0", "2.0", "900.0", "750.0", "130.0"]


def test_a_valid_report_says_nothing_of_invalidity() -> None:
    report = _report([_run(1000.0, 800)])
    assert bench_api.invalid_runs(report) == []
    assert "INVALID" not in bench_api.table(report)
    assert "workers" in bench_api.table(report) and "postgres" in bench_api.table(report)


def test_a_line_marks_its_run_invalid() -> None:
    assert "INVALID: 3 non-2xx" in bench_api._line("8 client(s), run 1", _run(1.0, 1, 3))
    assert "INVALID" not in bench_api._line("8 client(s), run 1", _run(1.0, 1))
