"""DHCP option values written as text (Kea's `option-data`, dhcpd's `option` lines) mapped onto
the API's option payloads (docs/api-ipam.md, "Options"), shared by both readers.

The code lists mirror `ipamd.core.option_shapes` and `option6_shapes` (this room imports
nothing of ipamd: it runs on a laptop against the HTTP API); tests/unit/importer checks that
the two agree. A value that cannot be mapped raises `Unmappable` with the reason the plan
shows.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from ipamd.importer.model import Resolver


class Unmappable(ValueError):
    """This option (or value) has no equivalent on the appliance; the message says why."""


# The codes the appliance sets from a field (core/option_shapes.SERVER_OWNED): what it is.
OWNED4: dict[int, str] = {
    0: "the pad byte", 1: "the subnet mask is derived from the subnet's cidr",
    3: "the router is the subnet's gateway", 12: "the host name is the reservation's hostname",
    28: "the broadcast address is derived from the subnet's cidr",
    50: "sent by clients only", 51: "the lease time is the subnet's lease_time_seconds",
    52: "option overload is decided per packet", 53: "the message type is set per packet",
    54: "the server identifier is the appliance's dhcp.server_id setting",
    55: "sent by clients only", 56: "set by the server per packet", 57: "sent by clients only",
    58: "T1 is derived from the lease time (RFC 2131 §4.4.5)",
    59: "T2 is derived from the lease time (RFC 2131 §4.4.5)", 61: "sent by clients only",
    66: "the TFTP server is the next_server field", 67: "the boot file is the boot_file field",
    81: "the client FQDN is answered from the subnet's ddns_* fields",
    82: "added by relays only", 118: "sent by clients and relays only", 255: "the end marker",
}
ADDRESS4 = frozenset({4, 5, 6, 7, 8, 9, 10, 11, 41, 42, 44, 45, 48, 49, 65, 68, 69, 70, 71, 72,
                      73, 74, 75, 76, 150})
TEXT4 = frozenset({14, 15, 17, 18, 40, 47, 60, 64, 100, 101, 114, 252})
# code -> (minimum, maximum) of the integer codes (core/option_shapes.INTEGER_CODES)
INTEGER4: dict[int, tuple[int, int]] = {
    2: (-86_400, 86_400), 13: (0, 65_535), 19: (0, 1), 20: (0, 1), 22: (576, 65_535),
    23: (1, 255), 24: (0, 2**32 - 1), 26: (68, 65_535), 27: (0, 1), 29: (0, 1), 30: (0, 1),
    31: (0, 1), 34: (0, 1), 35: (0, 2**32 - 1), 36: (0, 1), 37: (1, 255),
    38: (0, 2**32 - 1), 39: (0, 1), 46: (1, 8),
}
DOMAIN_SEARCH, CLASSLESS_ROUTES = 119, 121
# Other standard codes whose text form has a fixed type; sent as `{"hex": ...}` (the API's
# shape for every other code). Types as Kea names them; `[]` marks an array.
TYPED4: dict[int, str] = {
    16: "ipv4-address", 21: "ipv4-address[]", 25: "uint16[]", 32: "ipv4-address",
    33: "ipv4-address[]", 62: "string", 77: "binary", 85: "ipv4-address[]", 86: "string",
    87: "string", 88: "fqdn[]", 89: "ipv4-address[]", 92: "ipv4-address[]", 93: "uint16[]",
    98: "string", 108: "uint32", 112: "ipv4-address[]", 113: "string", 116: "uint8",
    136: "ipv4-address[]", 137: "fqdn", 138: "ipv4-address[]", 141: "fqdn[]", 213: "fqdn",
}
# DHCPv4 option names (RFC 2132 and later; Kea and dhcpd share them) -> code.
NAMES4: dict[str, int] = {
    "subnet-mask": 1, "time-offset": 2, "routers": 3, "time-servers": 4, "name-servers": 5,
    "domain-name-servers": 6, "log-servers": 7, "cookie-servers": 8, "lpr-servers": 9,
    "impress-servers": 10, "resource-location-servers": 11, "host-name": 12, "boot-size": 13,
    "merit-dump": 14, "domain-name": 15, "swap-server": 16, "root-path": 17,
    "extensions-path": 18, "ip-forwarding": 19, "non-local-source-routing": 20,
    "policy-filter": 21, "max-dgram-reassembly": 22, "default-ip-ttl": 23,
    "path-mtu-aging-timeout": 24, "path-mtu-plateau-table": 25, "interface-mtu": 26,
    "all-subnets-local": 27, "broadcast-address": 28, "perform-mask-discovery": 29,
    "mask-supplier": 30, "router-discovery": 31, "router-solicitation-address": 32,
    "static-routes": 33, "trailer-encapsulation": 34, "arp-cache-timeout": 35,
    "ieee802-3-encapsulation": 36, "default-tcp-ttl": 37, "tcp-keepalive-interval": 38,
    "tcp-keepalive-garbage": 39, "nis-domain": 40, "nis-servers": 41, "ntp-servers": 42,
    "vendor-encapsulated-options": 43, "netbios-name-servers": 44, "netbios-dd-server": 45,
    "netbios-node-type": 46, "netbios-scope": 47, "font-servers": 48, "x-display-manager": 49,
    "dhcp-requested-address": 50, "dhcp-lease-time": 51, "dhcp-option-overload": 52,
    "dhcp-message-type": 53, "dhcp-server-identifier": 54, "dhcp-parameter-request-list": 55,
    "dhcp-message": 56, "dhcp-max-message-size": 57, "dhcp-renewal-time": 58,
    "dhcp-rebinding-time": 59, "vendor-class-identifier": 60, "dhcp-client-identifier": 61,
    "nwip-domain-name": 62, "nwip-suboptions": 63, "nisplus-domain-name": 64,
    "nisplus-servers": 65, "tftp-server-name": 66, "boot-file-name": 67,
    "mobile-ip-home-agent": 68, "smtp-server": 69, "pop-server": 70, "nntp-server": 71,
    "www-server": 72, "finger-server": 73, "irc-server": 74, "streettalk-server": 75,
    "streettalk-directory-assistance-server": 76, "user-class": 77, "slp-directory-agent": 78,
    "slp-service-scope": 79, "fqdn": 81, "dhcp-agent-options": 82,
    "relay-agent-information": 82, "nds-servers": 85, "nds-tree-name": 86, "nds-context": 87,
    "bcms-controller-names": 88, "bcms-controller-address": 89, "client-last-transaction-time": 91,
    "associated-ip": 92, "client-system": 93, "pxe-system-type": 93, "client-ndi": 94,
    "uuid-guid": 97, "uap-servers": 98, "geoconf-civic": 99, "pcode": 100, "tcode": 101,
    "v6-only-preferred": 108, "netinfo-server-address": 112, "netinfo-server-tag": 113,
    "v4-captive-portal": 114, "auto-config": 116, "name-service-search": 117,
    "subnet-selection": 118, "domain-search": 119, "classless-static-route": 121,
    "vivco-suboptions": 124, "vivso-suboptions": 125, "pana-agent": 136, "v4-lost": 137,
    "capwap-ac-v4": 138, "sip-ua-cs-domains": 141, "rdnss-selection": 146,
    "tftp-server-address": 150, "v4-portparams": 159, "option-6rd": 212,
    "v4-access-domain": 213, "wpad": 252,
}
# The DHCPv6 options an IPv6 subnet takes (core/option6_shapes.CODES) and their names.
NAMES6: dict[str, int] = {
    "dns-servers": 23, "domain-search": 24, "ntp-server": 56, "vendor-opts": 17,
    "bootfile-url": 59,
}
CODES6 = frozenset(NAMES6.values())
# Other DHCPv6 option names (RFC 8415 and the RFCs it lists), known so a refusal names the code.
OTHER6: dict[str, int] = {
    "preference": 7, "unicast": 12, "rapid-commit": 14, "user-class": 15, "vendor-class": 16,
    "interface-id": 18, "reconf-accept": 20, "sip-server-dns": 21, "sip-server-addr": 22,
    "nis-servers": 27, "nisp-servers": 28, "nis-domain-name": 29, "nisp-domain-name": 30,
    "sntp-servers": 31, "information-refresh-time": 32, "bcmcs-server-dns": 33,
    "bcmcs-server-addr": 34, "geoconf-civic": 36, "remote-id": 37, "subscriber-id": 38,
    "client-fqdn": 39, "pana-agent": 40, "new-posix-timezone": 41, "new-tzdb-timezone": 42,
    "lq-client-link": 48, "bootfile-param": 60, "client-arch-type": 61, "nii": 62,
    "aftr-name": 64, "erp-local-domain-name": 65, "rsoo": 66, "pd-exclude": 67,
    "client-linklayer-addr": 79, "solmax-rt": 82, "inf-max-rt": 83, "dhcp4o6-server-addr": 88,
    "s46-rule": 89, "s46-br": 90, "s46-dmr": 91, "s46-v4v6bind": 92, "s46-portparams": 93,
    "s46-cont-mape": 94, "s46-cont-mapt": 95, "s46-cont-lw": 96, "v6-captive-portal": 103,
    "ipv6-address-andsf": 143,
}
MAX_VALUE = 900  # octets of one option's value (docs/api-ipam.md, "Long options")

_HEX = re.compile(r"^(0x)?([0-9a-fA-F]{2}([ :.-]?[0-9a-fA-F]{2})*)$")


def split_list(data: str) -> list[str]:
    """A comma-separated list as both servers write it; `\\,` escapes a comma (Kea)."""
    items = [item.replace("\0", ",").strip() for item in data.replace("\\,", "\0").split(",")]
    return [item for item in items if item]


def hex_octets(text: str) -> bytes:
    """Hex in any common notation (`0x0a0b`, `0a:0b`, `0a 0b`, `0A-0B`)."""
    match = _HEX.match(text.strip())
    if not match:
        raise Unmappable(f"{text!r} is not hex octets")
    return bytes.fromhex(re.sub(r"[ :.-]", "", match.group(2)))


def colon_hex(octets: bytes) -> str:
    return ":".join(f"{octet:02x}" for octet in octets)


def addresses(items: Iterable[str], family: int, resolver: Resolver | None,
              notes: list[str]) -> list[str]:
    """Addresses of one family; a DNS name is looked up with `resolver` (as dhcpd does at
    start) and the note says what it resolved to, or it is refused when there is none."""
    out: list[str] = []
    for item in items:
        try:
            address = ipaddress.ip_address(item)
        except ValueError:
            out.extend(resolve_name(item, family, resolver, notes))
            continue
        if address.version != family:
            raise Unmappable(f"{item} is not an IPv{family} address")
        out.append(str(address))
    return out


def resolve_name(name: str, family: int, resolver: Resolver | None,
                 notes: list[str]) -> list[str]:
    if not re.fullmatch(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?", name):
        raise Unmappable(f"{name!r} is neither an IPv{family} address nor a DNS name")
    if resolver is None:
        raise Unmappable(f"{name} is a DNS name; the plan was made without name resolution "
                         "(write the address, or plan with resolution on)")
    try:
        found = [str(ipaddress.ip_address(item)) for item in resolver(name, family)]
    except (LookupError, OSError, ValueError) as error:
        raise Unmappable(f"{name} does not resolve to an IPv{family} address ({error})") from None
    if not found:
        raise Unmappable(f"{name} does not resolve to an IPv{family} address")
    notes.append(f"{name} resolved to {', '.join(found)} (the server resolved it at start)")
    return found


def payload4(code: int, data: str, resolver: Resolver | None,
             notes: list[str]) -> dict[str, object]:
    """The API payload of a DHCPv4 option not owned by a field, from its text form."""
    if code in OWNED4:
        raise Unmappable(f"option {code} is not an option object here: {OWNED4[code]}")
    if code in ADDRESS4:
        found = addresses(split_list(data), 4, resolver, notes)
        if not found:
            raise Unmappable(f"option {code} has no address")
        return {"addresses": found}
    if code in TEXT4:
        return {"value": _text(code, data)}
    if code in INTEGER4:
        return {"value": _integer(code, data)}
    if code == DOMAIN_SEARCH:
        return {"domains": [name.rstrip(".").lower() for name in _names(split_list(data))]}
    if code == CLASSLESS_ROUTES:
        return {"routes": _routes(data)}
    if code in TYPED4:
        return {"hex": colon_hex(encode(TYPED4[code], data))}
    raise Unmappable(f"option {code}'s value format is unknown here: give it as hex "
                     "(Kea: csv-format false; dhcpd: a hex string)")


def payload4_hex(code: int, octets: bytes) -> dict[str, object]:
    """The API payload of a DHCPv4 option given as raw octets (Kea `csv-format: false`)."""
    if code in OWNED4:
        raise Unmappable(f"option {code} is not an option object here: {OWNED4[code]}")
    if not 1 <= len(octets) <= MAX_VALUE:
        raise Unmappable(f"option {code} is {len(octets)} octets; 1 to {MAX_VALUE} are taken")
    if code in ADDRESS4 and len(octets) % 4 == 0:
        return {"addresses": [str(ipaddress.IPv4Address(octets[i:i + 4]))
                              for i in range(0, len(octets), 4)]}
    if code in TEXT4 and octets.isascii() and octets.decode().isprintable():
        return {"value": _text(code, octets.decode())}
    if code in INTEGER4 or code in TEXT4 or code in ADDRESS4 or code in (119, 121):
        raise Unmappable(f"option {code} given as raw octets; write it in its text form")
    return {"hex": colon_hex(octets)}


def _text(code: int, data: str) -> str:
    text = data.strip().replace("\\,", ",")  # Kea escapes a comma in a text value
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    if not text or not text.isascii() or not text.isprintable() or len(text) > MAX_VALUE:
        raise Unmappable(f"option {code}: {data!r} is not printable ASCII of 1 to "
                         f"{MAX_VALUE} characters")
    return text.rstrip(".").lower() if code == 15 else text


def _integer(code: int, data: str) -> int:
    text = data.strip().lower()
    booleans = {"true": 1, "false": 0, "on": 1, "off": 0}
    try:
        value = booleans[text] if text in booleans else int(text, 0)
    except ValueError:
        raise Unmappable(f"option {code}: {data!r} is not an integer") from None
    low, high = INTEGER4[code]
    if not low <= value <= high:
        raise Unmappable(f"option {code}: {value} is outside {low}..{high}")
    return value


def _names(items: list[str]) -> list[str]:
    for name in items:
        if not re.fullmatch(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?", name.strip('"')):
            raise Unmappable(f"{name!r} is not a DNS name")
    return [name.strip('"') for name in items]


def _routes(data: str) -> list[dict[str, str]]:
    """Kea writes option 121 as `10.229.0.0/16 - 10.198.122.47, ...`."""
    routes = []
    for item in split_list(data):
        destination, sep, router = item.partition("-")
        try:
            net = ipaddress.IPv4Network(destination.strip(), strict=True)
            hop = ipaddress.IPv4Address(router.strip())
        except ValueError:
            raise Unmappable(f"classless route {item!r} is not 'destination/len - router'"
                             ) from None
        if not sep:
            raise Unmappable(f"classless route {item!r} is not 'destination/len - router'")
        routes.append({"destination": str(net), "router": str(hop)})
    if not routes:
        raise Unmappable("option 121 has no route")
    return routes


# --- values of a declared type (Kea's option-def types; dhcpd's `option x code N = type`) --

_UINT = {"uint8": 1, "uint16": 2, "uint32": 4, "int8": -1, "int16": -2, "int32": -4}


def encode(type_name: str, data: str) -> bytes:
    """A value of a declared type as its wire octets; `type[]` is an array of it."""
    if type_name.endswith("[]"):
        return b"".join(encode_one(type_name[:-2], item) for item in split_list(data))
    return encode_one(type_name, data.strip())


def encode_one(type_name: str, item: str) -> bytes:
    if type_name in _UINT:
        return _encode_int(type_name, item)
    if type_name == "ipv4-address":
        return _encode_address(item, ipaddress.IPv4Address)
    if type_name == "ipv6-address":
        return _encode_address(item, ipaddress.IPv6Address)
    if type_name == "boolean":
        return _encode_int("uint8", {"true": "1", "false": "0"}.get(item.lower(), item))
    if type_name in ("string", "text"):
        text = item.strip('"')
        if not text.isascii() or not text.isprintable() or not text:
            raise Unmappable(f"{item!r} is not printable ASCII")
        return text.encode()
    if type_name in ("binary", "hex"):
        return hex_octets(item)
    if type_name in ("fqdn", "domain-name"):
        return _fqdn(item)
    raise Unmappable(f"values of type {type_name} cannot be encoded here")


def _encode_int(type_name: str, item: str) -> bytes:
    size = abs(_UINT[type_name])
    try:
        value = int(item, 0)
        return value.to_bytes(size, "big", signed=_UINT[type_name] < 0)
    except (ValueError, OverflowError):
        raise Unmappable(f"{item!r} is not a {type_name}") from None


def _encode_address(item: str, cls: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]
                    ) -> bytes:
    try:
        return cls(item).packed
    except ValueError:
        raise Unmappable(f"{item!r} is not an IPv{cls(0).version} address") from None


def _fqdn(name: str) -> bytes:
    """A domain name in DNS wire form (RFC 1035 §3.1), uncompressed."""
    labels = [label for label in _names([name])[0].rstrip(".").split(".") if label]
    if any(len(label) > 63 for label in labels):
        raise Unmappable(f"{name!r} has a label longer than 63 octets")
    return b"".join(bytes([len(label)]) + label.encode() for label in labels) + b"\0"
