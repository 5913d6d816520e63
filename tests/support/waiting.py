"""Bounded waiting for something the appliance does in its own time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio


async def until(check: Callable[[], Awaitable[Any]], what: str, seconds: float = 20.0,
                every: float = 0.1) -> Any:
    """Poll ``check`` until it returns something truthy (returned); fail naming ``what``."""
    with trio.move_on_after(seconds):
        while True:
            found = await check()
            if found:
                return found
            await trio.sleep(every)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
