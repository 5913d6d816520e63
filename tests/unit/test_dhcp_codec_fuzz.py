"""Property tests: the codec never fails with anything but MalformedPacket.

Also checks that whatever parses re-encodes to an equivalent message and that
the builder honours the size limit without corrupting the options it keeps.
"""

from __future__ import annotations

import struct

from hypothesis import event, given, settings
from hypothesis import strategies as st

from ipamd.dhcp.codec import PROTECTED_OPTIONS, DhcpMessage, MalformedPacket, parse
from tests.support.fuzz import FUZZ, mutated

# Generation-heavy strategies: fewer examples keep the file's runtime reasonable.
FUZZ_HEAVY = settings(FUZZ, max_examples=1000)

ACCESSORS = (
    "message_type",
    "mac",
    "hwaddr",
    "broadcast",
    "client_id",
    "requested_ip",
    "server_id",
    "subnet_selection",
    "parameter_request_list",
    "max_message_size",
    "hostname",
    "vendor_class",
    "user_class",
    "client_fqdn",
    "relay_agent_info",
)

HEADER_FIELDS = ("op", "htype", "hlen", "hops", "xid", "secs", "flags", "ciaddr", "yiaddr")


def _header(*, op: int = 1, hlen: int = 6, sname: bytes = b"", file: bytes = b"") -> bytes:
    return (
        struct.pack("!BBBBIHHIIII", op, 1, hlen, 0, 0x01020304, 0, 0x8000, 0, 0, 0, 0x0A000001)
        + bytes.fromhex("00163e5b8a2c").ljust(16, b"\0")
        + sname.ljust(64, b"\0")
        + file.ljust(128, b"\0")
        + b"\x63\x82\x53\x63"
    )


def _o(code: int, value: bytes) -> bytes:
    return bytes((code, len(value))) + value


SEEDS = [
    # Plain discover.
    _header()
    + _o(53, b"\x01")
    + _o(61, b"\x01\x00\x16\x3e\x5b\x8a\x2c")
    + _o(55, b"\x01\x03\x06\x0f\x2a")
    + _o(57, b"\x05\xdc")
    + _o(12, b"host")
    + b"\xff"
    + bytes(40),
    # Relayed request with 82, 81 (wire), 77, 118, 50, 54.
    _header()
    + _o(53, b"\x03")
    + _o(50, b"\x0a\x00\x00\x05")
    + _o(54, b"\x0a\x00\x00\x02")
    + _o(81, b"\x05\x00\x00\x04host\x07example\x00")
    + _o(77, b"\x04iPXE")
    + _o(118, b"\x0a\x00\x00\x00")
    + _o(82, b"\x01\x03abc\x02\x02xy\x05\x04\x0a\x00\x00\x00\x0b\x04\x0a\x00\x00\x01")
    + b"\xff",
    # Overloaded reply with a split option across options, file and sname.
    _header(
        op=2,
        file=_o(43, b"B" * 20) + _o(81, b"\x00\xff\xffascii.name") + b"\xff",
        sname=_o(43, b"C" * 10) + b"\xff",
    )
    + _o(53, b"\x05")
    + _o(52, b"\x03")
    + _o(43, b"A" * 255)
    + _o(43, b"A" * 30)
    + b"\xff",
]


def _exercise(data: bytes) -> None:
    """Parse + every accessor + rebuild; only MalformedPacket may escape."""
    try:
        msg = parse(data)
    except MalformedPacket as exc:
        event(f"drop:{exc.reason}")  # --hypothesis-show-statistics shows coverage
        return
    event("parsed")
    for name in ACCESSORS:
        try:
            getattr(msg, name)
        except MalformedPacket as exc:
            event(f"accessor:{exc.reason}")
    repr(msg)
    out = msg.to_bytes(max_size=65535)
    again = parse(out)
    assert {k: v for k, v in again.options.items() if k != 52} == {
        k: v for k, v in msg.options.items() if k != 52
    }
    for name in HEADER_FIELDS:
        assert getattr(again, name) == getattr(msg, name)
    assert again.chaddr == msg.chaddr
    assert (again.sname, again.file) == (msg.sname, msg.file)
    assert len(out) >= 300


