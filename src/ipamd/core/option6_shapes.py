"""DHCPv6 option payloads an IPv6 subnet may carry: one JSON shape per code, validated,
normalised and encoded to wire bytes (RFC 8415 §21: a 2-octet code and length precede them).

Only the options a DHCPv6 server sends from a subnet's settings are taken; every other code
is refused with a message (docs/api-ipam.md, "IPv6"):

- 23 DNS recursive name servers (RFC 3646)   ``{"addresses": ["2001:db8::53"]}``
- 24 domain search list (RFC 3646)           ``{"domains": ["example.com"]}``
- 56 NTP servers (RFC 5908, suboption 1)     ``{"addresses": ["2001:db8::123"]}``
- 17 vendor-specific information (RFC 8415 §21.17)
  ``{"enterprise": 4491, "suboptions": [{"code": 1, "hex": "01:02"}]}``
- 59 boot file URL (RFC 5970)                ``{"url": "tftp://[2001:db8::69]/boot.efi"}``
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable
from typing import Any

from ipamd.core import dnswire, identifiers, validate
from ipamd.core.option_shapes import only_fields as _only
from ipamd.core.option_shapes import string_list

DNS_SERVERS = 23
DOMAIN_LIST = 24
NTP_SERVER = 56
VENDOR_OPTS = 17
BOOTFILE_URL = 59
CODES = (DNS_SERVERS, DOMAIN_LIST, NTP_SERVER, VENDOR_OPTS, BOOTFILE_URL)
CODES_TEXT = ("17 (vendor-specific information), 23 (DNS servers), 24 (domain search list), "
              "56 (NTP servers), 59 (boot file URL)")

MAX_ADDRESSES = 32  # far more than any client uses; keeps a Reply well under a link's MTU
MAX_DOMAINS = 32
MAX_URL = 1024
MAX_SUBOPTIONS = 32
MAX_SUBOPTION_DATA = 1024
NTP_SUBOPTION_SRV_ADDR = 1  # RFC 5908 §4.1
URL_SCHEMES = ("tftp", "http", "https", "ftp", "nfs", "iscsi")


def _server_address(item: str) -> str:
    try:
        address = ipaddress.IPv6Address(item.strip())
    except ValueError:
        raise ValueError(f"{item!r} is not an IPv6 address") from None
    if address.scope_id or address.is_multicast or address.is_unspecified:
        raise ValueError(f"{item!r} is not a unicast server address")
    return str(address)


def _addresses(payload: dict[str, Any]) -> dict[str, Any]:
    _only(payload, {"addresses"}, '{"addresses": ["2001:db8::53"]}')
    return {"addresses": string_list(payload["addresses"], "addresses", "IPv6 addresses",
                                     _server_address, MAX_ADDRESSES)}


def _domains(payload: dict[str, Any]) -> dict[str, Any]:
    _only(payload, {"domains"}, '{"domains": ["example.com"]}')
    return {"domains": string_list(payload["domains"], "domains", "domain names",
                                   validate.dns_name, MAX_DOMAINS)}


def _vendor(payload: dict[str, Any]) -> dict[str, Any]:
    example = '{"enterprise": 4491, "suboptions": [{"code": 1, "hex": "01:02"}]}'
    _only(payload, {"enterprise", "suboptions"}, example)
    enterprise = payload["enterprise"]
    if isinstance(enterprise, bool) or not isinstance(enterprise, int) \
            or not 0 <= enterprise <= 2**32 - 1:
        raise ValueError("enterprise must be an IANA enterprise number (0 to 4294967295)")
    subs = payload["suboptions"]
    if not isinstance(subs, list) or not subs or len(subs) > MAX_SUBOPTIONS:
        raise ValueError(f"suboptions must be a list of 1 to {MAX_SUBOPTIONS} like {example}")
    out = []
    for index, item in enumerate(subs):
        if not isinstance(item, dict) or set(item) != {"code", "hex"}:
            raise ValueError(f"suboptions[{index}] must be {{code, hex}}")
        code, data = item["code"], item["hex"]
        if isinstance(code, bool) or not isinstance(code, int) or not 1 <= code <= 65_535:
            raise ValueError(f"suboptions[{index}].code must be 1 to 65535")
        if not isinstance(data, str):
            raise ValueError(f"suboptions[{index}].hex must be a string of hex octets")
        try:
            raw = identifiers.hex_bytes(data, max_length=MAX_SUBOPTION_DATA)
        except ValueError as error:
            raise ValueError(f"suboptions[{index}].hex: {error}") from None
        out.append({"code": code, "hex": identifiers.colon_hex(raw)})
    return {"enterprise": enterprise, "suboptions": out}


def _url(payload: dict[str, Any]) -> dict[str, Any]:
    _only(payload, {"url"}, '{"url": "tftp://[2001:db8::69]/boot.efi"}')
    value = payload["url"]
    if not isinstance(value, str) or not value:
        raise ValueError("url must be a non-empty string")
    # RFC 5970 §3.1: a URL (RFC 3986), so ASCII without spaces; hosts in brackets if IPv6.
    if len(value) > MAX_URL or not value.isascii() or not value.isprintable() or " " in value:
        raise ValueError(f"url must be at most {MAX_URL} printable ASCII characters, no spaces")
    try:
        parts = urllib.parse.urlsplit(value)
        host = parts.hostname
    except ValueError as error:
        raise ValueError(f"url: {error}") from None
    if parts.scheme.lower() not in URL_SCHEMES:
        raise ValueError(f"url: the scheme must be one of {', '.join(URL_SCHEMES)}")
    if not host:
        raise ValueError("url must name a host, e.g. tftp://[2001:db8::69]/boot.efi")
    return {"url": value}


NORMALISE: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    DNS_SERVERS: _addresses,
    DOMAIN_LIST: _domains,
    NTP_SERVER: _addresses,
    VENDOR_OPTS: _vendor,
    BOOTFILE_URL: _url,
}


def check_code(code: int) -> None:
    if code not in NORMALISE:
        raise ValueError(
            f"option {code} is not taken on an IPv6 subnet: its options are DHCPv6 options "
            f"{CODES_TEXT}; the others are set by the server or the client"
        )


def normalise(code: int, payload: Any) -> dict[str, Any]:
    """The canonical payload for ``code``; ValueError names what is wrong inside it."""
    check_code(code)
    if not isinstance(payload, dict):
        raise ValueError("must be an object")
    return NORMALISE[code](payload)


def _dns_wire(name: str) -> bytes:
    # RFC 8415 §10: domain names in uncompressed RFC 1035 form (a checked name: ASCII labels).
    return dnswire.encode(tuple(label.encode("ascii") for label in name.split(".")))


def wire(code: int, payload: dict[str, Any]) -> bytes:
    """The option's data (after its code and length) for a normalised payload."""
    if code == DNS_SERVERS:
        return b"".join(ipaddress.IPv6Address(a).packed for a in payload["addresses"])
    if code == NTP_SERVER:
        return b"".join(NTP_SUBOPTION_SRV_ADDR.to_bytes(2, "big") + (16).to_bytes(2, "big")
                        + ipaddress.IPv6Address(a).packed for a in payload["addresses"])
    if code == DOMAIN_LIST:
        return b"".join(_dns_wire(name) for name in payload["domains"])
    if code == VENDOR_OPTS:
        data = int(payload["enterprise"]).to_bytes(4, "big")
        for sub in payload["suboptions"]:
            raw = identifiers.hex_bytes(sub["hex"], max_length=MAX_SUBOPTION_DATA)
            data += int(sub["code"]).to_bytes(2, "big") + len(raw).to_bytes(2, "big") + raw
        return data
    if code == BOOTFILE_URL:
        return str(payload["url"]).encode("ascii")
    raise ValueError(f"option {code} is not a DHCPv6 option of a subnet")
