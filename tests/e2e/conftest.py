"""Fixtures of the end-to-end tests: a network lab that is always torn down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import netns


@pytest.fixture
def lab() -> Iterator[netns.Lab]:
    """Namespaces and links for one test; skipped (with the reason) without root or netns."""
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with netns.lab() as made:
        yield made
