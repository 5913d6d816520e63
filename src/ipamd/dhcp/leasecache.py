"""This node's view of the live leases (active, declined), for decisions without SQL, and
its Offer holds.

The database stays the judge: every write is guarded by the unique indexes, and a
refused write refreshes the entries involved. This view is complete for a single
node (every change goes through this process) and converges for several (conflicts
refresh it; a periodic resync picks up what other nodes freed).

An Offer is not written (Kea does not either): the address offered is held here, in this
node's memory, for ``dhcp.offer_hold_seconds`` (``OfferHolds``), so that this node offers
it to nobody else meanwhile. Only the Ack writes a lease, and the unique indexes judge it:
another node (which cannot see this node's holds) may have granted the address first.
(``offered`` rows were written by earlier versions; they are still read as live.)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from time import time

LIVE_STATES = ("offered", "active", "declined")


@dataclass(slots=True)
class Lease:
    lease_id: uuid.UUID
    subnet_id: uuid.UUID
    ip: int
    state: str  # active | declined (offered: a row an earlier version wrote)
    client_key: bytes
    expires: float  # epoch seconds


@dataclass(slots=True)
class Hold:
    """An address offered to a client by this node and not yet acknowledged."""

    subnet_id: uuid.UUID
    ip: int
    client_key: bytes
    expires: float  # epoch seconds


class OfferHolds:
    """This node's Offer holds, by client and by address; nothing of them is in the database.

    Every hold lasts the same ``dhcp.offer_hold_seconds``, and a renewed one moves to the
    end, so insertion order is expiry order: lapsing looks only at the oldest.
    """

    def __init__(self) -> None:
        self._by_client: dict[tuple[uuid.UUID, bytes], Hold] = {}  # insertion = expiry order
        self._ips: dict[uuid.UUID, dict[int, Hold]] = {}
        # No hold lapses before this (or it is a hold dropped since): ``lapse`` is called per
        # Discover, and finding the oldest entry of a dict with many deletions is not free.
        self._due = float("inf")

    def client(self, subnet_id: uuid.UUID, client_key: bytes) -> Hold | None:
        return self._by_client.get((subnet_id, client_key))

    def at(self, subnet_id: uuid.UUID, ip: int) -> Hold | None:
        table = self._ips.get(subnet_id)
        return None if table is None else table.get(ip)

    def ips(self, subnet_id: uuid.UUID) -> dict[int, Hold]:
        """Addresses held in the subnet; do not mutate."""
        table = self._ips.get(subnet_id)
        if table is None:
            table = self._ips[subnet_id] = {}
        return table

    def __len__(self) -> int:
        return len(self._by_client)

    def live(self, now: float) -> int:
        """Holds not yet lapsed (``lapse`` runs only when the server needs an address).

        Holds are kept in the order they lapse (as ``lapse`` relies on), so only the lapsed
        ones at the front are looked at: the metrics read this every second, with tens of
        thousands of holds during a storm."""
        lapsed = 0
        for hold in self._by_client.values():
            if hold.expires > now:
                break
            lapsed += 1
        return len(self._by_client) - lapsed

    def hold(self, subnet_id: uuid.UUID, ip: int, client_key: bytes, expires: float) -> Hold:
        """Hold ``ip`` for the client until ``expires``: replaces the client's previous hold
        in the subnet and any other client's hold of the address."""
        self.drop(subnet_id, client_key)
        other = self.at(subnet_id, ip)
        if other is not None:
            self.drop(subnet_id, other.client_key)
        hold = Hold(subnet_id, ip, client_key, expires)
        self._by_client[(subnet_id, client_key)] = hold
        self.ips(subnet_id)[ip] = hold
        if expires < self._due:
            self._due = expires
        return hold

    def drop(self, subnet_id: uuid.UUID, client_key: bytes) -> Hold | None:
        hold = self._by_client.pop((subnet_id, client_key), None)
        if hold is not None:
            table = self._ips[subnet_id]
            if table.get(hold.ip) is hold:
                del table[hold.ip]
        return hold

    def lapse(self, now: float) -> set[uuid.UUID]:
        """Forget the holds whose time is up; returns the subnets that got addresses back."""
        freed: set[uuid.UUID] = set()
        if now < self._due:
            return freed
        by_client = self._by_client
        self._due = float("inf")
        while by_client:
            hold = next(iter(by_client.values()))
            if hold.expires > now:
                self._due = hold.expires
                break
            self.drop(hold.subnet_id, hold.client_key)
            freed.add(hold.subnet_id)
        return freed


