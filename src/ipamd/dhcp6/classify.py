"""Which client classes a DHCPv6 client belongs to (the client-class resource's match kinds).

The same classes as DHCPv4 (``/client-classes``), matched against DHCPv6's options
(docs/dhcpv6.md, "Client classes"):

* ``vendor_class`` — one data item of the Vendor Class option (16, RFC 8415 §21.16) starts
  with the value, whatever the enterprise number (so "PXEClient" matches an RFC 5970 PXE
  client's "PXEClient:Arch:00007:UNDI:003016" as it matches DHCPv4 option 60). A value
  ``<decimal enterprise number>:<text>`` also matches when the option's enterprise number is
  that number and one data item starts with ``<text>`` (e.g. "40712:dhcpcd").
* ``user_class`` — one data item of the User Class option (15, §21.15) equals the value
  (DHCPv4: one option 77 instance).
* ``mac_prefix`` — the client link-layer address a relay added (option 79, RFC 6939;
  Ethernet only) starts with the value; without it no match.
"""

from __future__ import annotations

from dataclasses import dataclass

from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.options import UserClass, VendorClass

NO_CLASSES: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ClientClass6:
    """One client class: ``match`` is a ``client_classes.match`` kind, ``value`` its value
    as stored (text; a MAC prefix lowercase colon-separated)."""

    id: str
    match: str
    value: str


def _vendor_hit(value: bytes, vendors: list[VendorClass]) -> bool:
    head, sep, rest = value.partition(b":")
    enterprise = int(head) if sep and head.isdigit() and len(head) <= 10 else None
    for vendor in vendors:
        if any(item.startswith(value) for item in vendor.items):
            return True
        if enterprise == vendor.enterprise and any(item.startswith(rest) for item in vendor.items):
            return True
    return False


def classify(message: Message, classes: tuple[ClientClass6, ...],
             mac: str | None = None) -> frozenset[str]:
    """The ids of the classes ``message`` (and the link-layer address ``mac``) match."""
    if not classes:
        return NO_CLASSES
    vendors = message.every(VendorClass)
    users = {item for option in message.every(UserClass) for item in option.items}
    found = set()
    for c in classes:
        value = c.value.encode()
        if c.match == "vendor_class":
            hit = _vendor_hit(value, vendors)
        elif c.match == "user_class":
            hit = value in users
        elif c.match == "mac_prefix":
            hit = mac is not None and bool(c.value) and mac.startswith(c.value)
        else:
            hit = False
        if hit:
            found.add(c.id)
    return frozenset(found) if found else NO_CLASSES
