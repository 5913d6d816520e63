"""DHCPv4 message parse/build (RFC 2131, 2132, 3396), pure and allocation-light.

The message itself is ``message.DhcpMessage`` and its options' layout ``packing``; this
module parses bytes into one, and encodes OFFER/ACK answers from options already encoded.

Representation choices (made for the server's hot path):

* Header addresses (``ciaddr``, ``yiaddr``, ``siaddr``, ``giaddr``) are ``int``:
  one ``struct`` call yields them, ``== 0`` tests are cheap, and the IPAM layer
  works on ints (``int(IPv4Address)``). Use ``options.ip_to_str`` to print.
* ``chaddr`` is the raw 16-byte field when parsed; only the first ``hlen``
  bytes are significant (``hwaddr`` / ``mac`` give the significant part).
* ``options`` is ``dict[int, bytes]`` of raw values; repeated instances of one
  code are already concatenated (RFC 3396) in the order options field, file,
  sname. Unknown codes are kept. Pad/end are never keys.
* ``sname`` / ``file`` are the NUL-terminated contents as bytes, or ``b""``
  when that field carried options (see ``overload``).
"""


from __future__ import annotations

import struct

from ipamd.dhcp.message import FULL_HEADER, DhcpMessage
from ipamd.dhcp.options import (
    ACK,
    BOOTREPLY,
    BOOTREQUEST,
    CLIENT_ID,
    MAGIC_COOKIE,
    MESSAGE_TYPE,
    MESSAGE_TYPE_MAX,
    MESSAGE_TYPE_MIN,
    OFFER,
    OVERLOAD,
    RELAY_AGENT,
    MalformedPacket,
)
from ipamd.dhcp.packing import (
    BOOTP_MIN_SIZE,
    DHCP_MIN_MAX_SIZE,
    FILE_END,
    FILE_OFF,
    HEADER_SIZE,
    IP_UDP_OVERHEAD,
    OPT_HDR,
    PROTECTED_OPTIONS,
    SNAME_END,
    SNAME_OFF,
    finish,
    options_room,
)

__all__ = [
    "BOOTP_MIN_SIZE",
    "DHCP_MIN_MAX_SIZE",
    "IP_UDP_OVERHEAD",
    "PROTECTED_OPTIONS",
    "DhcpMessage",
    "MalformedPacket",
    "answer_bytes",
    "parse",
]

# Header up to chaddr; sname/file are sliced only when non-empty.
_HEAD = struct.Struct("!BBBBIHHIIII16s")
_COOKIE = MAGIC_COOKIE.to_bytes(4, "big")


def _scan(data: bytes, pos: int, end: int, opts: dict[int, bytes]) -> None:
    """Collect options from data[pos:end] into opts (RFC 3396 concatenation)."""
    while pos < end:
        code = data[pos]
        if code == 0:
            pos += 1
            continue
        if code == 255:
            return
        if pos + 1 >= end:
            raise MalformedPacket("truncated_option", f"option {code} has no length")
        nxt = pos + 2 + data[pos + 1]
        if nxt > end:
            raise MalformedPacket("truncated_option", f"option {code} runs past its field")
        if code in opts:
            opts[code] += data[pos + 2 : nxt]
        else:
            opts[code] = data[pos + 2 : nxt]
        pos = nxt


def _cstr(data: bytes, start: int, stop: int) -> bytes:
    if not data[start]:
        return b""  # the usual case: field unused
    field = data[start:stop]
    nul = field.find(0)
    return field if nul < 0 else field[:nul]


def parse(data: bytes | bytearray | memoryview) -> DhcpMessage:
    """Decode one DHCPv4 message; raises only :class:`MalformedPacket`.

    Accepts BOOTREQUEST and BOOTREPLY (the server must check ``op`` itself).
    A missing end option is tolerated (the data simply ends).
    """
    if type(data) is not bytes:
        data = bytes(data)
    n = len(data)
    if n < HEADER_SIZE:
        raise MalformedPacket("too_short", f"{n} bytes")
    (op, htype, hlen, hops, xid, secs, flags, ciaddr, yiaddr, siaddr, giaddr, chaddr) = (
        _HEAD.unpack_from(data)
    )
    if op != BOOTREQUEST and op != BOOTREPLY:
        raise MalformedPacket("bad_op", str(op))
    if hlen > 16:
        raise MalformedPacket("bad_hlen", str(hlen))
    if data[236:240] != _COOKIE:
        raise MalformedPacket("bad_cookie")

    opts: dict[int, bytes] = {}
    _scan(data, HEADER_SIZE, n, opts)

    overload = 0
    ov = opts.get(OVERLOAD)
    if ov is not None:
        if len(ov) != 1 or not 1 <= ov[0] <= 3:
            raise MalformedPacket("bad_overload", ov.hex())
        overload = ov[0]
        # RFC 3396: concatenation order is options, file, sname.
        if overload & 1:
            _scan(data, FILE_OFF, FILE_END, opts)
        if overload & 2:
            _scan(data, SNAME_OFF, SNAME_END, opts)
        opts[OVERLOAD] = ov  # a stray 52 inside file/sname must not change meaning

    mt = opts.get(MESSAGE_TYPE)
    if mt is None:
        raise MalformedPacket("no_message_type")
    if len(mt) != 1 or not MESSAGE_TYPE_MIN <= mt[0] <= MESSAGE_TYPE_MAX:
        raise MalformedPacket("bad_message_type", mt.hex())

    m = DhcpMessage(
        op=op, htype=htype, hlen=hlen, hops=hops, xid=xid, secs=secs, flags=flags,
        ciaddr=ciaddr, yiaddr=yiaddr, siaddr=siaddr, giaddr=giaddr, chaddr=chaddr,
        sname=b"" if overload & 2 else _cstr(data, SNAME_OFF, SNAME_END),
        file=b"" if overload & 1 else _cstr(data, FILE_OFF, FILE_END),
        options=opts,
    )
    m.overload = overload
    return m


def answer_bytes(request: DhcpMessage, message_type: int, yiaddr: int, siaddr: int,
                 sname: bytes, file: bytes, head: bytes, rest: bytes) -> bytes | None:
    """An OFFER or ACK to ``request`` as ``reply_to(...).to_bytes()`` encodes it, from its
    options already encoded in order (``option_runs``: ``head``, ``rest``) when the request's
    PRL does not ask for 61. The client's own 61 goes between the runs (first of the
    others, as there), 82 after them. None when that needs the slow path (too big, 61 or
    82 over 255 bytes): the caller builds the message."""
    if message_type not in (OFFER, ACK):
        raise ValueError("answer_bytes encodes OFFER and ACK only")
    ropts = request.options
    cid = ropts.get(CLIENT_ID)
    middle = b""
    if cid is not None:
        if len(cid) > 255:
            return None
        middle = OPT_HDR(CLIENT_ID, len(cid)) + cid
    header = FULL_HEADER.pack(
        BOOTREPLY, request.htype, request.hlen, 0, request.xid, 0, request.flags,
        request.ciaddr if message_type == ACK else 0, yiaddr, siaddr, request.giaddr,
        request.chaddr, sname, file, MAGIC_COOKIE,
    )
    return finish(header, (head, middle, rest), ropts.get(RELAY_AGENT),
                  options_room(request.max_message_size))

