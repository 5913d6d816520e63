"""What a search string can mean: a CIDR, an address, a MAC, a DUID or a host name prefix.

A string may mean several things at once (a 6-octet DUID is also a MAC); every meaning
that parses is searched and the results merged by rank. A string that is a MAC or a DUID
is not also taken as a host name prefix: that would scan every lease for nothing.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

from ipamd.core import identifiers

_HOSTNAME_PREFIX = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,252}$")


@dataclass(frozen=True)
class Terms:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
    mac: str | None = None
    duid: str | None = None
    hostname: str | None = None

    @property
    def empty(self) -> bool:
        return not any((self.network, self.address, self.mac, self.duid, self.hostname))

    @property
    def duid_forms(self) -> list[str]:
        """The DUID as colon-separated and as plain hex: lease rows may hold either."""
        if self.duid is None:
            return []
        return [self.duid, self.duid.replace(":", "")]

    @property
    def hostname_upper(self) -> str | None:
        """The smallest string greater than every string starting with the prefix."""
        if self.hostname is None:
            return None
        return self.hostname[:-1] + chr(ord(self.hostname[-1]) + 1)


def _or_none(parse: Callable[[str], str], text: str) -> str | None:
    try:
        return parse(text)
    except ValueError:
        return None


def parse(q: str) -> Terms:
    text = q.strip()
    if "/" in text:
        try:
            return Terms(network=ipaddress.ip_network(text, strict=False))
        except ValueError:
            return Terms()
    try:
        return Terms(address=ipaddress.ip_address(text))
    except ValueError:
        pass
    mac = _or_none(identifiers.mac, text)
    duid = _or_none(identifiers.duid, text)
    lowered = text.lower().removesuffix(".")
    hostname = None
    if mac is None and duid is None and lowered and _HOSTNAME_PREFIX.match(lowered):
        hostname = lowered
    return Terms(mac=mac, duid=duid, hostname=hostname)
