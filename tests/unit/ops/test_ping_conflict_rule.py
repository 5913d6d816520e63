"""The ping_conflict alert rule (docs/operations-monitoring.md): the nodes' ping check
conflicts per subnet, counted as they rise, judged over a window; it clears at none."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ipamd.ops import alerts

SUBNET = "0192f000-0000-7000-8000-000000000001"
SEEN = dt.datetime(2026, 12, 7, 20, 0, tzinfo=dt.UTC)


def _node(conflicts: int, name: str = "a") -> dict[str, Any]:
    return {"name": name, "status": "up", "last_seen_at": SEEN,
            "dhcp": {"drops": {}, "ping_conflicts_by_subnet": {SUBNET: conflicts}}}


def _judge(memory: alerts.Memory, rows: list[dict[str, Any]], now: float,
           **rules: float) -> alerts.Check | None:
    merged = alerts.check_rules(rules)
    alerts._node_checks(rows, merged, memory, now)
    found = [c for c in alerts._conflict_checks(merged, memory, {SUBNET: "10.77.1.0/24"}, now)
             if c.subject == SUBNET]
    return found[0] if found else None


def test_a_recurring_conflict_opens_and_clears_after_the_window() -> None:
    memory = alerts.Memory()
    # A node seen for the first time brings its counts from before: not a rise.
    assert _judge(memory, [_node(5)], 0.0) is None
    one = _judge(memory, [_node(6)], 60.0)
    assert one is not None and one.rule == "ping_conflict" and one.value == 1.0
    assert one.value < one.threshold  # once is not yet recurring (default 2)
    two = _judge(memory, [_node(7)], 120.0)
    assert two is not None and two.value >= two.threshold
    assert "10.77.1.0/24" in two.summary and two.clear_below == 1.0
    # No new conflict: still open within the window, then it clears and is forgotten.
    assert _judge(memory, [_node(7)], 3000.0).value == 2.0  # type: ignore[union-attr]
    gone = _judge(memory, [_node(7)], 3721.0)
    assert gone is not None and gone.value == 0.0 < gone.clear_below
    assert _judge(memory, [_node(7)], 3722.0) is None


def test_rises_of_several_nodes_add_up_and_a_restart_counts_from_zero() -> None:
    memory = alerts.Memory()
    _judge(memory, [_node(3, "a"), _node(0, "b")], 0.0)
    both = _judge(memory, [_node(4, "a"), _node(1, "b")], 60.0)
    assert both is not None and both.value == 2.0
    restarted = _judge(memory, [_node(1, "a"), _node(1, "b")], 120.0)  # a's counters reset
    assert restarted is not None and restarted.value == 3.0


def test_the_thresholds_are_rules_an_admin_may_change() -> None:
    assert alerts.DEFAULTS["ping_conflicts"] == 2.0
    assert alerts.check_rules({"ping_conflicts": 1})["ping_conflicts"] == 1.0
    memory = alerts.Memory()
    _judge(memory, [_node(0)], 0.0)
    once = _judge(memory, [_node(1)], 10.0, ping_conflicts=1, ping_conflict_window_seconds=60)
    assert once is not None and once.value >= once.threshold
    assert _judge(memory, [_node(1)], 71.0, ping_conflict_window_seconds=60).value == 0.0  # type: ignore[union-attr]
