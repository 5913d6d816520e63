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


def test_a_page_is_served_only_for_the_very_rows_it_was_made_from() -> None:
    clock = Clock()
    rows = RenderedRows(max_age=60, clock=clock)
    rows.put("prefix", "a", 1, "A")
    rows.put("prefix", "b", 1, "B")
    page = [("a", 1), ("b", 1)]
    assert rows.page("q", page) is None
    rows.keep_page("prefix", "q", page, ["A", "B"])
    assert rows.page("q", [("a", 1), ("b", 1)]) == ["A", "B"]
    assert rows.page("q", [("a", 1), ("b", 2)]) is None  # b written again
    assert rows.page("q", [("a", 1)]) is None  # b gone
    assert rows.page("q", [("b", 1), ("a", 1)]) is None  # another order
    assert rows.page("other query", page) is None


def test_a_page_ages_out_with_its_oldest_rendering() -> None:
    clock = Clock()
    rows = RenderedRows(max_age=60, clock=clock)
    rows.put("prefix", "a", 1, "A")
    clock.now += 30
    rows.put("prefix", "b", 1, "B")
    rows.keep_page("prefix", "q", [("a", 1), ("b", 1)], ["A", "B"])
    clock.now += 30
    assert rows.page("q", [("a", 1), ("b", 1)]) == ["A", "B"]
    clock.now += 0.001  # "A" was rendered more than 60 s ago
    assert rows.page("q", [("a", 1), ("b", 1)]) is None


def test_a_page_is_kept_only_from_renderings_of_its_rows_versions() -> None:
    rows = RenderedRows(clock=Clock())
    rows.put("prefix", "a", 2, "A2")  # rendered meanwhile from a newer version
    rows.keep_page("prefix", "q", [("a", 1)], ["A1"])
    assert rows.page("q", [("a", 1)]) is None
    rows.keep_page("prefix", "q", [("c", 1)], ["C"])  # no rendering held at all
    assert rows.page("q", [("c", 1)]) is None


def test_pages_stay_within_their_bound() -> None:
    rows = RenderedRows(clock=Clock(), max_pages=2)
    rows.put("prefix", "a", 1, "A")
    for n in range(3):
        rows.keep_page("prefix", n, [("a", 1)], [n])
    assert rows.page(0, [("a", 1)]) is None and rows.page(1, [("a", 1)]) is None
    assert rows.page(2, [("a", 1)]) == [2]
