"""This node's picture of the live DHCPv6 bindings: the ``plan.Bindings`` the decision asks.

Loaded from the lease store at start (``leasestore.load_live6``), kept by the server after
each commit, reloaded now and then (other nodes' changes), and corrected where the database
refused it (``leasestore.load_some6``). The database stays the judge: its unique indexes
refuse a binding this picture missed, and the server decides again.

Look-ups never enumerate: by IA, and by (start, length) per prefix length in use — an
address is length 128, a delegated prefix its length — so "does anyone hold something
overlapping this prefix" is one dictionary probe per shorter-or-equal length and one
bisection per longer length.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from ipaddress import IPv6Address
from typing import Any

from sortedcontainers import SortedList

from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.plan import Binding, IaType

IA_TYPES = {"na": IaType.NA, "pd": IaType.PD}
_IA_NAMES = {IaType.NA: "na", IaType.PD: "pd"}


def ia_name(ia_type: IaType) -> str:
    return _IA_NAMES[ia_type]


class BindingCache:
    """Live bindings by lease id, by client IA and by (start, prefix length)."""

    def __init__(self) -> None:
        self._clear()
        # What messages whose commit is still on its way are granting, by (start, prefix
        # length): ``holder`` answers with the claim, so another client probing that position
        # meanwhile takes its next one. Two clients on one position both went to the
        # database, and the second was refused: its whole batch's statement ran again, its
        # bindings were read again, and refused twice its message was dropped (``conflict``,
        # bench/README.md). Not cleared with the bindings: it is about messages in flight.
        self._claims: dict[tuple[int, int], Binding] = {}

    def _clear(self) -> None:
        self._by_id: dict[uuid.UUID, Binding] = {}
        self._id_of: dict[tuple[int, int], uuid.UUID] = {}
        self._by_ia: dict[tuple[bytes, int, IaType], set[uuid.UUID]] = {}
        # Per prefix length: start (int) -> lease id, and the starts sorted (a SortedList:
        # adding to a plain sorted list moves half of it, 34 µs a binding at 100,000). The
        # sorted starts of a length are made when a shorter prefix is first looked up
        # (_sorted), then kept: where nothing is delegated, no address's start is sorted
        # (SortedList.add is interpreted Python, 2-5 µs a grant).
        self._at: dict[int, dict[int, uuid.UUID]] = {}
        self._starts: dict[int, SortedList[int]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, lease_id: object) -> bool:
        return lease_id in self._by_id

    # ------------------------------------------------------------------ the Bindings protocol

    def of(self, duid: Duid, iaid: int, ia_type: IaType, now: float) -> Sequence[Binding]:
        ids = self._by_ia.get((duid.raw, iaid, ia_type), ())
        return [b for b in (self._by_id[i] for i in ids)
                if b.state == "active" and b.expires > now]

    def holder(self, address: IPv6Address, prefix_length: int, now: float) -> Binding | None:
        """Who holds that address or prefix (or overlaps it), or is about to (a claim of
        the same start and length)."""
        start = int(address) >> (128 - prefix_length) << (128 - prefix_length)
        claims = self._claims
        if claims:
            claim = claims.get((start, prefix_length))
            if claim is not None:
                return claim
        end = start | ((1 << (128 - prefix_length)) - 1)
        for length, table in self._at.items():
            if length <= prefix_length:
                key = start >> (128 - length) << (128 - length)
                found = self._live(table.get(key), now)
                if found is not None:
                    return found
                continue
            for inside in self._sorted(length, table).irange(start, end):
                found = self._live(table.get(inside), now)
                if found is not None:
                    return found
        return None

    def _sorted(self, length: int, table: dict[int, uuid.UUID]) -> SortedList[int]:
        starts = self._starts.get(length)
        if starts is None:
            starts = self._starts[length] = SortedList(table)
        return starts

    def has_ia(self, duid: Duid, iaid: int, ia_type: IaType) -> bool:
        """Any binding of that IA, lapsed ones too (the database may not have swept them)."""
        return bool(self._by_ia.get((duid.raw, iaid, ia_type)))

    def _live(self, lease_id: uuid.UUID | None, now: float) -> Binding | None:
        if lease_id is None:
            return None
        binding = self._by_id[lease_id]
        return binding if binding.expires > now else None

    # ------------------------------------------------------------------ keeping it

    def put(self, lease_id: uuid.UUID, binding: Binding) -> None:
        """Add or replace a live binding (the one at its address goes, whoever held it)."""
        self.drop(lease_id)
        start = int(binding.address)
        held = self._id_of.get((start, binding.prefix_length))
        if held is not None:
            self.drop(held)
        self._by_id[lease_id] = binding
        self._id_of[(start, binding.prefix_length)] = lease_id
        key = (binding.duid.raw, binding.iaid, binding.ia_type)
        self._by_ia.setdefault(key, set()).add(lease_id)
        table = self._at.setdefault(binding.prefix_length, {})
        table[start] = lease_id
        starts = self._starts.get(binding.prefix_length)
        if starts is not None:
            starts.add(start)

    def drop(self, lease_id: uuid.UUID) -> None:
        binding = self._by_id.pop(lease_id, None)
        if binding is None:
            return
        start, length = int(binding.address), binding.prefix_length
        self._id_of.pop((start, length), None)
        key = (binding.duid.raw, binding.iaid, binding.ia_type)
        ids = self._by_ia.get(key)
        if ids is not None:
            ids.discard(lease_id)
            if not ids:
                del self._by_ia[key]
        table = self._at[length]
        table.pop(start, None)
        starts = self._starts.get(length)
        if starts is not None:
            starts.discard(start)
        if not table:
            del self._at[length]
            self._starts.pop(length, None)

    def claim(self, binding: Binding) -> None:
        """A grant on its way to the database (see ``_claims``)."""
        self._claims[(int(binding.address), binding.prefix_length)] = binding

    def unclaim(self, address: IPv6Address, prefix_length: int, duid: Duid, iaid: int,
                ia_type: IaType) -> None:
        """That IA's grant committed, refused or dropped: its claim goes (another IA's that
        took the position since stays)."""
        key = (int(address), prefix_length)
        claim = self._claims.get(key)
        if claim is not None and claim.duid == duid and claim.iaid == iaid \
                and claim.ia_type == ia_type:
            del self._claims[key]

    def drop_ia(self, duid: Duid, iaid: int, ia_type: IaType) -> None:
        for lease_id in list(self._by_ia.get((duid.raw, iaid, ia_type), ())):
            self.drop(lease_id)

    def addresses_of(self, duid: Duid, iaid: int, ia_type: IaType) -> list[IPv6Address]:
        """Where that IA's bindings are (first addresses of prefixes), lapsed ones too."""
        return [self._by_id[i].address for i in self._by_ia.get((duid.raw, iaid, ia_type), ())]

    def drop_at(self, address: IPv6Address, prefix_length: int) -> None:
        held = self._id_of.get((int(address), prefix_length))
        if held is not None:
            self.drop(held)

    def load(self, rows: Iterable[tuple[Any, ...]]) -> int:
        """Add rows of ``leasestore.load_live6``; how many."""
        count = 0
        for row in rows:
            found = binding_of(row)
            if found is not None:
                self.put(*found)
                count += 1
        return count

    def replace_all(self, rows: Iterable[tuple[Any, ...]]) -> int:
        self._clear()
        return self.load(rows)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for binding in self._by_id.values():
            out[binding.state] = out.get(binding.state, 0) + 1
        return out


def binding_of(row: tuple[Any, ...]) -> tuple[uuid.UUID, Binding] | None:
    """A ``load_live6`` row as (lease id, Binding); None for a row that is not one."""
    lease_id, _subnet, ip, length, state, duid, iaid, ia_type, expires = row
    kind = IA_TYPES.get(ia_type)
    if kind is None or duid is None or iaid is None:
        return None
    try:
        parsed = Duid.from_text(duid)
    except ValueError:
        return None
    return lease_id, Binding(kind, parsed, int(iaid), IPv6Address(ip), int(length), state,
                             float(expires))
