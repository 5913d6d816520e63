"""What the running appliance shares between its services; passed explicitly, never global."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ipamd.config import Config
from ipamd.db.bridge import Database


@dataclass
class AppState:
    config: Config
    db: Database
    started_at: float = field(default_factory=time.time)
    # Set once any token has been minted: the bootstrap window never reopens.
    tokens_exist: bool = False
    # Per-subsystem in-memory counters (dhcp, outbox, ...), read by the metrics endpoint.
    counters: dict[str, Any] = field(default_factory=dict)
    # Extension slots for services that other parts reach (dhcp server handle, scheduler, ...).
    services: dict[str, Any] = field(default_factory=dict)
