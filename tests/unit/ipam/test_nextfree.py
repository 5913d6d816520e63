"""The walk that finds the lowest free address in a window of occupied ranges."""

from ipamd.ipam.nextfree import walk


def test_walk_finds_the_first_gap():
    assert walk([(1, 1), (2, 5), (7, 7)], 1, 100) == (6, 6)
    assert walk([], 1, 100) == (1, 1)
    assert walk([(3, 9)], 1, 100) == (1, 1)  # the cursor itself is free


def test_walk_handles_nested_and_overlapping_ranges():
    # A pool (10-50) with an exclude inside it (20-30), a lease inside both, statics below.
    assert walk([(10, 50), (20, 30), (25, 25), (1, 9)], 1, 100) == (51, 51)


def test_walk_moves_the_cursor_past_a_full_window():
    assert walk([(1, 8)], 1, 8) == (None, 9)
    # A range reaching past the window carries the cursor with it.
    assert walk([(1, 3), (4, 300)], 1, 256) == (None, 301)
    assert walk([(1, 3), (5, 8)], 1, 8) == (4, 4)
