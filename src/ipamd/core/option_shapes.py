"""DHCP option payloads: one JSON shape per code, validated, normalised and encoded to wire bytes.

Shapes (docs/api-ipam.md lists every code):

- addresses  ``{"addresses": ["10.0.0.53", ...]}``   e.g. 6 DNS, 42 NTP, 44 NetBIOS
- text       ``{"value": "example.com"}``           e.g. 15 domain name, 252 WPAD URL
- integer    ``{"value": 1400}``                    e.g. 26 MTU (range checked per code)
- domains    ``{"domains": ["a.example", ...]}``    119 domain search
- routes     ``{"routes": [{"destination": "10.9.0.0/16", "router": "10.0.0.1"}]}``  121
- hex        ``{"hex": "01:04:c0:a8:00:01"}``       43 vendor-specific, and every other code

Codes the server owns are refused with the subnet field that sets them instead.
``wire(code, payload)`` is what the DHCP server puts after the option's code and length.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipamd.core import identifiers, validate

MAX_WIRE = 255  # one option instance's value (RFC 2132 §2: a one-octet length)
# A longer value goes out as several instances of the code, concatenated by the client
# (RFC 3396; dhcp/packing.instances). The bound: a client announcing an Ethernet-sized
# message (option 57 = 1500) has 1500 - 28 (IP, UDP) - 240 (header, cookie) = 1232 octets
# of options; the server's own take 40 (53, 54, 51, 58, 59, 1, 3, end) and a relay's
# echoed option 82 up to 257, leaving 935; a value of N octets costs N + 2·⌈N/255⌉, so
# 900 octets (908) fit beside them. A client that announces less (576 without option 57:
# 308 octets, plus file and sname when overloaded, RFC 2132 §9.3) gets what fits: the
# codec leaves out a long option it cannot place (dhcp/packing._place), never 53/54/51/1/3.
MAX_VALUE = 900

# code -> how to set it instead (the message names the field)
SERVER_OWNED: dict[int, str] = {
    0: "0 is the pad byte, not an option",
    1: "the subnet mask is derived from the subnet's cidr",
    3: "the router is the subnet's gateway field",
    12: "the host name comes from the reservation's hostname field",
    28: "the broadcast address is derived from the subnet's cidr",
    50: "the requested address is sent by clients only",
    51: "the lease time is the subnet's lease_time_seconds field (a client's request is "
        "honoured within min_lease_time_seconds and max_lease_time_seconds)",
    52: "option overload is decided by the server per packet",
    53: "the message type is set by the server per packet",
    54: "the server identifier is the appliance's dhcp.server_id setting",
    55: "the parameter request list is sent by clients only",
    56: "the message option is set by the server per packet",
    57: "the maximum message size is sent by clients only",
    58: "the renewal time (T1) is derived from the subnet's lease_time_seconds field",
    59: "the rebinding time (T2) is derived from the subnet's lease_time_seconds field",
    61: "the client identifier is sent by clients only",
    66: "the TFTP/next server is the subnet's next_server field",
    67: "the boot file is the subnet's boot_file field",
    81: "the client FQDN is answered by the server from the subnet's ddns_* fields",
    82: "relay agent information is added by relays only",
    118: "subnet selection is sent by clients and relays only",
    255: "255 is the end marker, not an option",
}

ADDRESS_CODES = frozenset(
    {4, 5, 6, 7, 8, 9, 10, 11, 41, 42, 44, 45, 48, 49, 65, 68, 69, 70, 71, 72, 73, 74, 75, 76,
     150}
)
TEXT_CODES = frozenset({14, 15, 17, 18, 40, 47, 60, 64, 100, 101, 114, 252})
# code -> (bytes, signed, minimum, maximum)
INTEGER_CODES: dict[int, tuple[int, bool, int, int]] = {
    2: (4, True, -86_400, 86_400),  # time offset, seconds from UTC
    13: (2, False, 0, 65_535),  # boot file size, 512-octet blocks
    19: (1, False, 0, 1),  # IP forwarding off/on
    20: (1, False, 0, 1),  # non-local source routing
    22: (2, False, 576, 65_535),  # maximum datagram reassembly size
    23: (1, False, 1, 255),  # default IP TTL
    24: (4, False, 0, 2**32 - 1),  # path MTU aging timeout
    26: (2, False, 68, 65_535),  # interface MTU
    27: (1, False, 0, 1),  # all subnets are local
    29: (1, False, 0, 1),  # perform mask discovery
    30: (1, False, 0, 1),  # mask supplier
    31: (1, False, 0, 1),  # perform router discovery
    34: (1, False, 0, 1),  # trailer encapsulation
    35: (4, False, 0, 2**32 - 1),  # ARP cache timeout
    36: (1, False, 0, 1),  # ethernet encapsulation
    37: (1, False, 1, 255),  # TCP default TTL
    38: (4, False, 0, 2**32 - 1),  # TCP keepalive interval
    39: (1, False, 0, 1),  # TCP keepalive garbage
    46: (1, False, 1, 8),  # NetBIOS node type (1, 2, 4 or 8)
}
DOMAIN_SEARCH = 119
CLASSLESS_ROUTES = 121
VENDOR_SPECIFIC = 43


@dataclass(frozen=True)
class Shape:
    name: str
    example: dict[str, Any]
    normalise: Callable[[int, dict[str, Any]], dict[str, Any]]
    encode: Callable[[int, dict[str, Any]], bytes]


# only_fields and string_list are shared with option6_shapes (the DHCPv6 payloads).


def only_fields(payload: dict[str, Any], keys: set[str], example: str) -> None:
    """``payload`` has exactly ``keys``; the message shows ``example``."""
    extra = sorted(set(payload) - keys)
    if extra:
        raise ValueError(f"unknown field {extra[0]!r}; this code takes {example}")
    missing = sorted(keys - set(payload))
    if missing:
        raise ValueError(f"missing {missing[0]!r}; this code takes {example}")


def string_list(value: Any, key: str, what: str, item: Callable[[str], str],
                most: int | None = None, unit: str = "") -> list[str]:
    """A non-empty list of at most ``most`` strings, each normalised by ``item``, whose
    ValueError is prefixed with the entry's place (``key[index]``)."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"{key} must be a non-empty list of {what}")
    if most is not None and len(value) > most:
        raise ValueError(f"{key}: at most {most}{unit}")
    out = []
    for index, entry in enumerate(value):
        if not isinstance(entry, str):
            raise ValueError(f"{key}[{index}] must be a string")
        try:
            out.append(item(entry))
        except ValueError as error:
            raise ValueError(f"{key}[{index}]: {error}") from None
    return out


