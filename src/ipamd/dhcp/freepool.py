"""Picks a free address from a subnet's pools, round robin, without SQL.

Free means: in a pool whose class the client has (pools with a class first, then
pools without one), not blocked (reservations, assignments), not held by a live or
declined lease in the cache, not held for an Offer of this node, and not already picked
by a request still being committed. Excludes, network, broadcast and gateway were cut
out of the pool segments when the plan was built. The unique index on live leases still
judges every grant.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Container

from ipamd.dhcp.plan import Pool, Subnet


class AddressPicker:
    def __init__(self, spread: str = "") -> None:
        # Next offset to try in each pool (survives plan reloads: keyed by pool id).
        self._cursor: dict[uuid.UUID, int] = {}
        # Several nodes on one database (docs/scale-out.md) each start their walk at a
        # different, stable place in every pool (from the node name): walking from the
        # same start, they would keep picking the addresses the other just took and lose
        # commits to the unique index. Empty (one node): from the pool's start.
        self._spread = spread
        # Pools found full, with the subnet's free-generation at that time.
        self._full: dict[uuid.UUID, int] = {}
        self._generation: dict[uuid.UUID, int] = {}

    def freed(self, subnet_id: uuid.UUID) -> None:
        """An address of the subnet became free: full pools are worth scanning again."""
        self._generation[subnet_id] = self._generation.get(subnet_id, 0) + 1

    def pick(
        self,
        subnet: Subnet,
        classes: frozenset[uuid.UUID],
        held: Container[int],
        pending: Container[int],
        offered: Container[int],
    ) -> int | None:
        generation = self._generation.get(subnet.id, 0)
        for preferred in (True, False):
            for pool in subnet.pools:
                if (pool.class_id is not None) != preferred:
                    continue
                if pool.class_id is not None and pool.class_id not in classes:
                    continue
                if self._full.get(pool.id) == generation:
                    continue
                found = self._scan(pool, subnet.blocked, held, pending, offered)
                if found is not None:
                    return found
                self._full[pool.id] = generation
        return None

    def _scan(
        self, pool: Pool, blocked: Container[int], held: Container[int], pending: Container[int],
        offered: Container[int],
    ) -> int | None:
        if pool.size == 0:
            return None
        start = self._cursor.get(pool.id, -1)
        if start < 0:
            start = _spread_start(self._spread, pool.id, pool.size)
        start %= pool.size
        offset = 0
        # Walk the segments from the cursor, wrapping once around the pool.
        for lo, hi in pool.segments:
            length = hi - lo + 1
            if start < offset + length:
                break
            offset += length
        segments = pool.segments
        index = segments.index((lo, hi))
        ip = lo + (start - offset)
        for _ in range(pool.size):
            if (ip not in held and ip not in pending and ip not in offered
                    and ip not in blocked):
                self._cursor[pool.id] = start + 1
                return ip
            start += 1
            if ip == hi:
                index = (index + 1) % len(segments)
                lo, hi = segments[index]
                ip = lo
                if index == 0:
                    start = 0
            else:
                ip += 1
        return None


def _spread_start(spread: str, pool_id: uuid.UUID, size: int) -> int:
    if not spread:
        return 0
    digest = hashlib.sha256(f"{spread}/{pool_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % size
