"""A DHCPv4 reply's options laid out on the wire (RFC 2131 §3, RFC 2132, RFC 3396).

The fast path (``finish``) joins options already encoded in order when they fit the options
field. The slow path (``slow_layout``) splits values over 255 bytes into instances (RFC 3396),
overloads the unused ``file`` and ``sname`` fields (option 52, RFC 2132 §9.3) and, when even
that is not enough, drops the options of lowest priority. codec.py and message.py use both.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from ipamd.dhcp.options import (
    LEASE_TIME,
    MESSAGE_TYPE,
    OVERLOAD,
    OVERLOAD_FILE,
    OVERLOAD_SNAME,
    RELAY_AGENT,
    ROUTER,
    SERVER_ID,
    SUBNET_MASK,
)

OPT_HDR = struct.Struct("BB").pack

HEADER_SIZE = 240  # fixed header (236) + magic cookie
SNAME_OFF, SNAME_END = 44, 108
FILE_OFF, FILE_END = 108, 236

BOOTP_MIN_SIZE = 300  # RFC 1542: some relays/clients drop shorter BOOTP messages
DHCP_MIN_MAX_SIZE = 576  # RFC 2131/2132: every client accepts 576-byte datagrams
IP_UDP_OVERHEAD = 28  # option 57 counts the IP (20) and UDP (8) headers too

# Never dropped for lack of space: type, server id, lease time, mask, router, relay info.
PROTECTED_OPTIONS = frozenset(
    {MESSAGE_TYPE, SERVER_ID, LEASE_TIME, SUBNET_MASK, ROUTER, RELAY_AGENT}
)
# Placed explicitly by the builder, or never emitted from ``options``.
SPECIAL = frozenset({0, OVERLOAD, MESSAGE_TYPE, SERVER_ID, RELAY_AGENT, 255})

END = b"\xff"
PADS = [bytes(n) for n in range(BOOTP_MIN_SIZE - HEADER_SIZE + 1)]


def options_room(size_limit: int | None) -> int:
    """Bytes for options and end in a reply to a client whose limit (option 57) is this."""
    limit = size_limit if size_limit is not None and size_limit >= DHCP_MIN_MAX_SIZE \
        else DHCP_MIN_MAX_SIZE
    return limit - IP_UDP_OVERHEAD - HEADER_SIZE


def finish(header: bytes, runs: tuple[bytes, ...], relay_agent: bytes | None,
           room: int) -> bytes | None:
    """``header`` (with the cookie), the encoded options, 82 echoed, end, padding to 300
    bytes; None when it does not fit ``room`` or 82 needs splitting (the slow path's)."""
    total = sum(map(len, runs))
    tail = END
    if relay_agent is not None:
        if len(relay_agent) > 255:
            return None
        tail = OPT_HDR(RELAY_AGENT, len(relay_agent)) + relay_agent + END
        total += len(relay_agent) + 2
    if total >= room:  # >= : the end option needs one more byte
        return None
    pad = BOOTP_MIN_SIZE - HEADER_SIZE - 1 - total
    return b"".join((header, *runs, tail, PADS[pad] if pad > 0 else b""))


def option_order(opts: dict[int, bytes], prl: bytes | Iterable[int]) -> list[int]:
    """53, 54, then what the client asked for in its order, the rest, 82 last."""
    order: list[int] = []
    if MESSAGE_TYPE in opts:
        order.append(MESSAGE_TYPE)
    if SERVER_ID in opts:
        order.append(SERVER_ID)
    for code in prl:
        if code in opts and code not in SPECIAL and code not in order:
            order.append(code)
    for code in opts:
        if code not in SPECIAL and code not in order:
            order.append(code)
    if RELAY_AGENT in opts:
        order.append(RELAY_AGENT)
    return order


def instances(code: int, value: bytes) -> list[bytes]:
    """Encoded option, split into <=255-byte instances (RFC 3396)."""
    n = len(value)
    if n <= 255:
        return [OPT_HDR(code, n) + value]
    return [OPT_HDR(code, len(value[i : i + 255])) + value[i : i + 255] for i in range(0, n, 255)]


def slow_layout(opts: dict[int, bytes], prl: bytes | Iterable[int], room: int, sname: bytes,
                file: bytes) -> tuple[bytes, bytes, bytes]:
    """Long options (RFC 3396 split) and/or not enough room: overload, then drop.

    Returns the ``sname`` and ``file`` fields (options overloaded into them, or as given)
    and the options field: options, end and padding to 300 bytes."""
    order = option_order(opts, prl)
    encoded = {code: instances(code, opts[code]) for code in order}
    total = sum(len(inst) for insts in encoded.values() for inst in insts)
    if total < room:
        body = [inst for code in order for inst in encoded[code]]
        body.append(END)
        pad = BOOTP_MIN_SIZE - HEADER_SIZE - 1 - total
        if pad > 0:
            body.append(PADS[pad])
        return sname, file, b"".join(body)
    kinds, free = _regions(room, sname, file)
    placed = _place(order, encoded, free)
    return _assemble(order, placed, kinds, sname, file)


def _regions(room: int, sname: bytes, file: bytes) -> tuple[list[int], list[int]]:
    """Where options may go (0: the options field; then file, sname when unused, which is
    also the RFC 3396 concatenation order) and the bytes free in each, an end kept back."""
    kinds = [0]
    free = [room - 1]
    if not file:
        kinds.append(OVERLOAD_FILE)
        free.append(FILE_END - FILE_OFF - 1)
    if not sname:
        kinds.append(OVERLOAD_SNAME)
        free.append(SNAME_END - SNAME_OFF - 1)
    if len(kinds) > 1:
        free[0] -= 3  # the overload option itself
    return kinds, free


def _place(order: list[int], encoded: dict[int, list[bytes]],
           free: list[int]) -> dict[int, list[tuple[int, bytes]]]:
    """Each option's instances by region; an option that cannot fit is left out."""
    placed: dict[int, list[tuple[int, bytes]]] = {}
    # Protected options claim space first; the rest keep priority order.
    ranked = [c for c in order if c in PROTECTED_OPTIONS]
    ranked += [c for c in order if c not in PROTECTED_OPTIONS]
    nregions = len(free)
    for code in ranked:
        insts = encoded[code]
        trial = free[:]
        if len(insts) > 1 and code not in PROTECTED_OPTIONS:
            # A long value: its instances sized to the regions' room, or left out. (A long
            # protected one, a relay's 82, keeps to whole instances: relays read the field.)
            spread = _spread(code, insts, trial)
            if spread is not None:
                free = trial
                placed[code] = spread
            continue
        where: list[tuple[int, bytes]] = []
        region = 0
        for inst in insts:
            size = len(inst)
            # Instances of one code must not go backwards across regions,
            # or RFC 3396 concatenation would reorder the value.
            while region < nregions and trial[region] < size:
                region += 1
            if region == nregions:
                break
            trial[region] -= size
            where.append((region, inst))
        else:
            free = trial
            placed[code] = where
            continue
        if code in PROTECTED_OPTIONS:
            # A slightly oversized reply beats one without e.g. a message type.
            free[0] -= sum(map(len, insts))
            placed[code] = [(0, inst) for inst in insts]
        # else: dropped, it cannot fit even without any lower-priority option
    return placed


def _spread(code: int, insts: list[bytes], free: list[int]) -> list[tuple[int, bytes]] | None:
    """A value over 255 octets laid over the regions in their concatenation order (options,
    file, sname: RFC 3396 §7), each instance as long as its region's room allows (RFC 3396
    lets a value be split at any octet): beside the usual options a 576-octet reply then
    carries ~440 octets of it, where whole 255-octet instances fit ~380 (the second must
    fit ``file``'s 127). ``free`` is taken from; None if it cannot fit."""
    value = b"".join([inst[2:] for inst in insts])
    where: list[tuple[int, bytes]] = []
    region, pos, nregions = 0, 0, len(free)
    while pos < len(value):
        while region < nregions and free[region] < 3:  # an instance needs code, length, 1
            region += 1
        if region == nregions:
            return None
        n = min(255, free[region] - 2, len(value) - pos)
        free[region] -= n + 2
        where.append((region, OPT_HDR(code, n) + value[pos : pos + n]))
        pos += n
    return where


def _assemble(order: list[int], placed: dict[int, list[tuple[int, bytes]]], kinds: list[int],
              sname: bytes, file: bytes) -> tuple[bytes, bytes, bytes]:
    """The regions' bytes: option 52 after 53/54 when file or sname carry options."""
    regions: list[list[bytes]] = [[] for _ in kinds]
    overload_at = 0
    for code in order:
        for region, inst in placed.get(code, ()):
            regions[region].append(inst)
        if code in (MESSAGE_TYPE, SERVER_ID):
            overload_at = len(regions[0])
    overload = 0
    for kind, insts in zip(kinds, regions, strict=True):
        if kind and insts:
            overload |= kind
            insts.append(END)
            if kind == OVERLOAD_FILE:
                file = b"".join(insts)
            else:
                sname = b"".join(insts)
    main = regions[0]
    if overload:
        main.insert(overload_at, OPT_HDR(OVERLOAD, 1) + bytes((overload,)))
    main.append(END)
    joined = b"".join(main)
    pad = BOOTP_MIN_SIZE - HEADER_SIZE - len(joined)
    return sname, file, joined + (PADS[pad] if pad > 0 else b"")
