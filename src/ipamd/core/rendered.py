"""Rows' JSON text kept by row version, so a list page renders only rows that changed.

A page of 50 prefixes cost Postgres ~200 µs to render as JSON text in the query (to_char,
uuid and cidr output, concatenation), more than everything else the database did for the
request (on the 2-core VM). A row's version is its ``xmin``: the transaction that wrote this version
of the row, whoever wrote it (any node, a restore, hand-made SQL). A page query asks only
for (id, xmin); the rows whose version is not held here are read in full and rendered by the
same code as a single GET, and kept.

One per process (``AppState.rendered``), bounded in rows. An entry also ages out after
MAX_AGE_SECONDS: a transaction id comes round again only after ~4 billion transactions, so a
row could otherwise, in theory, meet an old rendering under its new version.

A whole page is kept too (``page``/``keep_page``): a page query that gives the very rows
(ids and versions, in order) it gave before gets the page made from them then, without a
look-up per row; it ages out with its oldest rendering.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

MAX_ROWS = 20_000
MAX_PAGES = 512  # pages kept (each a query's key): past it they start again from none
MAX_AGE_SECONDS = 3600.0


class RenderedRows:
    def __init__(self, max_rows: int = MAX_ROWS, max_age: float = MAX_AGE_SECONDS,
                 clock: Callable[[], float] = time.monotonic,
                 max_pages: int = MAX_PAGES) -> None:
        self._max_rows = max_rows
        self._max_pages = max_pages
        self._max_age = max_age
        self._clock = clock
        # (kind, id) -> (version, rendered at, text); insertion order is age order.
        self._rows: dict[tuple[str, Hashable], tuple[int, float, str]] = {}
        # a page query's key -> (its rows, when its oldest rendering was made, the page)
        self._pages: dict[Hashable, tuple[Sequence[Any], float, Any]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, kind: str, row_id: Hashable, version: int) -> str | None:
        """The text rendered for exactly this version of the row, or None."""
        return self.get_many(kind, [(row_id, version)])[0]

    def get_many(self, kind: str, rows: Iterable[Iterable[Any]]) -> list[str | None]:
        """``get`` for each (id, version) of a page (a database row will do), in order; the
        clock is read once."""
        oldest = self._clock() - self._max_age
        held = self._rows.get
        texts: list[str | None] = []
        for row_id, version in rows:
            entry = held((kind, row_id))
            if entry is not None and entry[0] == version and entry[1] >= oldest:
                texts.append(entry[2])
            else:
                texts.append(None)
        return texts

    def put(self, kind: str, row_id: Hashable, version: int, text: str) -> None:
        key = (kind, row_id)
        self._rows.pop(key, None)  # re-inserted: now the youngest
        if len(self._rows) >= self._max_rows:
            # Drop the oldest quarter at once rather than one entry per put.
            for old in list(self._rows)[: max(1, self._max_rows // 4)]:
                del self._rows[old]
        self._rows[key] = (version, self._clock(), text)

    def page(self, key: Hashable, rows: Sequence[Any]) -> Any:
        """What ``keep_page`` kept under ``key`` when the query gave these very rows ((id,
        version) each, in order; database rows compare by value), else None."""
        entry = self._pages.get(key)
        if entry is None or entry[0] != rows or entry[1] < self._clock() - self._max_age:
            return None
        return entry[2]

    def keep_page(self, kind: str, key: Hashable, rows: Sequence[Any], page: Any) -> None:
        """Keep ``page``, made from the renderings held for ``rows`` (each one held: a page
        with a row rendered meanwhile is kept the next time it is asked for)."""
        born = []
        for row_id, version in rows:
            entry = self._rows.get((kind, row_id))
            if entry is None or entry[0] != version:
                return
            born.append(entry[1])
        if len(self._pages) >= self._max_pages:
            self._pages.clear()
        self._pages[key] = (rows, min(born, default=self._clock()), page)
