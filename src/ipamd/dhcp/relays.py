"""Trusted relays (docs/relays.md): the TOML list plus the settings resource's list."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

_MEMO_MAX = 4096


class TrustedRelays:
    """Membership test for int source addresses; exact addresses and CIDR networks."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries: tuple[str, ...] = tuple(dict.fromkeys(entries))
        self._exact: set[int] = set()
        self._nets: list[tuple[int, int]] = []
        for entry in self.entries:
            net = ipaddress.ip_network(entry, strict=False)
            if net.version != 4:
                continue
            if net.prefixlen == 32:
                self._exact.add(int(net.network_address))
            else:
                self._nets.append((int(net.network_address), int(net.netmask)))
        self._memo: dict[int, bool] = {}

    def __contains__(self, ip: object) -> bool:
        if not isinstance(ip, int):
            return False
        known = self._memo.get(ip)
        if known is not None:
            return known
        found = ip in self._exact or any(ip & mask == net for net, mask in self._nets)
        if len(self._memo) >= _MEMO_MAX:
            self._memo.clear()  # bounded: a spoofing flood cannot grow it
        self._memo[ip] = found
        return found

    def __bool__(self) -> bool:
        return bool(self.entries)