def _only(payload: dict[str, Any], key: str, example: str) -> Any:
    only_fields(payload, {key}, example)
    return payload[key]


def _address_list(value: Any, key: str) -> list[str]:
    return string_list(value, key, "IPv4 addresses", lambda item: str(validate.ipv4(item)),
                       MAX_VALUE // 4, " addresses")


def _norm_addresses(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    value = _only(payload, "addresses", '{"addresses": ["10.0.0.53"]}')
    return {"addresses": _address_list(value, "addresses")}


def _enc_addresses(code: int, payload: dict[str, Any]) -> bytes:
    return b"".join(ipaddress.IPv4Address(a).packed for a in payload["addresses"])


def _norm_text(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    value = _only(payload, "value", '{"value": "text"}')
    if not isinstance(value, str) or not value:
        raise ValueError("value must be a non-empty string")
    if not value.isascii() or not value.isprintable():
        raise ValueError("value must be printable ASCII")
    if len(value) > MAX_VALUE:
        raise ValueError(f"value: at most {MAX_VALUE} characters")
    if code == 15:
        value = validate.dns_name(value)
    return {"value": value}


def _enc_text(code: int, payload: dict[str, Any]) -> bytes:
    text: str = payload["value"]
    return text.encode("ascii")


def _norm_integer(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    value = _only(payload, "value", '{"value": 1500}')
    _, _, low, high = INTEGER_CODES[code]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("value must be an integer")
    if not low <= value <= high:
        raise ValueError(f"value must be between {low} and {high} for option {code}")
    if code == 46 and value not in (1, 2, 4, 8):
        raise ValueError("value must be 1 (B-node), 2 (P-node), 4 (M-node) or 8 (H-node)")
    return {"value": value}


def _enc_integer(code: int, payload: dict[str, Any]) -> bytes:
    size, signed, _, _ = INTEGER_CODES[code]
    return int(payload["value"]).to_bytes(size, "big", signed=signed)


def _norm_domains(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    value = _only(payload, "domains", '{"domains": ["example.com"]}')
    return {"domains": string_list(value, "domains", "domain names", validate.dns_name)}


def _dns_wire(name: str) -> bytes:
    # RFC 1035 labels without compression pointers (valid for every RFC 3397 client).
    return b"".join(bytes([len(p)]) + p.encode("ascii") for p in name.split(".")) + b"\x00"


def _enc_domains(code: int, payload: dict[str, Any]) -> bytes:
    return b"".join(_dns_wire(name) for name in payload["domains"])


def _norm_routes(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    example = '{"routes": [{"destination": "10.9.0.0/16", "router": "10.0.0.1"}]}'
    value = _only(payload, "routes", example)
    if not isinstance(value, list) or not value:
        raise ValueError(f"routes must be a non-empty list like {example}")
    out = []
    for index, item in enumerate(value):
        if not isinstance(item, dict) or set(item) != {"destination", "router"}:
            raise ValueError(f"routes[{index}] must be {{destination, router}}")
        if not isinstance(item["destination"], str) or not isinstance(item["router"], str):
            raise ValueError(f"routes[{index}]: destination and router are strings")
        try:
            dest = validate.network(item["destination"], ipv4_only=True)
            router = validate.ipv4(item["router"])
        except ValueError as error:
            raise ValueError(f"routes[{index}]: {error}") from None
        out.append({"destination": str(dest), "router": str(router)})
    return {"routes": out}


def _enc_routes(code: int, payload: dict[str, Any]) -> bytes:
    # RFC 3442: width, the significant octets of the destination, then the router.
    data = b""
    for route in payload["routes"]:
        net = ipaddress.IPv4Network(route["destination"])
        significant = (net.prefixlen + 7) // 8
        data += bytes([net.prefixlen]) + net.network_address.packed[:significant]
        data += ipaddress.IPv4Address(route["router"]).packed
    return data


def _norm_hex(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    value = _only(payload, "hex", '{"hex": "01:02:0a"}')
    if not isinstance(value, str):
        raise ValueError("hex must be a string of hex octets")
    return {"hex": identifiers.colon_hex(identifiers.hex_bytes(value, max_length=MAX_VALUE))}


def _enc_hex(code: int, payload: dict[str, Any]) -> bytes:
    return identifiers.hex_bytes(payload["hex"], max_length=MAX_VALUE)


ADDRESSES = Shape("addresses", {"addresses": ["10.0.0.53"]}, _norm_addresses, _enc_addresses)
TEXT = Shape("text", {"value": "example.com"}, _norm_text, _enc_text)
INTEGER = Shape("integer", {"value": 1500}, _norm_integer, _enc_integer)
DOMAINS = Shape("domains", {"domains": ["example.com"]}, _norm_domains, _enc_domains)
ROUTES = Shape(
    "routes", {"routes": [{"destination": "10.9.0.0/16", "router": "10.0.0.1"}]},
    _norm_routes, _enc_routes,
)
HEX = Shape("hex", {"hex": "01:02:0a"}, _norm_hex, _enc_hex)


def shape_of(code: int) -> Shape:
    if code in ADDRESS_CODES:
        return ADDRESSES
    if code in TEXT_CODES:
        return TEXT
    if code in INTEGER_CODES:
        return INTEGER
    if code == DOMAIN_SEARCH:
        return DOMAINS
    if code == CLASSLESS_ROUTES:
        return ROUTES
    return HEX


def check_code(code: int) -> None:
    if not 1 <= code <= 254:
        raise ValueError("must be between 1 and 254")
    if code in SERVER_OWNED:
        raise ValueError(f"option {code} cannot be set as an option: {SERVER_OWNED[code]}")


def normalise(code: int, payload: dict[str, Any]) -> dict[str, Any]:
    """The canonical payload for ``code``; ValueError names what is wrong inside it."""
    shape = shape_of(code)
    result = shape.normalise(code, payload)
    size = len(shape.encode(code, result))
    if size > MAX_VALUE:
        raise ValueError(f"encodes to {size} octets; an option carries at most {MAX_VALUE} "
                         f"(over {MAX_WIRE} it is split, RFC 3396, and must still fit a "
                         "1500-octet reply)")
    return result


def wire(code: int, payload: dict[str, Any]) -> bytes:
    """The option value bytes for a stored (already normalised) payload."""
    return shape_of(code).encode(code, payload)
