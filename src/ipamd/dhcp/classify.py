"""Stage 3, classify: which client classes does the client belong to?

Match kinds (client_classes.match): ``vendor_class`` — option 60 starts with the value
(so "PXEClient" matches "PXEClient:Arch:00007:UNDI:003016"); ``user_class`` — one of
the option 77 instances equals the value; ``mac_prefix`` — the hardware address starts
with the value (any of aa:bb:cc, aa-bb-cc, aabbcc; a prefix may end mid-octet); ``arch``
— one of the client's architecture types (option 93, RFC 4578 §2.1: a list of 16-bit
types) equals the value; ``circuit_id`` / ``remote_id`` — the trusted relay's option 82
sub-option 1 / 2 (RFC 3046) equals the value's octets.
"""

from __future__ import annotations

import uuid

from ipamd.dhcp.context import NO_CLASSES, Env, Exchange
from ipamd.dhcp.options import CLIENT_ARCH, HTYPE_ETHER


def _arch_types(raw: bytes | None) -> tuple[bytes, ...]:
    if not raw:
        return ()
    return tuple(raw[i:i + 2] for i in range(0, len(raw) - 1, 2))


def classify(tx: Exchange, env: Env) -> None:
    classes = env.plan.classes
    if not classes:
        return
    msg = tx.msg
    vendor = msg.vendor_class
    users = msg.user_class or ()
    mac_hex = msg.chaddr[:6].hex().encode() if msg.htype == HTYPE_ETHER and msg.hlen == 6 \
        else None
    arches = _arch_types(msg.options.get(CLIENT_ARCH))
    found: set[uuid.UUID] = set()
    for c in classes:
        match = c.match
        if match == "vendor_class":
            hit = vendor is not None and vendor.startswith(c.value)
        elif match == "user_class":
            hit = c.value in users
        elif match == "mac_prefix":
            hit = mac_hex is not None and bool(c.value) and mac_hex.startswith(c.value)
        elif match == "arch":
            hit = c.value in arches
        elif match == "circuit_id":
            hit = tx.circuit_id == c.value
        elif match == "remote_id":
            hit = tx.remote_id == c.value
        else:
            hit = False
        if hit:
            found.add(c.id)
    tx.classes = frozenset(found) if found else NO_CLASSES
