"""Stage 4, identify: who is the client, and does it have a reservation in the subnet?

The client key (RFC 2131 §4.2) is option 61 when present, else htype + chaddr.
A reservation matches, in this order, the raw client identifier, the DUID of an
RFC 4361 identifier (type 255), then the MAC (Ethernet only).
"""

from __future__ import annotations

from ipamd.core import dnsname
from ipamd.dhcp.codec import DhcpMessage
from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.options import (
    CLIENT_ID,
    FQDN,
    HOSTNAME,
    HTYPE_ETHER,
    MalformedPacket,
    decode_client_fqdn,
)
from ipamd.dhcp.plan import Reservation, Subnet, performs_dns_updates

_NAME_MAX = 253


def _clean(text: str) -> str | None:
    # Postgres text cannot hold NUL; names longer than DNS allows are not names.
    text = text.replace("\x00", "").strip()
    return text[:_NAME_MAX] or None


def reservation_in(subnet: Subnet, msg: DhcpMessage) -> Reservation | None:
    """The client's reservation in ``subnet``, if it has one."""
    if not (subnet.by_mac or subnet.by_client_id or subnet.by_duid):
        return None
    cid = msg.options.get(CLIENT_ID)
    found = None
    if cid:
        found = subnet.by_client_id.get(cid)
        if found is None and len(cid) > 5 and cid[0] == 255:
            found = subnet.by_duid.get(cid[5:].hex())
    if found is None and msg.htype == HTYPE_ETHER and msg.hlen == 6:
        found = subnet.by_mac.get(msg.chaddr[:6])
    return found


def identify(tx: Exchange, env: Env) -> None:
    msg = tx.msg
    opts = msg.options
    cid = opts.get(CLIENT_ID)
    tx.client_key = cid if cid else bytes((msg.htype,)) + msg.chaddr[: msg.hlen]
    subnet = tx.subnet
    if subnet is not None and (subnet.by_mac or subnet.by_client_id or subnet.by_duid):
        tx.reservation = reservation_in(subnet, msg)
    raw = opts.get(HOSTNAME)
    if raw:
        tx.hostname = _clean(raw.decode("utf-8", "replace"))
    raw = opts.get(FQDN)
    if raw:
        try:
            tx.fqdn = _clean(decode_client_fqdn(raw).name)
        except MalformedPacket:
            tx.fqdn = None  # a bad name is not worth refusing the client
    if subnet is not None and performs_dns_updates(subnet):
        # The name this server registers (option 81, else 12 or the reservation's, in the
        # subnet's zone): it is the lease's fqdn, and its events carry it to the DNS fan-out.
        given = tx.hostname or (tx.reservation.hostname if tx.reservation else None)
        tx.fqdn = dnsname.ddns_fqdn(given, tx.fqdn, subnet.ddns_zone)
