"""Stage 6, options: the reply message for a decided transaction.

Subnet options (1 from the CIDR, 3 from the gateway, 6, 15, 42 — a stored 42 beats the
NTP field —, any stored code), vendor options by option 60 (43 for PXE and friends),
51/58/59 from the lease time (the subnet's, or a client's option 51 within the subnet's
bounds), 54, 82 echoed (RFC 3046), siaddr/sname/file from next_server/boot_file. With a
parameter request list (55) only what the client asked for is sent, plus mask and router;
option 57 bounds the size (the codec packs to it).
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

from ipamd.dhcp.codec import DhcpMessage, answer_bytes
from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.options import (
    ACK,
    BOOTFILE,
    CLIENT_ID,
    FQDN,
    FQDN_E,
    FQDN_N,
    FQDN_O,
    FQDN_S,
    HOSTNAME,
    INFORM,
    MESSAGE,
    NAK,
    PRL,
    RELAY_AGENT,
    ROUTER,
    SUBNET_MASK,
    TFTP_SERVER,
    VENDOR_CLASS,
    MalformedPacket,
    decode_client_fqdn,
    encode_client_fqdn,
)
from ipamd.dhcp.plan import Subnet, lease_options, performs_dns_updates
from ipamd.dhcp.scopes import scoped

_ALWAYS = frozenset({SUBNET_MASK, ROUTER})
_MEMO_MAX = 256


def subnet_options(subnet: Subnet, prl: bytes, vendor: bytes | None) -> dict[int, bytes]:
    """The subnet's options this client gets, memoised on the subnet per (55, 60).

    The memo lives on the Subnet object, so a reloaded plan starts a fresh one.
    """
    if not subnet.vendor_options:
        vendor = None  # one memo entry whatever the client's option 60 says
    key = (prl, vendor)
    memo = subnet.reply_memo
    found = memo.get(key)
    if found is not None:
        return found
    merged = dict(subnet.options)
    if vendor is not None:
        for prefix, extra in subnet.vendor_options:
            if vendor.startswith(prefix):
                merged.update(extra)
                break
    if prl:
        wanted = set(prl) | _ALWAYS
        merged = {code: value for code, value in merged.items() if code in wanted}
    if len(memo) >= _MEMO_MAX:
        memo.clear()  # bounded: clients choose the keys
    memo[key] = merged
    return merged


def fqdn_flags(client_flags: int, server_updates: bool) -> int:
    """The flags of our option 81, per RFC 4702 §2.1 and §4.

    S=1 only when this server takes on the A RR update; N=1 when it performs no DNS update
    at all (and then S must be 0); O=1 exactly when our S differs from the client's S;
    E follows the client's encoding.
    """
    flags = FQDN_S if server_updates else FQDN_N
    if (flags ^ client_flags) & FQDN_S:
        flags |= FQDN_O
    return flags | (client_flags & FQDN_E)


def _fqdn_reply(raw: bytes, subnet: Subnet) -> bytes | None:
    """RFC 4702 §4: tell the client who updates DNS — the truth, from performs_dns_updates."""
    try:
        asked = decode_client_fqdn(raw)
    except MalformedPacket:
        return None
    flags = fqdn_flags(asked.flags, performs_dns_updates(subnet))
    try:
        return encode_client_fqdn(flags, asked.name, fully_qualified=asked.fully_qualified)
    except ValueError:
        return None


class _Template(NamedTuple):
    """A subnet's reply options encoded once (``DhcpMessage.option_runs``) with the header
    fields next_server/boot_file set, for every reply like it."""

    head: bytes  # 53, 54, the options in the client's PRL order
    rest: bytes  # the others; a client's own option 61 goes just before them
    siaddr: int
    sname: bytes
    file: bytes


def build(tx: Exchange, env: Env, mtype: int, yiaddr: int = 0, message: str | None = None) -> bytes:
    """The encoded reply of type ``mtype`` (OFFER, ACK or NAK) for ``tx``."""
    msg = tx.msg
    sid = tx.sid_override or env.server_id or tx.local_ip
    if mtype == NAK:
        reply = DhcpMessage.reply_to(msg, mtype, yiaddr=yiaddr, server_id=sid or None)
        if message:
            reply.options[MESSAGE] = message.encode()
        return reply.to_bytes()
    subnet = tx.subnet
    assert subnet is not None
    if tx.reservation is not None or tx.classes:
        subnet = scoped(env.plan, subnet, tx.classes, tx.reservation)  # reservation > class
    ropts = msg.options
    prl = ropts.get(PRL, b"")
    vendor = ropts.get(VENDOR_CLASS)
    inform = mtype == ACK and tx.mtype == INFORM
    res = tx.reservation
    hostname = (res.hostname if res is not None and res.hostname
                and (not prl or HOSTNAME in prl) else None)
    # Most replies differ from the subnet's previous one only in their header, 61 and 82:
    # those are put around the subnet's options encoded once (~5 µs less a reply).
    if hostname is None and FQDN not in ropts and not tx.lease_time:
        wire = _from_template(tx, subnet, mtype, inform, sid, prl, vendor, yiaddr)
        if wire is not None:
            return wire
    reply = DhcpMessage.reply_to(msg, mtype, yiaddr=yiaddr, server_id=sid or None)
    _subnet_part(reply, subnet, prl, vendor, inform)
    if tx.lease_time and not inform:  # a client's option 51 moved it (engine._ask_lease_time)
        reply.options.update(lease_options(tx.lease_time))
    if hostname is not None:
        reply.options[HOSTNAME] = hostname.encode()
    raw = ropts.get(FQDN)
    if raw is not None:
        echoed = _fqdn_reply(raw, subnet)
        if echoed is not None:
            reply.options[FQDN] = echoed
    return reply.to_bytes()


def _subnet_part(reply: DhcpMessage, subnet: Subnet, prl: bytes, vendor: bytes | None,
                 inform: bool) -> None:
    """What the subnet puts in a reply: its options, the lease's, siaddr/sname/file."""
    opts = reply.options
    opts.update(subnet_options(subnet, prl, vendor))
    if not inform:
        opts.update(subnet.lease_options)
    if subnet.next_server:
        _next_server(reply, subnet.next_server, prl)
    if subnet.boot_file:
        raw = subnet.boot_file.encode()
        if len(raw) < 128:
            reply.file = raw
        if len(raw) >= 128 or (prl and BOOTFILE in prl):
            opts[BOOTFILE] = raw


