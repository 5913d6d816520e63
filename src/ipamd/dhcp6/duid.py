"""DHCP Unique Identifiers (RFC 8415 §11): parsed from the wire, rendered, and made for a server.

A ``Duid`` keeps the identifier's octets as they came (``raw``): equality, storage and
matching use them, whatever the type. The four types RFC 8415 and RFC 6355 define are read
into their fields on demand (``kind``, ``hw_type``, ``time``, ``link_layer``, ``enterprise``,
``identifier``, ``uuid``); a type this code does not know stays opaque octets, as §11 asks
("clients and servers MUST treat DUIDs as opaque values").

Text forms: ``text`` is the colon-separated lowercase hex the API stores and shows for a
reservation's ``duid`` (``core.identifiers.duid``); ``hex`` is the bare hex the DHCP plan
compares (``core.identifiers.bare_hex``).

A server's own DUID (the Server Identifier option 2) is made once and kept (the DESIGN's
"one server DUID for the whole appliance"): :func:`server_llt` from a MAC and the time it
was made, or :func:`server_en` from an enterprise number and random octets. Keeping it in
the database, so that it survives restarts and is the same on every node, is the server's
job; this module is pure.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from uuid import UUID

from ipamd.core.identifiers import DUID_MAX_LENGTH, DUID_MIN_LENGTH, colon_hex, octets
from ipamd.dhcp6.protocol import DUID_EN, DUID_LL, DUID_LLT, DUID_UUID, HTYPE_ETHER, Malformed

# RFC 8415 §11.2: DUID-LLT time is seconds since midnight (UTC), January 1, 2000, modulo 2^32.
DUID_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
TYPE_NAMES = {DUID_LLT: "DUID-LLT", DUID_EN: "DUID-EN", DUID_LL: "DUID-LL", DUID_UUID: "DUID-UUID"}
EN_IDENTIFIER_SIZE = 16  # random octets in a server's DUID-EN: as unlikely to collide as a UUID


class Duid:
    """One DUID; build it with :meth:`parse` (wire, untrusted) or the constructors below.

    Immutable by convention (a dictionary key: reservations by DUID). A plain class, not a
    frozen dataclass: compiled (``ipamd.dhcp.compiled``) its construction, ``==`` and
    ``hash`` are C, where a dataclass's generated methods stay interpreted Python, and
    every message compares and hashes DUIDs several times."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Duid):
            return NotImplemented
        return self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return f"Duid(raw={self.raw!r})"

    @classmethod
    def parse(cls, data: bytes) -> Duid:
        """A DUID from an option's data; ``Malformed('bad_duid')`` unless RFC 8415 §11 holds:
        3 to 130 octets, and a known type at least as long as its fixed fields."""
        size = len(data)
        if size < 3 or size > DUID_MAX_LENGTH:
            raise Malformed("bad_duid", f"{size} octets")
        kind = int.from_bytes(data[:2], "big")
        least = DUID_MIN_LENGTH.get(kind)
        if least is not None and size < least:
            raise Malformed("bad_duid", f"type {kind} in {size} octets")
        if kind == DUID_UUID and size != DUID_MIN_LENGTH[DUID_UUID]:
            raise Malformed("bad_duid", f"DUID-UUID of {size} octets")
        return cls(bytes(data))

    @classmethod
    def from_text(cls, text: str) -> Duid:
        """A DUID written as hex octets (any notation ``core.identifiers`` reads).

        ValueError with a message for people (configuration, API), not a drop reason."""
        raw = octets(text)
        if raw is None:
            raise ValueError(f"{text!r} is not a DUID (hex octets, e.g. 00:03:00:01:...)")
        try:
            return cls.parse(raw)
        except Malformed as error:
            raise ValueError(f"{text!r} is not a DUID (RFC 8415 §11): {error.detail}") from None

    # ------------------------------------------------------------------ constructors

    @classmethod
    def llt(cls, link_layer: bytes, time: int, hw_type: int = HTYPE_ETHER) -> Duid:
        """DUID-LLT (RFC 8415 §11.2): hardware type, time (DUID epoch seconds), address."""
        return cls.parse(_u16(DUID_LLT) + _u16(hw_type) + _u32(time) + link_layer)

    @classmethod
    def en(cls, enterprise: int, identifier: bytes) -> Duid:
        """DUID-EN (RFC 8415 §11.3): an IANA enterprise number and that vendor's identifier."""
        return cls.parse(_u16(DUID_EN) + _u32(enterprise) + identifier)

    @classmethod
    def ll(cls, link_layer: bytes, hw_type: int = HTYPE_ETHER) -> Duid:
        """DUID-LL (RFC 8415 §11.4): hardware type and link-layer address."""
        return cls.parse(_u16(DUID_LL) + _u16(hw_type) + link_layer)

    @classmethod
    def from_uuid(cls, value: UUID) -> Duid:
        """DUID-UUID (RFC 6355)."""
        return cls.parse(_u16(DUID_UUID) + value.bytes)

    # ------------------------------------------------------------------ fields

    @property
    def kind(self) -> int:
        return int.from_bytes(self.raw[:2], "big")

    @property
    def kind_name(self) -> str:
        return TYPE_NAMES.get(self.kind, f"DUID type {self.kind}")

    @property
    def hw_type(self) -> int | None:
        """The hardware type of a DUID-LLT or DUID-LL (1 is Ethernet), else None."""
        if self.kind in (DUID_LLT, DUID_LL):
            return int.from_bytes(self.raw[2:4], "big")
        return None

    @property
    def time(self) -> int | None:
        """A DUID-LLT's time: seconds since 2000-01-01 UTC, modulo 2^32."""
        return int.from_bytes(self.raw[4:8], "big") if self.kind == DUID_LLT else None

    @property
    def link_layer(self) -> bytes | None:
        """The link-layer address inside a DUID-LLT or DUID-LL."""
        kind = self.kind
        if kind == DUID_LLT:
            return self.raw[8:]
        if kind == DUID_LL:
            return self.raw[4:]
        return None

    @property
    def mac(self) -> str | None:
        """aa:bb:cc:dd:ee:ff when the DUID carries an Ethernet address (LLT or LL), else None.

        RFC 8415 §11 warns that this need not be the interface the client uses now."""
        lladdr = self.link_layer
        if self.hw_type == HTYPE_ETHER and lladdr is not None and len(lladdr) == 6:
            return colon_hex(lladdr)
        return None

    @property
    def enterprise(self) -> int | None:
        return int.from_bytes(self.raw[2:6], "big") if self.kind == DUID_EN else None

    @property
    def identifier(self) -> bytes:
        """What follows the fixed fields: a DUID-EN's identifier, a DUID-UUID's 16 octets,
        the link-layer address of LLT/LL, everything after the type code otherwise."""
        kind = self.kind
        if kind == DUID_EN:
            return self.raw[6:]
        link_layer = self.link_layer
        return link_layer if link_layer is not None else self.raw[2:]

    @property
    def uuid(self) -> UUID | None:
        return UUID(bytes=self.raw[2:]) if self.kind == DUID_UUID else None

    # ------------------------------------------------------------------ text

    @property
    def text(self) -> str:
        """Colon-separated lowercase hex, as the API stores a reservation's DUID."""
        return colon_hex(self.raw)

    @property
    def hex(self) -> str:
        """Bare lowercase hex, as the DHCP plan compares identifiers."""
        return self.raw.hex()

    def describe(self) -> str:
        """For log lines and operators: the type and its fields (docs: reading a DUID)."""
        kind = self.kind
        if kind == DUID_LLT:
            made = datetime.fromtimestamp(DUID_EPOCH.timestamp() + (self.time or 0), UTC)
            return (f"DUID-LLT hw {self.hw_type} time {self.time} ({made:%Y-%m-%dT%H:%M:%SZ})"
                    f" {colon_hex(self.identifier)}")
        if kind == DUID_LL:
            return f"DUID-LL hw {self.hw_type} {colon_hex(self.identifier)}"
        if kind == DUID_EN:
            return f"DUID-EN enterprise {self.enterprise} {colon_hex(self.identifier)}"
        if kind == DUID_UUID:
            return f"DUID-UUID {self.uuid}"
        return f"{self.kind_name} {colon_hex(self.raw[2:])}"

    def __str__(self) -> str:
        return self.text


