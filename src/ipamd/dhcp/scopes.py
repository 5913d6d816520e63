"""Option scopes: the subnet a client's reply is built from, its classes' and its
reservation's options laid over the subnet's.

Precedence is reservation > class > subnet for every code, ISC dhcpd's order (Kea 2.2
ranks a class's option data below the subnet's: docs/api-ipam.md, "Option scopes").
Among matching classes the lowest ``priority`` wins (the plan keeps them in that order).
A scope's option for every client also beats a lower scope's vendor-specific one of the
same code. ``next_server``/``boot_file`` follow the same order.

The reply stage asks ``scoped`` only for a client with a reservation or a class; a
subnet with options laid on is made once per plan and kept (``Plan.scoped``), so a
reply costs one dictionary look-up more, and a client with neither costs nothing.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable

from ipamd.dhcp.plan import Layer, Plan, Reservation, Subnet

_SCOPED_MAX = 4096  # classes and reservations are the operator's: a bound, not a cache policy

# Where an option came from: ("subnet", subnet id, "") or ("class"/"reservation", id, name).
Source = tuple[str, uuid.UUID, str]
# An option's key: (code, option 60 prefix or None for every client), or the field's name
# ("next_server", "boot_file").
Key = tuple[int, bytes | None] | str


def layers_for(plan: Plan, classes: frozenset[uuid.UUID],
               reservation: Reservation | None) -> list[Layer]:
    """The layers over the subnet, lowest precedence first."""
    found = [c.layer for c in plan.layered if c.id in classes and c.layer is not None]
    if reservation is not None and reservation.layer is not None:
        found.append(reservation.layer)
    return found


def scoped(plan: Plan, subnet: Subnet, classes: frozenset[uuid.UUID],
           reservation: Reservation | None) -> Subnet:
    """``subnet`` with the client's class and reservation options laid on (itself when
    none of them carries any)."""
    layers = layers_for(plan, classes, reservation)
    if not layers:
        return subnet
    key = (subnet.id, frozenset(layer.id for layer in layers if layer.kind == "class"),
           reservation.id if reservation is not None and reservation.layer is not None
           else None)
    found = plan.scoped.get(key)
    if found is None:
        found = lay(subnet, layers)[0]
        if len(plan.scoped) >= _SCOPED_MAX:
            plan.scoped.clear()
        plan.scoped[key] = found
    return found


def lay(subnet: Subnet, layers: Iterable[Layer]) -> tuple[Subnet, dict[Key, Source]]:
    """A copy of ``subnet`` with ``layers`` laid on in order, and where each option came
    from. The copy has empty reply memos of its own."""
    base: Source = ("subnet", subnet.id, "")
    generic = dict(subnet.options)
    sources: dict[Key, Source] = {(code, None): base for code in generic}
    vendor: dict[bytes, dict[int, bytes]] = {}
    for prefix, extra in subnet.vendor_options:
        vendor[prefix] = dict(extra)
        sources.update({(code, prefix): base for code in extra})
    next_server, boot_file = subnet.next_server, subnet.boot_file
    sources.update({name: base for name, value in (("next_server", next_server),
                                                   ("boot_file", boot_file)) if value})
    for layer in layers:
        source: Source = (layer.kind, layer.id, layer.name)
        for code, value in layer.options.items():
            generic[code] = value
            sources[(code, None)] = source
            for prefix, extra in vendor.items():  # a lower scope's 43 for a vendor loses
                if extra.pop(code, None) is not None:
                    del sources[(code, prefix)]
        for prefix, extra in layer.vendor_options.items():
            vendor.setdefault(prefix, {}).update(extra)
            sources.update({(code, prefix): source for code in extra})
        if layer.next_server:
            next_server, sources["next_server"] = layer.next_server, source
        if layer.boot_file:
            boot_file, sources["boot_file"] = layer.boot_file, source
    made = dataclasses.replace(
        subnet, options=generic, next_server=next_server, boot_file=boot_file,
        # Longest vendor class first, as plan._options orders the subnet's.
        vendor_options=tuple(sorted(((p, v) for p, v in vendor.items() if v),
                                    key=lambda kv: -len(kv[0]))),
        reply_memo={}, wire_memo={})
    return made, sources
