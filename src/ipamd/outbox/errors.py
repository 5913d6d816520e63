"""Turns a failed exchange into a last_error an operator can act on (never a secret)."""

from __future__ import annotations

import os
import ssl


def reason_of(error: BaseException) -> str:
    """The real reason behind a wrapped error (a TLS failure, a reset, a refused connect).

    The httpx error raised by the delivery client wraps the OSError or SSLError that says
    what happened: follow the chain down to it.
    """
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BaseExceptionGroup) and current.exceptions:
            current = current.exceptions[-1]  # trio's "all attempts to connect failed"
            continue
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"TLS certificate not accepted: {current.verify_message}"
        if isinstance(current, ssl.SSLError):
            return f"TLS failed: {current.reason or current}"
        if isinstance(current, OSError) and current.errno:
            return os.strerror(current.errno)
        current = current.__cause__ or current.__context__
    return str(error) or type(error).__name__
