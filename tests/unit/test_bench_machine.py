"""The benches' machine meter (bench/machine.py): the host's steal share of this VM's CPU
time, and the share its cores sat idle."""

from __future__ import annotations

from pathlib import Path

from bench.machine import MachineMeter


def _stat(path: Path, user: int, idle: int, steal: int) -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice, then a per-CPU line
    path.write_text(f"cpu  {user} 0 10 {idle} 0 0 0 {steal} 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")


def test_steal_is_its_share_of_all_cpu_time_between_start_and_now(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _stat(stat, user=100, idle=800, steal=90)
    meter = MachineMeter(stat).start()
    # 300 jiffies pass: 150 user, 120 idle, 30 steal
    _stat(stat, user=250, idle=920, steal=120)
    assert meter.steal_percent() == 10.0


def test_no_figure_without_steal_or_without_time_passing(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _stat(stat, user=100, idle=800, steal=90)
    meter = MachineMeter(stat).start()
    assert meter.steal_percent() is None  # nothing passed
    stat.write_text("cpu  100 0 10 800\n")  # an old kernel: no steal column
    assert meter.steal_percent() is None
    assert MachineMeter(tmp_path / "missing").start().steal_percent() is None


def test_idle_is_its_share_of_all_cpu_time_and_stop_ends_the_span(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _stat(stat, user=100, idle=800, steal=90)
    meter = MachineMeter(stat).start()
    # 400 jiffies pass: 200 user, 100 idle, 100 steal; then the span ends
    _stat(stat, user=300, idle=900, steal=190)
    meter.stop()
    assert meter.idle_percent() == 25.0
    assert meter.steal_percent() == 25.0
    _stat(stat, user=1300, idle=900, steal=190)  # after stop(): not counted
    assert meter.idle_percent() == 25.0
    assert meter.start().idle_percent() is None  # a new span: nothing passed yet


def test_wake_cost_measures_both_placements_and_restores_the_affinity() -> None:
    import os

    from bench.machine import wake_cost

    before = os.sched_getaffinity(0)
    cost = wake_cost(count=200)
    assert os.sched_getaffinity(0) == before
    assert cost.same_rtt_us > 0 and cost.same_cpu_us > 0
    if len(before) > 1:
        assert cost.cross_rtt_us is not None and cost.cross_rtt_us > 0
        assert cost.cross_cpu_us is not None and cost.cross_cpu_us > 0
        assert "two cores" in cost.line()
    else:
        assert cost.cross_rtt_us is None and "two cores" not in cost.line()
