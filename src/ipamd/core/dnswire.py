"""Domain names in DNS wire format (RFC 1035 §3.1), uncompressed, as DHCP options carry them.

DHCPv6 (RFC 8415 §10) and the DHCP options built from a subnet's settings store names as a
sequence of length-prefixed labels ended by the zero-length root label, never compressed.
A name is handled as a tuple of raw labels (``bytes``): what a client sends round-trips
exactly, whatever octets its labels hold; ``text`` renders one for people and logs with the
escapes of RFC 1035 §5.1.

Decoding raises ``ValueError`` with a short message; a protocol codec turns it into its own
countable drop reason.
"""

from __future__ import annotations

from collections.abc import Sequence

LABEL_MAX = 63  # RFC 1035 §2.3.4; lengths of 64..255 are compression pointers or reserved
NAME_MAX = 255  # octets on the wire, length octets and the root label included

Labels = tuple[bytes, ...]


def wire_length(labels: Sequence[bytes], absolute: bool = True) -> int:
    return sum(len(label) + 1 for label in labels) + (1 if absolute else 0)


def encode(labels: Sequence[bytes], absolute: bool = True) -> bytes:
    """The wire form of a name; ``absolute=False`` leaves out the root label (a partial name,
    RFC 4704 §4.2). ValueError for an empty or over-long label, or a name over 255 octets."""
    out = bytearray()
    for label in labels:
        if not 1 <= len(label) <= LABEL_MAX:
            raise ValueError(f"a DNS label is 1 to {LABEL_MAX} octets; got {len(label)}")
        out.append(len(label))
        out += label
    if absolute:
        out.append(0)
    if len(out) > NAME_MAX:
        raise ValueError(f"a domain name is at most {NAME_MAX} octets on the wire")
    return bytes(out)


def decode(data: bytes, pos: int = 0, *, partial: bool = False) -> tuple[Labels, bool, int]:
    """One name starting at ``data[pos]`` → (labels, absolute, position after it).

    With ``partial`` a name may end with the data instead of a root label (RFC 4704 §4.2);
    then ``absolute`` is False. Compression pointers are refused (RFC 8415 §10)."""
    labels: list[bytes] = []
    start = pos
    end = len(data)
    while pos < end:
        size = data[pos]
        if size == 0:
            _check_length(pos + 1 - start)
            return tuple(labels), True, pos + 1
        if size > LABEL_MAX:
            raise ValueError("compressed or reserved label type")
        stop = pos + 1 + size
        if stop > end:
            raise ValueError("label runs past the end")
        labels.append(data[pos + 1 : stop])
        pos = stop
    if not partial:
        raise ValueError("name has no root label")
    _check_length(pos - start)
    return tuple(labels), False, pos


def decode_list(data: bytes) -> tuple[Labels, ...]:
    """Consecutive absolute names filling ``data`` (RFC 3646 §4's domain search list)."""
    names: list[Labels] = []
    pos = 0
    while pos < len(data):
        labels, _, pos = decode(data, pos)
        names.append(labels)
    return tuple(names)


def _check_length(size: int) -> None:
    if size > NAME_MAX:
        raise ValueError(f"name longer than {NAME_MAX} octets")


def text(labels: Sequence[bytes], absolute: bool = True) -> str:
    """Presentation form (RFC 1035 §5.1): ``host.example.com.`` for an absolute name, no
    trailing dot for a partial one; ``.`` and ``\\`` escaped, other unprintables as ``\\DDD``."""
    joined = ".".join(_label_text(label) for label in labels)
    if not absolute:
        return joined
    return joined + "." if joined else "."


def _label_text(label: bytes) -> str:
    out = []
    for octet in label:
        char = chr(octet)
        if char in ".\\":
            out.append("\\" + char)
        elif 0x21 <= octet <= 0x7E:
            out.append(char)
        else:
            out.append(f"\\{octet:03d}")
    return "".join(out)


def labels_of(name: str) -> Labels:
    """Labels of an ASCII name as an operator writes it (``example.com`` or ``example.com.``);
    no escapes. ValueError for empty labels or non-ASCII text (use IDNA A-labels)."""
    stripped = name[:-1] if name.endswith(".") else name
    if not stripped:
        return ()
    if not stripped.isascii():
        raise ValueError(f"{name!r} is not ASCII; write internationalised names as xn-- labels")
    parts = tuple(part.encode("ascii") for part in stripped.split("."))
    if any(not part for part in parts):
        raise ValueError(f"{name!r} has an empty label")
    return parts
