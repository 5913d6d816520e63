"""JSON encoding for values that come out of Postgres (UUIDs, times, addresses)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import uuid
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

_IP_TYPES = (
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
)


def timestamp(value: dt.datetime) -> str:
    """RFC 3339 in UTC with a Z, microseconds kept."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def default(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime):
        return timestamp(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, _IP_TYPES):
        return str(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> str:
    return json.dumps(value, default=default, separators=(",", ":"), ensure_ascii=False)


def canonical(value: Any) -> bytes:
    """Stable bytes for hashing (sorted keys)."""
    return json.dumps(value, default=default, sort_keys=True, separators=(",", ":")).encode()


def plain(value: Any) -> Any:
    """Round-trip through JSON: a value made only of JSON types."""
    return json.loads(dumps(value))
