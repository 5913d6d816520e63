"""A point in time as the API accepts it: RFC 3339 with an offset (or Z), nothing looser."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import BeforeValidator


def parse_rfc3339(value: object) -> dt.datetime:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError("must carry a time zone offset (or Z)")
        return value
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 time such as 2026-11-21T14:00:00Z")
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("must be an RFC 3339 time such as 2026-11-21T14:00:00Z") from None
    if parsed.tzinfo is None:
        raise ValueError("must carry a time zone offset (or Z)")
    return parsed


# Numbers (Unix times), dates and naive times are refused with a message that says why.
Instant = Annotated[dt.datetime, BeforeValidator(parse_rfc3339)]
