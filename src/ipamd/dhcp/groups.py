"""Shared networks at plan load: each member subnet learns its group, in order.

Done once per plan (plan.build), so a packet for a subnet on a link alone reads one empty
tuple and goes on (docs/api-ipam.md, "Shared networks").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ipamd.dhcp.plan import Subnet


def link_members(subnets: Mapping[uuid.UUID, Subnet],
                 rows: Iterable[Mapping[str, Any]]) -> None:
    """Set ``shared`` on every member of a group of two or more serving subnets: its own id
    first (the subnet the relay named is tried first), then the others by network address,
    then id — Kea tries a shared network's subnets in their configured order, ISC dhcpd the
    shared-network's pools in theirs; ours is the address order, which the API shows. A
    member with DHCP disabled has no pools: it is left out and serves nothing."""
    groups: dict[uuid.UUID, list[Subnet]] = {}
    for row in rows:
        group, subnet = row.get("shared_network_id"), subnets.get(row["id"])
        if group is not None and subnet is not None and subnet.dhcp_enabled:
            groups.setdefault(group, []).append(subnet)
    for members in groups.values():
        if len(members) < 2:
            continue
        ordered = sorted(members, key=lambda s: (s.network, s.id))
        for subnet in ordered:
            subnet.shared = (subnet.id, *(s.id for s in ordered if s is not subnet))