# --------------------------------------------------------------------------- a server's own


def duid_time(moment: datetime) -> int:
    """RFC 8415 §11.2: seconds since 2000-01-01 00:00 UTC, modulo 2^32 (an aware datetime)."""
    if moment.tzinfo is None:
        raise ValueError("duid_time needs an aware datetime (UTC)")
    return int((moment - DUID_EPOCH).total_seconds()) % 2**32


def server_llt(mac: bytes, moment: datetime) -> Duid:
    """A server DUID-LLT from one of the box's Ethernet addresses and the time it is made.

    Made once and kept (RFC 8415 §11.2: "the DUID ... MUST NOT change"), even when that
    interface is later removed; the caller stores it."""
    if len(mac) != 6 or mac == bytes(6) or mac[0] & 1:
        raise ValueError("a server DUID-LLT needs a unicast Ethernet address (6 octets)")
    return Duid.llt(mac, duid_time(moment))


def server_en(enterprise: int, identifier: bytes | None = None) -> Duid:
    """A server DUID-EN: an IANA enterprise number and an identifier unique under it
    (``EN_IDENTIFIER_SIZE`` random octets unless given)."""
    if not 0 <= enterprise < 2**32:
        raise ValueError("an enterprise number is 0 to 4294967295 (IANA Private Enterprise)")
    if identifier is None:
        identifier = secrets.token_bytes(EN_IDENTIFIER_SIZE)
    if not 1 <= len(identifier) <= DUID_MAX_LENGTH - 6:
        raise ValueError(f"a DUID-EN identifier is 1 to {DUID_MAX_LENGTH - 6} octets")
    return Duid.en(enterprise, identifier)


def _u16(value: int) -> bytes:
    return value.to_bytes(2, "big")


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "big")
