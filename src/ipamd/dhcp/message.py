"""The DHCPv4 message (RFC 2131 §2): its fields, its options, and its encoding.

codec.py parses bytes into a ``DhcpMessage`` and says how its fields are represented;
packing.py lays its options out on the wire.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from ipamd.dhcp.options import (
    ACK,
    BOOTREPLY,
    CLIENT_ID,
    FLAG_BROADCAST,
    FQDN,
    HOSTNAME,
    HTYPE_ETHER,
    MAGIC_COOKIE,
    MAX_SIZE,
    MESSAGE_TYPE,
    NAK,
    PRL,
    RELAY_AGENT,
    REQUESTED_IP,
    SERVER_ID,
    SUBNET_SELECTION,
    USER_CLASS,
    VENDOR_CLASS,
    ClientFqdn,
    decode_client_fqdn,
    decode_ip,
    decode_str,
    decode_user_class,
)
from ipamd.dhcp.packing import (
    DHCP_MIN_MAX_SIZE,
    OPT_HDR,
    SPECIAL,
    finish,
    options_room,
    slow_layout,
)
from ipamd.dhcp.relay_agent import RelayAgentInfo, parse_relay_agent_info

# The whole fixed header with sname, file and the magic cookie (RFC 2131 §2, figure 1).
FULL_HEADER = struct.Struct("!BBBBIHHIIII16s64s128sI")

class DhcpMessage:
    """One DHCPv4 message (request or reply). See codec.py's docstring for types.

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
            wire = finish(self._header(self.sname, self.file), runs, opts.get(RELAY_AGENT), room)
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
            head.append(OPT_HDR(MESSAGE_TYPE, len(v)) + v)
        v = opts.get(SERVER_ID)
        if v is not None:
            head.append(OPT_HDR(SERVER_ID, len(v)) + v)
        emitted: set[int] = set()
        for code in prl:
            if code in opts and code not in SPECIAL and code not in emitted:
                emitted.add(code)
                v = opts[code]
                if len(v) > 255:
                    return None
                head.append(OPT_HDR(code, len(v)) + v)
        rest: list[bytes] = []
        for code, v in opts.items():
            if code not in SPECIAL and code not in emitted:
                if len(v) > 255:
                    return None
                rest.append(OPT_HDR(code, len(v)) + v)
        return b"".join(head), b"".join(rest)

    def _header(self, sname: bytes, file: bytes) -> bytes:
        if len(sname) > 64 or len(file) > 128:
            raise ValueError("sname is limited to 64 bytes and file to 128")
        return FULL_HEADER.pack(
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
        """Long options (RFC 3396 split) and/or not enough room: packing.slow_layout."""
        sname, file, options = slow_layout(self.options, prl, room, self.sname, self.file)
        return self._header(sname, file) + options

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
