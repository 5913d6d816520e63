"""The error envelope: {"error": {"code": "...", "message": "..."}} on every error.

Two kinds of error reach it: ``ApiError`` for what only HTTP knows (401, 403, 413, 429, ...)
and the domain errors of ``ipamd.core.errors``, which ``from_domain`` maps — the one place a
domain refusal gets its status and code.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ipamd.core.errors import (
    BadRequest,
    Conflict,
    DomainError,
    Invalid,
    LicenseLimit,
    NotFound,
)

# The domain's constructors, for routes: they raise the same errors the domain rooms do.
from ipamd.core.errors import bad_request as bad_request
from ipamd.core.errors import conflict as conflict
from ipamd.core.errors import invalid as invalid
from ipamd.core.errors import not_found as not_found

# status -> default code (docs/DEVELOPING.md, "Errors")
CODES = {
    400: "bad_request",
    401: "unauthorized",
    402: "license_limit",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    431: "headers_too_large",
    500: "internal",
    503: "unavailable",
}


# The pydantic error type raised (by router.Body/Query) for text Postgres cannot store;
# its context names the field, since the check runs on the whole model.
UNSTORABLE = "unstorable_text"


class ApiError(Exception):
    """Raised anywhere below a route; rendered in the error envelope."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or CODES.get(status, "error")
        self.message = message
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return envelope(self.code, self.message)


def envelope(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


# domain error -> HTTP status; the code follows from the status (CODES)
DOMAIN_STATUS: dict[type[DomainError], int] = {
    BadRequest: 400,
    LicenseLimit: 402,
    NotFound: 404,
    Conflict: 409,
    Invalid: 422,
}


def from_domain(error: DomainError) -> ApiError:
    """A domain refusal as the envelope's status and code (its message unchanged)."""
    status = next(
        (DOMAIN_STATUS[kind] for kind in type(error).__mro__ if kind in DOMAIN_STATUS), 422
    )
    return ApiError(status, error.message)


def _location(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "body"


def from_validation(error: ValidationError, where: str = "body") -> ApiError:
    """A pydantic error as a 422 whose message names every offending field."""
    messages = []
    for item in error.errors(include_url=False):
        field = _location(tuple(item["loc"]))
        if item["type"] == "extra_forbidden":
            messages.append(f"{field}: unknown field")
        elif item["type"] == UNSTORABLE:
            inner = str(item.get("ctx", {}).get("field", ""))
            prefix = "" if field == "body" else field + "."
            messages.append(f"{prefix}{inner}: {item['msg']}")
        elif item["type"] == "missing":
            messages.append(f"{field}: required")
        else:
            text = item["msg"]
            if text.startswith("Value error, "):
                text = text[len("Value error, "):]
            messages.append(f"{field}: {text}")
    status = 400 if where == "query" else 422
    code = "bad_request" if where == "query" else "validation_error"
    return ApiError(status, "; ".join(messages), code)
