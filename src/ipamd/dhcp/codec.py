"""DHCPv4 message parse/build (RFC 2131, 2132, 3396), pure and allocation-light.

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
from collections.abc import Iterable

from ipamd.dhcp.options import (
    ACK,
    BOOTREPLY,
    BOOTREQUEST,
    CLIENT_ID,
    FLAG_BROADCAST,
    FQDN,
    HOSTNAME,
    HTYPE_ETHER,
    LEASE_TIME,
    MAGIC_COOKIE,
    MAX_SIZE,
    MESSAGE_TYPE,
    MESSAGE_TYPE_MAX,
    MESSAGE_TYPE_MIN,
    NAK,
    OFFER,
    OVERLOAD,
    OVERLOAD_FILE,
    OVERLOAD_SNAME,
    PRL,
    RELAY_AGENT,
    REQUESTED_IP,
    ROUTER,
    SERVER_ID,
    SUBNET_MASK,
    SUBNET_SELECTION,
    USER_CLASS,
    VENDOR_CLASS,
    ClientFqdn,
    MalformedPacket,
    decode_client_fqdn,
    decode_ip,
    decode_str,
    decode_user_class,
)
from ipamd.dhcp.relay_agent import RelayAgentInfo, parse_relay_agent_info

__all__ = [
    "BOOTP_MIN_SIZE",
    "DHCP_MIN_MAX_SIZE",
    "IP_UDP_OVERHEAD",
    "PROTECTED_OPTIONS",
    "DhcpMessage",
    "MalformedPacket",
    "parse",
]

# Header up to chaddr; sname/file are sliced only when non-empty.
_HEAD = struct.Struct("!BBBBIHHIIII16s")
# Full fixed header + magic cookie, for building.
_FULL = struct.Struct("!BBBBIHHIIII16s64s128sI")
_COOKIE = MAGIC_COOKIE.to_bytes(4, "big")
_OPT_HDR = struct.Struct("BB").pack

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
_SPECIAL = frozenset({0, OVERLOAD, MESSAGE_TYPE, SERVER_ID, RELAY_AGENT, 255})

_END = b"\xff"
_PADS = [bytes(n) for n in range(BOOTP_MIN_SIZE - HEADER_SIZE + 1)]


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


def _option_order(opts: dict[int, bytes], prl: bytes | Iterable[int]) -> list[int]:
    """53, 54, then what the client asked for in its order, the rest, 82 last."""
    order: list[int] = []
    if MESSAGE_TYPE in opts:
        order.append(MESSAGE_TYPE)
    if SERVER_ID in opts:
        order.append(SERVER_ID)
    for code in prl:
        if code in opts and code not in _SPECIAL and code not in order:
            order.append(code)
    for code in opts:
        if code not in _SPECIAL and code not in order:
            order.append(code)
    if RELAY_AGENT in opts:
        order.append(RELAY_AGENT)
    return order


def _instances(code: int, value: bytes) -> list[bytes]:
    """Encoded option, split into <=255-byte instances (RFC 3396)."""
    n = len(value)
    if n <= 255:
        return [_OPT_HDR(code, n) + value]
    return [_OPT_HDR(code, len(value[i : i + 255])) + value[i : i + 255] for i in range(0, n, 255)]


def options_room(size_limit: int | None) -> int:
    """Bytes for options and end in a reply to a client whose limit (option 57) is this."""
    limit = size_limit if size_limit is not None and size_limit >= DHCP_MIN_MAX_SIZE \
        else DHCP_MIN_MAX_SIZE
    return limit - IP_UDP_OVERHEAD - HEADER_SIZE


def _finish(header: bytes, runs: tuple[bytes, ...], relay_agent: bytes | None,
            room: int) -> bytes | None:
    """``header`` (with the cookie), the encoded options, 82 echoed, end, padding to 300
    bytes; None when it does not fit ``room`` or 82 needs splitting (the slow path's)."""
    total = sum(map(len, runs))
    tail = _END
    if relay_agent is not None:
        if len(relay_agent) > 255:
            return None
        tail = _OPT_HDR(RELAY_AGENT, len(relay_agent)) + relay_agent + _END
        total += len(relay_agent) + 2
    if total >= room:  # >= : the end option needs one more byte
        return None
    pad = BOOTP_MIN_SIZE - HEADER_SIZE - 1 - total
    return b"".join((header, *runs, tail, _PADS[pad] if pad > 0 else b""))


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
        middle = _OPT_HDR(CLIENT_ID, len(cid)) + cid
    header = _FULL.pack(
        BOOTREPLY, request.htype, request.hlen, 0, request.xid, 0, request.flags,
        request.ciaddr if message_type == ACK else 0, yiaddr, siaddr, request.giaddr,
        request.chaddr, sname, file, MAGIC_COOKIE,
    )
    return _finish(header, (head, middle, rest), ropts.get(RELAY_AGENT),
                   options_room(request.max_message_size))


class DhcpMessage:
    """One DHCPv4 message (request or reply). See the module docstring for types.

    Non-wire fields used by :meth:`to_bytes`:

    * ``overload``: set by :func:`parse` (0..3, which fields carried options);
      ignored when building (the builder decides overload itself).
    * ``prl_hint``: the client's parameter request list, to order reply options.
    * ``size_limit``: the client's maximum message size (option 57 semantics:
      whole IP datagram); ``None`` means 576.
    """

    __slots__ = (
        "chaddr",
        "ciaddr",
        "file",
        "flags",
        "giaddr",
        "hlen",
        "hops",
        "htype",
        "op",
        "options",
        "overload",
        "prl_hint",
        "secs",
        "siaddr",
        "size_limit",
        "sname",
        "xid",
        "yiaddr",
    )

    op: int
    htype: int
    hlen: int
    hops: int
    xid: int
    secs: int
    flags: int
    ciaddr: int
    yiaddr: int
    siaddr: int
    giaddr: int
    chaddr: bytes
    sname: bytes
    file: bytes
    options: dict[int, bytes]
    overload: int
    prl_hint: bytes | Iterable[int]
    size_limit: int | None

    def __init__(
        self,
        *,
        op: int = BOOTREPLY,
        htype: int = HTYPE_ETHER,
        hlen: int = 6,
        hops: int = 0,
        xid: int = 0,
        secs: int = 0,
        flags: int = 0,
        ciaddr: int = 0,
        yiaddr: int = 0,
        siaddr: int = 0,
        giaddr: int = 0,
        chaddr: bytes = b"",
        sname: bytes = b"",
        file: bytes = b"",
        options: dict[int, bytes] | None = None,
        prl_hint: bytes | Iterable[int] = b"",
        size_limit: int | None = None,
    ) -> None:
        self.op = op
        self.htype = htype
        self.hlen = hlen
        self.hops = hops
        self.xid = xid
        self.secs = secs
        self.flags = flags
        self.ciaddr = ciaddr
        self.yiaddr = yiaddr
        self.siaddr = siaddr
        self.giaddr = giaddr
        self.chaddr = chaddr
        self.sname = sname
        self.file = file
        self.options = {} if options is None else options
        self.overload = 0
        self.prl_hint = prl_hint
        self.size_limit = size_limit

    # ------------------------------------------------------------------ construction

    @classmethod
    def reply_to(
        cls,
        request: DhcpMessage,
        message_type: int,
        *,
        yiaddr: int = 0,
        siaddr: int = 0,
        server_id: int | None = None,
    ) -> DhcpMessage:
        """Skeleton reply per RFC 2131 table 3.

        Copies xid, flags, giaddr, htype, hlen, chaddr; hops and secs are 0;
        ciaddr is copied only for ACK (RENEW/REBIND/INFORM answers); yiaddr is
        forced to 0 for NAK, and NAKs through a relay get the broadcast flag
        (RFC 2131 4.3.2). Option 82 is echoed raw (RFC 3046 2.2) and option 61
        too (RFC 6842). The request's PRL and option 57 are remembered so
        ``to_bytes()`` orders and sizes the reply without arguments.
        """
        opts: dict[int, bytes] = {MESSAGE_TYPE: bytes((message_type,))}
        if server_id is not None:
            opts[SERVER_ID] = server_id.to_bytes(4, "big")
        ropts = request.options
        cid = ropts.get(CLIENT_ID)
        if cid is not None:
            opts[CLIENT_ID] = cid
        rai = ropts.get(RELAY_AGENT)
        if rai is not None:
            opts[RELAY_AGENT] = rai
        flags = request.flags
        if message_type == NAK:
            yiaddr = 0
            if request.giaddr:
                flags |= FLAG_BROADCAST
        return cls(
            op=BOOTREPLY, htype=request.htype, hlen=request.hlen, xid=request.xid, flags=flags,
            ciaddr=request.ciaddr if message_type == ACK else 0, yiaddr=yiaddr, siaddr=siaddr,
            giaddr=request.giaddr, chaddr=request.chaddr, options=opts,
            prl_hint=ropts.get(PRL, b""), size_limit=request.max_message_size,
        )

    # ------------------------------------------------------------------ building

    def to_bytes(
        self, max_size: int | None = None, prl: bytes | Iterable[int] | None = None
    ) -> bytes:
        """Encode. ``max_size``/``prl`` override ``size_limit``/``prl_hint``.

        Order: 53, 54, options in ``prl`` order, remaining options in dict
        order, 82 last (just before end). Values over 255 bytes are split
        (RFC 3396). The result fits ``max(max_size, 576) - 28`` bytes: if not,
        options overflow into unused file/sname (option 52), then options that
        still do not fit are dropped, lowest priority (latest in that order)
        first. ``PROTECTED_OPTIONS`` are never dropped; if they alone exceed
        the limit the message is allowed to exceed it. Padded to 300 bytes.
        Option 52 in ``options`` is ignored (the builder owns overload).
        """
        opts = self.options
        room = options_room(self.size_limit if max_size is None else max_size)
        if prl is None:
            prl = self.prl_hint

        # Fast path: every value is <= 255 bytes and everything fits the options field.
        runs = self.option_runs(prl)
        if runs is not None:
            wire = _finish(self._header(self.sname, self.file), runs, opts.get(RELAY_AGENT), room)
            if wire is not None:
                return wire
        return self._to_bytes_slow(prl, room)

    def option_runs(self, prl: bytes | Iterable[int]) -> tuple[bytes, bytes] | None:
        """The options in wire order, as two runs: 53, 54 and those in ``prl`` order; then
        the others in dict order. 82 (always last), end and padding are not included.
        None when a value is over 255 bytes (RFC 3396 splitting: the slow path's).

        ``reply.build`` keeps a reply's runs for the next one like it and puts a client's
        own option 61 between them, where this order puts it (first of the others)."""
        opts = self.options
        head: list[bytes] = []
        v = opts.get(MESSAGE_TYPE)
        if v is not None:
            head.append(_OPT_HDR(MESSAGE_TYPE, len(v)) + v)
        v = opts.get(SERVER_ID)
        if v is not None:
            head.append(_OPT_HDR(SERVER_ID, len(v)) + v)
        emitted: set[int] = set()
        for code in prl:
            if code in opts and code not in _SPECIAL and code not in emitted:
                emitted.add(code)
                v = opts[code]
                if len(v) > 255:
                    return None
                head.append(_OPT_HDR(code, len(v)) + v)
        rest: list[bytes] = []
        for code, v in opts.items():
            if code not in _SPECIAL and code not in emitted:
                if len(v) > 255:
                    return None
                rest.append(_OPT_HDR(code, len(v)) + v)
        return b"".join(head), b"".join(rest)

    def _header(self, sname: bytes, file: bytes) -> bytes:
        if len(sname) > 64 or len(file) > 128:
            raise ValueError("sname is limited to 64 bytes and file to 128")
        return _FULL.pack(
            self.op,
            self.htype,
            self.hlen,
            self.hops,
            self.xid,
            self.secs,
            self.flags,
            self.ciaddr,
            self.yiaddr,
            self.siaddr,
            self.giaddr,
            self.chaddr,
            sname,
            file,
            MAGIC_COOKIE,
        )

    def _to_bytes_slow(self, prl: bytes | Iterable[int], room: int) -> bytes:
        """Long options (RFC 3396 split) and/or not enough room: overload, then drop."""
        opts = self.options
        order = _option_order(opts, prl)
        encoded = {code: _instances(code, opts[code]) for code in order}
        total = sum(len(inst) for insts in encoded.values() for inst in insts)
        if total < room:
            body = [inst for code in order for inst in encoded[code]]
            body.append(_END)
            pad = BOOTP_MIN_SIZE - HEADER_SIZE - 1 - total
            if pad > 0:
                body.append(_PADS[pad])
            return self._header(self.sname, self.file) + b"".join(body)

        sname = self.sname
        file = self.file
        # Region 0 is the options field; file then sname follow when unused,
        # which is also the RFC 3396 concatenation order. Each needs an end.
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

        placed: dict[int, list[tuple[int, bytes]]] = {}
        # Protected options claim space first; the rest keep priority order.
        ranked = [c for c in order if c in PROTECTED_OPTIONS]
        ranked += [c for c in order if c not in PROTECTED_OPTIONS]
        nregions = len(free)
        for code in ranked:
            insts = encoded[code]
            trial = free[:]
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
                insts.append(_END)
                if kind == OVERLOAD_FILE:
                    file = b"".join(insts)
                else:
                    sname = b"".join(insts)
        main = regions[0]
        if overload:
            main.insert(overload_at, _OPT_HDR(OVERLOAD, 1) + bytes((overload,)))
        main.append(_END)
        joined = b"".join(main)
        pad = BOOTP_MIN_SIZE - HEADER_SIZE - len(joined)
        return self._header(sname, file) + joined + (_PADS[pad] if pad > 0 else b"")

    # ------------------------------------------------------------------ accessors
    # The pipeline stages read options through these (one decoding, one error per option).

    @property
    def message_type(self) -> int | None:
        v = self.options.get(MESSAGE_TYPE)
        return v[0] if v else None

    @property
    def hwaddr(self) -> bytes:
        """The significant part of chaddr (first ``hlen`` bytes)."""
        return self.chaddr[: self.hlen]

    @property
    def mac(self) -> str | None:
        """'aa:bb:cc:dd:ee:ff' for Ethernet (htype 1, hlen 6), else None."""
        if self.htype == HTYPE_ETHER and self.hlen == 6 and len(self.chaddr) >= 6:
            return self.chaddr[:6].hex(":")
        return None

    @property
    def broadcast(self) -> bool:
        return bool(self.flags & FLAG_BROADCAST)

    @broadcast.setter
    def broadcast(self, value: bool) -> None:
        if value:
            self.flags |= FLAG_BROADCAST
        else:
            self.flags &= ~FLAG_BROADCAST & 0xFFFF

    @property
    def client_id(self) -> bytes | None:
        """Option 61 raw (type byte included)."""
        return self.options.get(CLIENT_ID)

    @property
    def requested_ip(self) -> int | None:
        """Option 50; raises MalformedPacket('bad_option_length') if not 4 bytes."""
        v = self.options.get(REQUESTED_IP)
        return None if v is None else decode_ip(v)

    @property
    def server_id(self) -> int | None:
        """Option 54; raises MalformedPacket('bad_option_length') if not 4 bytes."""
        v = self.options.get(SERVER_ID)
        return None if v is None else decode_ip(v)

    @property
    def subnet_selection(self) -> int | None:
        """Option 118 (RFC 3011); raises MalformedPacket('bad_option_length')."""
        v = self.options.get(SUBNET_SELECTION)
        return None if v is None else decode_ip(v)

    @property
    def parameter_request_list(self) -> bytes:
        """Option 55 as bytes (iterate for int codes); b'' when absent."""
        return self.options.get(PRL, b"")

    @property
    def max_message_size(self) -> int | None:
        """Option 57 clamped to >= 576; None if absent or not 2 bytes (ignored)."""
        v = self.options.get(MAX_SIZE)
        if v is None or len(v) != 2:
            return None
        size = (v[0] << 8) | v[1]
        return size if size > DHCP_MIN_MAX_SIZE else DHCP_MIN_MAX_SIZE

    @property
    def hostname(self) -> str | None:
        """Option 12, decoded leniently (UTF-8 with replacement, NULs stripped)."""
        v = self.options.get(HOSTNAME)
        return None if v is None else decode_str(v)

    @property
    def vendor_class(self) -> bytes | None:
        """Option 60 raw (e.g. b'PXEClient:Arch:00007:...', b'MSFT 5.0')."""
        return self.options.get(VENDOR_CLASS)

    @property
    def user_class(self) -> list[bytes] | None:
        """Option 77 instances (RFC 3004); a bare string is one instance."""
        v = self.options.get(USER_CLASS)
        return None if v is None else decode_user_class(v)

    @property
    def client_fqdn(self) -> ClientFqdn | None:
        """Option 81 (RFC 4702); raises MalformedPacket('bad_fqdn')."""
        v = self.options.get(FQDN)
        return None if v is None else decode_client_fqdn(v)

    @property
    def relay_agent_info(self) -> RelayAgentInfo | None:
        """Option 82 parsed; raises MalformedPacket('bad_relay_agent')."""
        v = self.options.get(RELAY_AGENT)
        return None if v is None else parse_relay_agent_info(v)

    def __repr__(self) -> str:
        mt = self.message_type
        return (
            f"DhcpMessage(op={self.op}, type={mt}, xid={self.xid:#010x}, "
            f"chaddr={self.hwaddr.hex(':')}, ciaddr={self.ciaddr:#x}, "
            f"yiaddr={self.yiaddr:#x}, giaddr={self.giaddr:#x}, "
            f"options={sorted(self.options)})"
        )