def _template(tx: Exchange, subnet: Subnet, mtype: int, inform: bool, sid: int, prl: bytes,
              vendor: bytes | None) -> _Template | None:
    """The subnet's encoded options for replies like this one, memoised on the subnet;
    None when they cannot be shared (a stored 61 or 82, a value needing RFC 3396)."""
    if not subnet.vendor_options:
        vendor = None
    key = (mtype, inform, sid, prl, vendor)
    memo = subnet.wire_memo
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]  # wire_memo holds DhcpReply
    reply = DhcpMessage.reply_to(tx.msg, mtype, server_id=sid or None)
    opts = reply.options
    opts.pop(CLIENT_ID, None)  # the client's own: put in per reply
    opts.pop(RELAY_AGENT, None)
    _subnet_part(reply, subnet, prl, vendor, inform)
    runs = None if CLIENT_ID in opts or RELAY_AGENT in opts else reply.option_runs(prl)
    made = None if runs is None else _Template(*runs, reply.siaddr, reply.sname, reply.file)
    if len(memo) >= _MEMO_MAX:
        memo.clear()  # bounded: clients choose the keys
    memo[key] = made
    return made


def _from_template(tx: Exchange, subnet: Subnet, mtype: int, inform: bool, sid: int,
                   prl: bytes, vendor: bytes | None, yiaddr: int) -> bytes | None:
    """The reply from the subnet's template, byte for byte what the general path builds;
    None when this one needs that path."""
    msg = tx.msg
    if CLIENT_ID in prl and CLIENT_ID in msg.options:
        return None  # 61 sent in PRL order: the general path places it
    t = _template(tx, subnet, mtype, inform, sid, prl, vendor)
    if t is None:
        return None
    return answer_bytes(msg, mtype, yiaddr, t.siaddr, t.sname, t.file, t.head, t.rest)


def _next_server(reply: DhcpMessage, value: str, prl: bytes) -> None:
    try:
        reply.siaddr = int(ipaddress.IPv4Address(value))
        return
    except ValueError:
        pass
    raw = value.encode()  # a name: sname (and option 66 when asked for)
    if len(raw) < 64:
        reply.sname = raw
    if len(raw) >= 64 or (prl and TFTP_SERVER in prl):
        reply.options[TFTP_SERVER] = raw
