"""core.rendered.RenderedRows: a rendering is served only for the very version it was made
from, ages out, and the cache stays within its bound."""

from __future__ import annotations

from ipamd.core.rendered import RenderedRows


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_the_same_version_is_served() -> None:
    rows = RenderedRows(clock=Clock())
    assert rows.get("prefix", "a", 7) is None
    rows.put("prefix", "a", 7, '{"v":7}')
    assert rows.get("prefix", "a", 7) == '{"v":7}'
    assert rows.get("prefix", "a", 8) is None  # the row was written again
    assert rows.get("subnet", "a", 7) is None  # another kind, same id
    rows.put("prefix", "a", 8, '{"v":8}')
    assert rows.get("prefix", "a", 8) == '{"v":8}' and rows.get("prefix", "a", 7) is None
    assert len(rows) == 1


def test_renderings_age_out() -> None:
    clock = Clock()
    rows = RenderedRows(max_age=60, clock=clock)
    rows.put("prefix", "a", 1, "x")
    clock.now += 60
    assert rows.get("prefix", "a", 1) == "x"
    clock.now += 0.001
    assert rows.get("prefix", "a", 1) is None


def test_the_bound_drops_the_oldest_first() -> None:
    rows = RenderedRows(max_rows=8, clock=Clock())
    for n in range(8):
        rows.put("prefix", n, 1, str(n))
    rows.put("prefix", 0, 2, "0 again")  # rewritten: now the youngest
    rows.put("prefix", 8, 1, "8")  # full: the oldest quarter (1 and 2) goes
    assert len(rows) == 7
    assert rows.get("prefix", 1, 1) is None and rows.get("prefix", 2, 1) is None
    assert rows.get("prefix", 0, 2) == "0 again" and rows.get("prefix", 8, 1) == "8"
    assert all(rows.get("prefix", n, 1) == str(n) for n in range(3, 8))


def test_a_page_is_looked_up_in_order_with_one_clock_reading() -> None:
    clock = Clock()
    reads = 0

    def counted() -> float:
        nonlocal reads
        reads += 1
        return clock()

    rows = RenderedRows(max_age=60, clock=counted)
    rows.put("prefix", "a", 1, "A")
    rows.put("prefix", "b", 1, "B")
    clock.now += 30
    rows.put("prefix", "c", 1, "C")
    clock.now += 31  # a and b are now too old, c is not
    reads = 0
    assert rows.get_many("prefix", [("c", 1), ("a", 1), ("x", 1), ("c", 2)]) == [
        "C", None, None, None]
    assert reads == 1
