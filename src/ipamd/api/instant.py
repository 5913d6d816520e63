"""A point in time as the API accepts it: RFC 3339 with an offset (or Z), nothing looser."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import BeforeValidator


def in_range(value: dt.datetime) -> dt.datetime:
    """The time in UTC, or ValueError when UTC cannot hold it (years 1 to 9999).

    asyncpg converts every aware time to UTC on the way to Postgres: 9999-12-31T23:59:59-14:00
    is in year 10000 there, and 0001-01-01T00:00:00+14:00 in year 0 — both beyond Python's
    datetime, so they must be refused here, where the time is decoded, not fail in a driver.
    """
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(
            "out of range (must fall between 0001-01-01 and 9999-12-31 in UTC)"
        ) from None


def parse_rfc3339(value: object) -> dt.datetime:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError("must carry a time zone offset (or Z)")
        return in_range(value)
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 time such as 2026-11-21T14:00:00Z")
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("must be an RFC 3339 time such as 2026-11-21T14:00:00Z") from None
    if parsed.tzinfo is None:
        raise ValueError("must carry a time zone offset (or Z)")
    return in_range(parsed)


# Numbers (Unix times), dates and naive times are refused with a message that says why.
Instant = Annotated[dt.datetime, BeforeValidator(parse_rfc3339)]
