"""Keyset paging: {items, next_cursor}; the cursor is opaque (base64url of the last sort key)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from ipamd.api import untrusted
from ipamd.api.errors import bad_request
from ipamd.api.instant import in_range
from ipamd.api.router import Query
from ipamd.config import LimitsConfig
from ipamd.core import jsonutil


class PageQuery(Query):
    limit: int | None = Field(
        default=None, ge=1, description="page size; default 50, at most 1000 (limits.page_max)"
    )
    cursor: str | None = Field(default=None, description="next_cursor of the previous page")


class TenantPageQuery(PageQuery):
    """A page of a list that filters by tenant (every object has one: core/tenancy.py)."""

    tenant_id: uuid.UUID | None = Field(default=None, description="only this tenant's")


def _text(value: Any) -> str:
    if not isinstance(value, str) or untrusted.unstorable(value) is not None:
        raise ValueError("not a storable string")
    return value


def _int(value: Any) -> int:
    # 1e30 is a float and True is an int to Python: a sort key is neither.
    if type(value) is not int or not untrusted.INT_MIN <= value <= untrusted.INT_MAX:
        raise ValueError("not a 64-bit integer")
    return value


def _time(value: Any) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(_text(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError("no offset")
    return in_range(parsed)


# Values are type-checked AND range-checked: a forged cursor must not reach SQL as a value
# Postgres (or asyncpg's encoder) cannot take.
_PARSERS: dict[type, Callable[[Any], Any]] = {
    uuid.UUID: lambda v: uuid.UUID(_text(v)),
    dt.datetime: _time,
    int: _int,
    str: _text,
    ipaddress.IPv4Address: lambda v: ipaddress.IPv4Address(_text(v)),
}


def encode_cursor(values: Sequence[Any]) -> str:
    if len(values) == 1 and isinstance(values[0], uuid.UUID):
        raw = f'["{values[0]}"]'.encode()  # jsonutil.dumps([a UUID]), without its encoder
    else:
        raw = jsonutil.dumps(list(values)).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, types: Sequence[type]) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = untrusted.parse_json(raw)  # a Refused is a ValueError
        if not isinstance(values, list) or len(values) != len(types):
            raise ValueError("shape")
        return [_PARSERS[kind](value) for kind, value in zip(types, values, strict=True)]
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise bad_request("invalid cursor (take it from next_cursor)") from None


def limit_of(query: PageQuery, limits: LimitsConfig) -> int:
    if query.limit is None:
        return limits.page_default
    if not 1 <= query.limit <= limits.page_max:
        raise bad_request(f"limit must be between 1 and {limits.page_max}")
    return query.limit


def after(query: PageQuery, types: Sequence[type]) -> list[Any] | None:
    return None if query.cursor is None else decode_cursor(query.cursor, types)


def page(
    rows: Sequence[Any], limit: int, key: Callable[[Any], Sequence[Any]],
    render: Callable[[Any], Any] = lambda r: r,
) -> dict[str, Any]:
    """Rows were fetched with LIMIT limit+1: the extra row says whether there is more."""
    more = len(rows) > limit
    shown = rows[:limit]
    return {
        "items": [render(row) for row in shown],
        "next_cursor": encode_cursor(key(shown[-1])) if more and shown else None,
    }


def page_text(rows: Sequence[tuple[Any, str]], limit: int) -> str:
    """``page`` for rows already rendered as JSON text, keyed by their first value: the
    page's JSON, with the items spliced in as they are."""
    more = len(rows) > limit
    shown = rows[:limit]
    cursor = encode_cursor([shown[-1][0]]) if more and shown else None
    items = ",".join([text for _key, text in shown])
    # A cursor is base64url: its JSON string is itself in quotes.
    tail = "null" if cursor is None else f'"{cursor}"'
    return f'{{"items":[{items}],"next_cursor":{tail}}}'