class LeaseCache:
    def __init__(self) -> None:
        # This node's Offer holds: not leases, so a resync (a reload of the rows) keeps them.
        self.holds = OfferHolds()
        self._by_id: dict[uuid.UUID, Lease] = {}
        self._by_client: dict[tuple[uuid.UUID, bytes], Lease] = {}
        self._ips: dict[uuid.UUID, dict[int, Lease]] = {}
        self._journal: list[tuple[bool, Lease | uuid.UUID]] | None = None
        # Live leases by state, kept as they come and go (counts() is read every second).
        self._states: dict[str, int] = dict.fromkeys(LIVE_STATES, 0)

    # ------------------------------------------------------------------ reads

    def client(self, subnet_id: uuid.UUID, client_key: bytes) -> Lease | None:
        """The client's active lease in the subnet (not an Offer hold: see ``holds``)."""
        return self._by_client.get((subnet_id, client_key))

    def at(self, subnet_id: uuid.UUID, ip: int) -> Lease | None:
        table = self._ips.get(subnet_id)
        return None if table is None else table.get(ip)

    def ips(self, subnet_id: uuid.UUID) -> dict[int, Lease]:
        """Addresses held in the subnet (live leases, declined included); do not mutate."""
        table = self._ips.get(subnet_id)
        if table is None:
            table = self._ips[subnet_id] = {}
        return table

    def __len__(self) -> int:
        return len(self._by_id)

    def counts(self) -> dict[str, int]:
        """Live leases by state; ``offered`` counts this node's Offer holds."""
        out = {state: self._states[state] for state in LIVE_STATES}
        out["offered"] += self.holds.live(time())
        return out

    # ------------------------------------------------------------------ writes

    def put(self, lease: Lease) -> None:
        """Record a live lease (replacing the older entry of the same id, address or client)."""
        if self._journal is not None:
            self._journal.append((True, lease))
        self._put(lease)

    def drop(self, lease_id: uuid.UUID) -> Lease | None:
        """Forget a lease that is no longer live; returns the entry if there was one."""
        if self._journal is not None:
            self._journal.append((False, lease_id))
        return self._drop(lease_id)

    def _put(self, lease: Lease) -> None:
        self._drop(lease.lease_id)
        table = self.ips(lease.subnet_id)
        other = table.get(lease.ip)
        if other is not None:
            self._drop(other.lease_id)
        if lease.state != "declined":
            other = self._by_client.get((lease.subnet_id, lease.client_key))
            if other is not None:
                self._drop(other.lease_id)
            self._by_client[(lease.subnet_id, lease.client_key)] = lease
        table[lease.ip] = lease
        self._by_id[lease.lease_id] = lease
        states = self._states
        states[lease.state] = states.get(lease.state, 0) + 1

    def _drop(self, lease_id: uuid.UUID) -> Lease | None:
        lease = self._by_id.pop(lease_id, None)
        if lease is None:
            return None
        self._states[lease.state] -= 1  # counted by _put
        key = (lease.subnet_id, lease.client_key)
        if self._by_client.get(key) is lease:
            del self._by_client[key]
        table = self._ips.get(lease.subnet_id)
        if table is not None and table.get(lease.ip) is lease:
            del table[lease.ip]
        return lease

    # ------------------------------------------------------------------ resync

    def begin_resync(self) -> None:
        """Start journaling: changes made while a full reload runs are replayed after it."""
        self._journal = []

    def finish_resync(self, leases: Iterable[Lease]) -> None:
        journal, self._journal = self._journal or [], None
        self._by_id.clear()
        self._by_client.clear()
        self._ips.clear()
        self._states = dict.fromkeys(LIVE_STATES, 0)
        for lease in leases:
            self._put(lease)
        for is_put, item in journal:
            if is_put:
                self._put(item)  # type: ignore[arg-type]  # a put journals a Lease
            else:
                self._drop(item)  # type: ignore[arg-type]  # a drop journals an id

    def abort_resync(self) -> None:
        self._journal = None