@FUZZ
@given(st.binary(max_size=700))
def test_random_bytes(data: bytes) -> None:
    _exercise(data)


@FUZZ
@given(st.binary(min_size=0, max_size=400), st.integers(0, 2), st.integers(0, 20))
def test_valid_header_random_options(tail: bytes, op: int, hlen: int) -> None:
    _exercise(_header(op=op, hlen=hlen) + tail)
    _exercise(_header(op=op, hlen=hlen) + b"\x35\x01\x01" + tail)


# Codes with special handling get drawn often; the rest are arbitrary.
_CODES = st.one_of(
    st.sampled_from((0, 255, 52, 53, 50, 54, 55, 57, 12, 61, 77, 81, 82, 118, 43)),
    st.integers(0, 255),
)


@st.composite
def _option_area(draw: st.DrawFn, max_options: int) -> bytes:
    """Mostly well-formed option runs, with the odd lying length or raw junk."""
    out = bytearray()
    for _ in range(draw(st.integers(0, max_options))):
        code = draw(_CODES)
        if code in (0, 255):
            out.append(code)
            continue
        if code == 53:
            value = bytes((draw(st.integers(0, 20)),))
        elif code == 52:
            value = bytes((draw(st.integers(0, 4)),))
        else:
            value = draw(st.binary(max_size=40))
        length = len(value) if draw(st.integers(0, 9)) else draw(st.integers(0, 255))
        out += bytes((code, length)) + value
    if draw(st.booleans()):
        out += draw(st.binary(max_size=8))
    return bytes(out)


@FUZZ_HEAVY
@given(
    _option_area(12),
    _option_area(5),
    _option_area(3),
    st.sampled_from((1, 2)),
    st.sampled_from((0, 6, 6, 6, 16)),
    st.sampled_from((b"", b"\x35\x01\x03", b"\x35\x01\x03\x34\x01\x03")),
)
def test_structured_options(
    main: bytes, file: bytes, sname: bytes, op: int, hlen: int, prefix: bytes
) -> None:
    _exercise(_header(op=op, hlen=hlen, file=file[:128], sname=sname[:64]) + prefix + main)


@FUZZ
# Mostly hit the options area (from octet 240) so most mutants get past the header checks.
@given(mutated(SEEDS, (0, 1, 3, 4, 52, 53, 63, 81, 82, 0x80, 0xC0, 255), focus=240))
def test_mutated_valid_packets(data: bytes) -> None:
    _exercise(data)


def test_seeds_are_valid() -> None:
    for seed in SEEDS:
        msg = parse(seed)
        for name in ACCESSORS:
            getattr(msg, name)  # seeds are well-formed: nothing raises


_option_values = st.dictionaries(
    st.integers(1, 254).filter(lambda c: c not in (52, 53)),
    st.binary(max_size=600),
    max_size=20,
)


@FUZZ_HEAVY
@given(
    _option_values,
    st.integers(0, 2000),
    st.booleans(),
    st.booleans(),
    st.lists(st.integers(0, 255), max_size=30),
)
def test_builder_honours_limit(
    opts: dict[int, bytes], max_size: int, use_file: bool, use_sname: bool, prl: list[int]
) -> None:
    opts = {53: b"\x05", **opts}
    msg = DhcpMessage(
        xid=9,
        chaddr=b"\x00\x11\x22\x33\x44\x55",
        options=opts,
        file=b"boot" if use_file else b"",
        sname=b"srv" if use_sname else b"",
    )
    out = msg.to_bytes(max_size=max_size, prl=prl)
    back = parse(out)
    limit = max(max_size, 576) - 28
    protected = sum(
        len(v) + 2 * max(1, -(-len(v) // 255)) for c, v in opts.items() if c in PROTECTED_OPTIONS
    )
    if protected + 3 + 1 + 240 <= limit:
        assert len(out) <= limit
    assert len(out) >= 300
    for code, value in back.options.items():
        if code == 52:
            assert back.overload in (1, 2, 3)
            continue
        assert opts[code] == value  # kept options are intact, never truncated
    for code in PROTECTED_OPTIONS:
        if code in opts:
            assert back.options[code] == opts[code]
    if use_file:
        assert back.file == b"boot" and not back.overload & 1
    if use_sname:
        assert back.sname == b"srv" and not back.overload & 2
