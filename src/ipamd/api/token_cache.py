"""Verified API tokens, remembered for a few seconds: most requests need no lookup of their own.

Only tokens that verified are kept, keyed by the SHA-256 of the secret (what the tokens table
stores); an entry lives at most TTL_SECONDS and never past the token's expiry. A change that
could refuse a token (revoke, role, expiry, delete) empties the cache: at once on this node
(the revoke route calls ``clear``) and on every node through the NOTIFY the tokens table
sends (migration 0009). While that listener is not connected nothing is served from memory,
so a notification missed during an outage cannot keep a revoked token alive; the TTL bounds
the rest (a notification dropped on a full buffer).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from ipamd.db.bridge import Database
from ipamd.db.outage import DB_ERRORS, Throttle, log_failure

if TYPE_CHECKING:
    from ipamd.api.router import Role

CHANNEL = "ipamd_tokens"
TTL_SECONDS = 5.0
LISTEN_RETRY_SECONDS = 0.5
MAX_ENTRIES = 10_000  # a bound on memory: past it the cache starts again empty

log = logging.getLogger("ipamd.api.tokens")


@dataclass(frozen=True)
class Verified:
    """A token that verified: what a request needs to act as it."""

    token_id: str
    name: str
    role: Role
    digest: bytes


class TokenCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[bytes, tuple[float, Verified]] = {}
        # Bumped by every clear: a lookup that began before a clear must not store its
        # (possibly stale) row after it.
        self.generation = 0
        self.listening = False
        self._log = Throttle(log)

    def get(self, digest: bytes) -> Verified | None:
        if not self.listening:
            return None
        entry = self._entries.get(digest)
        if entry is None:
            return None
        until, verified = entry
        if self._clock() >= until or not hmac.compare_digest(verified.digest, digest):
            del self._entries[digest]
            return None
        return verified

    def put(self, verified: Verified, generation: int, seconds_left: float | None) -> None:
        """Remember a token verified by a lookup that began at ``generation``."""
        if not self.listening or generation != self.generation:
            return
        lifetime = TTL_SECONDS if seconds_left is None else min(TTL_SECONDS, seconds_left)
        if lifetime <= 0:
            return
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[verified.digest] = (self._clock() + lifetime, verified)

    def clear(self) -> None:
        self._entries.clear()
        self.generation += 1

    def _set_listening(self, listening: bool) -> None:
        self.listening = listening
        self.clear()

    async def follow(self, db: Database) -> None:
        """LISTEN for token changes until cancelled; the cache serves only while it listens."""
        while True:
            try:
                channel = await db.listen(CHANNEL)
                self._set_listening(True)
                try:
                    async for _payload in channel:
                        self.clear()
                finally:
                    self._set_listening(False)
                    with trio.CancelScope(shield=True):
                        await channel.release()
            except DB_ERRORS as error:
                log_failure(self._log, error, "token listener lost (%s); retrying",
                            error.__class__.__name__)
            await trio.sleep(LISTEN_RETRY_SECONDS)
