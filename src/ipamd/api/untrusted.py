"""The one reader of untrusted JSON and the one rule for text Postgres cannot store.

Every request body (router.parse_body) and every paging cursor (paging.decode_cursor) is
read by ``parse_json``: size is bounded before it (MAX_CONTENT_LENGTH), and here nesting is
measured by a flat scan *before* the recursive parser runs, integer literals are bounded
before ``int()`` sees them, and NaN/Infinity are refused — so no input reaches a
RecursionError, Python's integer digit limit, or an out-of-range value in Postgres.

``unstorable`` finds the first string (value or key) holding NUL or a lone surrogate: Postgres
text and jsonb cannot hold NUL, and UTF-8 cannot encode a lone surrogate. The Body and Query
base models run it on everything they validate (router.py).
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
# Integer literals must fit a Postgres bigint: no column, counter or cursor needs more.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
_INT_DIGITS = len(str(INT_MAX))

# A JSON string, or an unterminated one up to the end. It matches at every '"' and never
# backtracks (possessive), so removing strings is one linear pass whatever the input
# (a pattern that can fail at a '"' is rescanned from every later '"': quadratic).
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class Refused(ValueError):
    """Refused untrusted JSON: ``status`` is 400 (not JSON) or 422 (a value out of range)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def depth(text: str) -> int:
    """The deepest nesting of arrays/objects, by a flat scan (never recursion).

    With few brackets the bracket count is returned instead: a bound that is enough to
    know the limit is not crossed, without the scan.
    """
    opened = text.count("[") + text.count("{")
    if opened <= MAX_DEPTH:
        return opened
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(1 if c in "[{" else -1 for c in brackets), default=0)


def _int(literal: str) -> int:
    if len(literal.lstrip("-")) > _INT_DIGITS:
        raise Refused(422, f"integer {literal[:24]}... is out of range (64-bit at most)")
    value = int(literal)
    if not INT_MIN <= value <= INT_MAX:
        raise Refused(422, f"integer {literal} is out of range (64-bit at most)")
    return value


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise Refused(422, f"number {literal[:24]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise Refused(400, f"{name} is not JSON")


def parse_json(data: bytes | str) -> Any:
    """Decoded JSON, or ``Refused``: invalid UTF-8, bad syntax, too deep, numbers out of range."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Refused(400, f"not valid UTF-8 (byte {error.start})") from None
    else:
        text = data
    if depth(text) > MAX_DEPTH:
        raise Refused(400, f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_constant
        )
    except json.JSONDecodeError as error:
        raise Refused(400, f"not valid JSON: {error}") from None


def unstorable(value: Any, path: str = "") -> str | None:
    """The path (``name``, ``items[2].label``) of the first string Postgres cannot store."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            return path or "value"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _UNSTORABLE.search(key):
                return f"{path}.{key!r}" if path else repr(key)
            found = unstorable(item, where)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = unstorable(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None
