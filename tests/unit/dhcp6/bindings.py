"""An in-memory lease store view for the engine's tests (dhcp6.plan.Bindings)."""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import IPv6Address, IPv6Network

from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.plan import Binding, IaType, overlapping


class MemoryBindings:
    def __init__(self, *bindings: Binding) -> None:
        self.rows = list(bindings)

    def of(self, duid: Duid, iaid: int, ia_type: IaType, now: float) -> Sequence[Binding]:
        return [b for b in self.rows if b.duid == duid and b.iaid == iaid
                and b.ia_type == ia_type and b.state == "active" and b.expires > now]

    def holder(self, address: IPv6Address, prefix_length: int, now: float) -> Binding | None:
        live = [b for b in self.rows if b.expires > now]
        return overlapping(live, IPv6Network((address, prefix_length)))
