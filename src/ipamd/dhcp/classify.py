"""Stage 3, classify: which client classes does the client belong to?

Match kinds (client_classes.match): ``vendor_class`` — option 60 starts with the value
(so "PXEClient" matches "PXEClient:Arch:00007:UNDI:003016"); ``user_class`` — one of
the option 77 instances equals the value; ``mac_prefix`` — the hardware address starts
with the value (any of aa:bb:cc, aa-bb-cc, aabbcc; a prefix may end mid-octet).
"""

from __future__ import annotations

import uuid

from ipamd.dhcp.context import NO_CLASSES, Env, Exchange
from ipamd.dhcp.options import HTYPE_ETHER


def classify(tx: Exchange, env: Env) -> None:
    classes = env.plan.classes
    if not classes:
        return
    msg = tx.msg
    vendor = msg.vendor_class
    users = msg.user_class or ()
    mac_hex = msg.chaddr[:6].hex().encode() if msg.htype == HTYPE_ETHER and msg.hlen == 6 \
        else None
    found: set[uuid.UUID] = set()
    for c in classes:
        if c.match == "vendor_class":
            hit = vendor is not None and vendor.startswith(c.value)
        elif c.match == "user_class":
            hit = c.value in users
        elif c.match == "mac_prefix":
            hit = mac_hex is not None and bool(c.value) and mac_hex.startswith(c.value)
        else:
            hit = False
        if hit:
            found.add(c.id)
    tx.classes = frozenset(found) if found else NO_CLASSES
