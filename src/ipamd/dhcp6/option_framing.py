"""DHCPv6 option framing (RFC 8415 §21.1): the ``Option`` base, code/length split and join.

An option is a 2-octet code, a 2-octet length and that many octets of data; options follow
one another to the end of a message or of the option holding them. :func:`split` checks every
length (``Malformed``: ``truncated_option``, ``option_too_long``); :func:`encode_options`
writes them back. :class:`RawOption` is an option kept as received (unknown, or known but
out of its place). The option classes are in ``option_classes``, their decoders in
``option_decoders``; ``options`` is the one name the rest of the room imports them by.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from ipamd.dhcp6.protocol import Malformed

HEADER = struct.Struct("!HH")
IA_HEAD = struct.Struct("!III")  # IAID, T1, T2 (RFC 8415 §21.4, §21.21)
IAADDR_HEAD = struct.Struct("!16sII")  # address, preferred, valid (§21.6)
IAPREFIX_HEAD = struct.Struct("!IIB16s")  # preferred, valid, prefix-length, prefix (§21.22)
OPTION_MAX = 0xFFFF  # option-len is two octets
INFINITY = 0xFFFFFFFF  # RFC 8415 §7.7: a lifetime or T1/T2 of all ones never ends

OptionT = TypeVar("OptionT", bound="Option")


class Option:
    """An option: ``code`` and ``encode()`` (the option-data; code and length are added by
    :func:`encode_options`). Every option class says how it is written.

    Shaped for mypyc (the compiled hot path, ``ipamd.dhcp.compiled``): no ``abc.ABC`` (its
    dataclass subclasses with slots fail to import compiled), and each class's ``code`` is
    set on the class after its body, since mypyc makes a ``ClassVar`` in a dataclass body a
    field."""

    __slots__ = ()
    code: ClassVar[int]

    def encode(self) -> bytes:
        """The option-data, without the code and length."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it is written")


class Plain(Option):
    """An option class written as a plain class, not a frozen dataclass: the ones every
    message makes (identifiers, IAs, addresses, ORO, Elapsed Time, Status Code). Compiled
    (``ipamd.dhcp.compiled``) their construction is C, where a dataclass's generated
    ``__init__`` stays interpreted Python. As the dataclasses: immutable by convention,
    equal (and hashed) by class and ``_fields()``, shown as ``Class(fields...)``."""

    __slots__ = ()

    def _fields(self) -> tuple[object, ...]:
        raise NotImplementedError(f"{type(self).__name__} does not name its fields")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Plain) or type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._fields()))

    def __repr__(self) -> str:
        return type(self).__name__ + "(" + ", ".join(repr(f) for f in self._fields()) + ")"


# --------------------------------------------------------------------------- framing


def split(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, bytes]]:
    """The (code, data) of each option in ``data[start:end]``, every length checked."""
    stop = len(data) if end is None else end
    out: list[tuple[int, bytes]] = []
    pos = start
    while pos < stop:
        if stop - pos < 4:
            raise Malformed("truncated_option", f"{stop - pos} octets left at {pos}")
        code, size = HEADER.unpack_from(data, pos)
        pos += 4
        if pos + size > stop:
            raise Malformed("option_too_long", f"option {code} of {size} octets at {pos - 4}")
        out.append((code, data[pos : pos + size]))
        pos += size
    return out


Decoder = Callable[[bytes], "Option"]


def decode_options(data: bytes, table: dict[int, Decoder]) -> list[Option]:
    """Options of ``data`` decoded with ``table`` (code → decoder); others stay raw."""
    out: list[Option] = []
    for code, value in split(data):
        decoder = table.get(code)
        out.append(RawOption(code, value) if decoder is None else decoder(value))
    return out


def encode_options(options: Iterable[Option]) -> bytes:
    if not options:  # an IA Address or IA Prefix without options, mostly
        return b""
    parts: list[bytes] = []
    append, pack = parts.append, HEADER.pack  # every reply encodes several nested lists
    for option in options:
        value = option.encode()
        size = len(value)
        if size > OPTION_MAX:
            raise ValueError(f"option {option.code} has {size} octets; at most 65535")
        append(pack(option.code, size))
        append(value)
    return b"".join(parts)


def first(options: Iterable[Option], kind: type[OptionT]) -> OptionT | None:
    for option in options:
        if type(option) is kind:
            return option
    return None


def every(options: Iterable[Option], kind: type[OptionT]) -> list[OptionT]:
    return [option for option in options if type(option) is kind]


def fixed_length(value: bytes, size: int, code: int) -> None:
    if len(value) != size:
        raise Malformed("bad_option_length", f"option {code}: {len(value)} octets, not {size}")


@dataclass(frozen=True, slots=True)
class RawOption(Option):
    """An option kept as received: unknown, or known but out of its place."""

    code: int  # type: ignore[misc]  # an instance field here, a class constant elsewhere
    data: bytes

    def encode(self) -> bytes:
        return self.data
