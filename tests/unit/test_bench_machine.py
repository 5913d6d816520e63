"""The benches' steal meter (bench/machine.py): the host's share of this VM's CPU time."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from machine import StealMeter


def _stat(path: Path, user: int, idle: int, steal: int) -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice, then a per-CPU line
    path.write_text(f"cpu  {user} 0 10 {idle} 0 0 0 {steal} 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")


def test_steal_is_its_share_of_all_cpu_time_between_start_and_now(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _stat(stat, user=100, idle=800, steal=90)
    meter = StealMeter(stat).start()
    # 300 jiffies pass: 150 user, 120 idle, 30 steal
    _stat(stat, user=250, idle=920, steal=120)
    assert meter.percent() == 10.0


def test_no_figure_without_steal_or_without_time_passing(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _stat(stat, user=100, idle=800, steal=90)
    meter = StealMeter(stat).start()
    assert meter.percent() is None  # nothing passed
    stat.write_text("cpu  100 0 10 800\n")  # an old kernel: no steal column
    assert meter.percent() is None
    assert StealMeter(tmp_path / "missing").start().percent() is None
