"""Field types of the IPAM request bodies and queries: JSON strings parsed to typed values.

Bodies are strict (router.Body): these accept only JSON strings, parse them with
ipam.validate (so the message says what is wrong), and document themselves in the
OpenAPI schema as the string formats they are.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, WithJsonSchema

from ipamd.core import identifiers, validate


def _strings(parse: Callable[[str], Any]) -> BeforeValidator:
    def check(value: Any) -> Any:
        if value is None:
            raise ValueError("must not be null")
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return parse(value)

    return BeforeValidator(check)


def _text(max_length: int, *, multiline: bool = False) -> Callable[[str], str]:
    def parse(value: str) -> str:
        return validate.clean_text(value, max_length=max_length, multiline=multiline)

    return parse


def _nonempty(parse: Callable[[str], str]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return parse(value)

    return check


def _as_str(value: Any) -> str:
    return str(value)


_SERIALISE = PlainSerializer(_as_str, when_used="json")


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a UUID") from None


# Strict bodies take no UUID from a JSON string on their own: parse it here.
Id = Annotated[
    uuid.UUID,
    _strings(_uuid),
    _SERIALISE,
    WithJsonSchema({"type": "string", "format": "uuid"}),
]

IPv4 = Annotated[
    ipaddress.IPv4Address,
    _strings(validate.ipv4),
    _SERIALISE,
    WithJsonSchema({"type": "string", "format": "ipv4", "examples": ["10.0.0.10"]}),
]


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    address = validate.ip_address(text)
    if getattr(address, "scope_id", None):
        raise ValueError(f"{text!r} has a zone index (%...): a stored address has none")
    return address


# Either family: the subnet's family decides which one is right (ipam/ names the mismatch).
IP = Annotated[
    ipaddress.IPv4Address | ipaddress.IPv6Address,
    _strings(_ip),
    _SERIALISE,
    WithJsonSchema({"type": "string", "description": "IPv4 or IPv6 address",
                    "examples": ["10.0.0.10", "2001:db8::10"]}),
]
IPv4Cidr = Annotated[
    ipaddress.IPv4Network,
    _strings(lambda v: validate.network(v, ipv4_only=True)),
    _SERIALISE,
    WithJsonSchema({"type": "string", "description": "IPv4 CIDR, no host bits",
                    "examples": ["10.0.0.0/24"]}),
]
Cidr = Annotated[
    ipaddress.IPv4Network | ipaddress.IPv6Network,
    _strings(validate.network),
    _SERIALISE,
    WithJsonSchema({"type": "string", "description": "IPv4 or IPv6 CIDR, no host bits",
                    "examples": ["10.0.0.0/16", "2001:db8::/32"]}),
]
CidrOrAddress = Annotated[
    ipaddress.IPv4Network | ipaddress.IPv6Network,
    # A bare address means its host route (/32, /128): "prefixes containing 10.1.2.3".
    _strings(lambda v: validate.network(v if "/" in v else
                                        f"{validate.ip_address(v)}/"
                                        f"{validate.ip_address(v).max_prefixlen}")),
    _SERIALISE,
    WithJsonSchema({"type": "string", "description": "a CIDR or a single address",
                    "examples": ["10.0.0.0/24", "10.0.0.10"]}),
]
Mac = Annotated[
    str,
    _strings(identifiers.mac),
    WithJsonSchema({"type": "string", "description":
                    "six octets in any common notation; stored as aa:bb:cc:dd:ee:ff",
                    "examples": ["aa:bb:cc:dd:ee:ff"]}),
]
Duid = Annotated[
    str,
    _strings(identifiers.duid),
    WithJsonSchema({"type": "string", "description":
                    "DHCP Unique Identifier (RFC 8415), hex octets; stored colon-separated",
                    "examples": ["00:03:00:01:aa:bb:cc:dd:ee:ff"]}),
]
ClientId = Annotated[
    bytes,
    _strings(lambda v: identifiers.hex_bytes(v, min_length=2, max_length=255)),
    _SERIALISE,
    WithJsonSchema({"type": "string", "description":
                    "raw DHCP client identifier (option 61), hex octets",
                    "examples": ["01:aa:bb:cc:dd:ee:ff"]}),
]
RelayId = Annotated[
    bytes,
    _strings(lambda v: identifiers.hex_bytes(v, min_length=1, max_length=255)),
    _SERIALISE,
    WithJsonSchema({"type": "string", "description":
                    "a relay agent sub-option (option 82: circuit-id, remote-id), hex octets",
                    "examples": ["65:74:68:30"]}),
]
Hostname = Annotated[
    str,
    _strings(validate.hostname),
    WithJsonSchema({"type": "string", "maxLength": 253, "description":
                    "host name or FQDN (RFC 1123 labels)", "examples": ["printer-1"]}),
]
DnsZone = Annotated[
    str,
    _strings(validate.dns_name),
    WithJsonSchema({"type": "string", "maxLength": 253, "examples": ["lan.example.com"]}),
]
ReverseZone = Annotated[
    str,
    _strings(validate.reverse_zone),
    WithJsonSchema({"type": "string", "maxLength": 253, "examples": ["0.10.in-addr.arpa"]}),
]


def text(max_length: int, *, multiline: bool = False) -> Any:
    """Printable text up to ``max_length`` characters (no control characters, no NUL)."""
    return Annotated[
        str,
        _strings(_text(max_length, multiline=multiline)),
        WithJsonSchema({"type": "string", "maxLength": max_length}),
    ]


def name(max_length: int = 100) -> Any:
    """A non-empty printable name."""
    return Annotated[
        str,
        _strings(_nonempty(_text(max_length))),
        WithJsonSchema({"type": "string", "minLength": 1, "maxLength": max_length}),
    ]


Name = name(100)
Label = text(100)
Description = text(1000, multiline=True)
MatchValue = name(255)
VendorClass = name(255)


def _boot_file(value: str) -> str:
    # The BOOTP file field is 128 octets including its terminating NUL.
    if not value or len(value) > 127 or not value.isascii() or not value.isprintable():
        raise ValueError("must be 1 to 127 printable ASCII characters")
    return value


BootFile = Annotated[
    str,
    _strings(_boot_file),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 127,
                    "examples": ["pxelinux.0"]}),
]


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def patch(description: str | None = None, **kwargs: Any) -> Any:
    """A PATCH field: may be left out (unchanged); its schema shows no default."""
    return Field(default=None, description=description, json_schema_extra=_drop_default,
                 **kwargs)
