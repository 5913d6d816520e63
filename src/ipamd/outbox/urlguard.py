"""Webhook URL rules (docs/webhooks.md, "Webhook rules") and the address rules behind them
(SSRF).

Applied when a webhook is created or changed, and again at every delivery after name
resolution (backend.py connects only to an address vetted here):

- https only; plain http only for localhost (a loopback host);
- no credentials in the URL, no fragment, no numeric shorthand hosts (2130706433, 0x7f.1);
- never an address that is link-local (169.254.0.0/16, fe80::/10), a cloud metadata service
  (169.254.169.254, fd00:ec2::254 and their kin), unspecified, multicast or broadcast,
  nor an IPv6 address that embeds such an IPv4 address (mapped, compatible, SIIT, NAT64,
  6to4, Teredo, ISATAP);
- a name that resolves to any such address is refused as a whole.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import trio

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048

# Instance metadata services outside 169.254.0.0/16 (which is refused as link-local anyway).
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer
        "192.0.0.192",  # Oracle Cloud (classic)
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS Route 53 resolver over IPv6
        "fd20:ce::254",  # GCP metadata over IPv6
    )
)
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)

_V4_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_V4_BROADCAST = ipaddress.ip_address("255.255.255.255")
_V6_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_V6_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_V6_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")
_V6_COMPATIBLE = ipaddress.ip_network("::/96")
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


class UrlRefused(Exception):
    """The URL or the address it leads to breaks a rule; the message says which."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # ASCII (IDNA) form, lower case, without a trailing dot
    port: int
    literal: IPAddress | None  # set when the host is an IP address
    path: str = "/"  # request target: path and query, as sent
    authority: str = ""  # the Host header: host, [v6], and the port unless the default
    url: httpx.URL = field(default_factory=lambda: httpx.URL(), compare=False)  # as parsed

    @property
    def is_localhost(self) -> bool:
        return self.host == "localhost" or (self.literal is not None and self.literal.is_loopback)


def _v4(value: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(value & 0xFFFFFFFF)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (the forms a translator or tunnel would reach)."""
    value = int(address)
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address in _V6_SIIT:
        found.append(_v4(value))
    if address in _V6_COMPATIBLE and value > 1:
        found.append(_v4(value))
    if address in _V6_NAT64_WELL_KNOWN:
        found.append(_v4(value))
    if address in _V6_NAT64_LOCAL:
        # The operator's prefix length is unknown: try every RFC 6052 layout a /48 can be cut
        # into (bits 64-71 are zero). Layouts that read only padding give 0.x.x.x: skipped.
        octets = address.packed
        for part in (octets[12:16], octets[9:13], octets[7:8] + octets[9:12],
                     octets[6:8] + octets[9:11]):  # /96, /64, /56, /48
            candidate = ipaddress.IPv4Address(part)
            if candidate not in _V4_THIS_NETWORK:
                found.append(candidate)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if (value >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP interface id (u/l bit either way)
        found.append(_v4(value))
    return found


def forbidden_reason(address: IPAddress) -> str | None:
    """Why deliveries must never reach `address`, or None when it is allowed."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata service address"
    if isinstance(address, ipaddress.IPv4Address):
        if address in _V4_THIS_NETWORK:
            return "an unspecified ('this network') address"
        if address.is_link_local:
            return "a link-local address"
        if address.is_multicast:
            return "a multicast address"
        if address == _V4_BROADCAST:
            return "the broadcast address"
        return None
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.scope_id:
        return "an address with a zone index"
    for inner in embedded_ipv4(address):
        reason = forbidden_reason(inner)
        if reason is not None:
            return f"an IPv6 form of {inner}, {reason}"
    return None


def _host_of(url: httpx.URL) -> tuple[str, IPAddress | None]:
    try:
        raw = url.raw_host.decode("ascii")
    except UnicodeDecodeError:
        raise UrlRefused("url: host is not valid") from None
    host = raw.lower()
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        return host, literal
    if "%" in host:
        raise UrlRefused("url: host contains characters a host name cannot have")
    host = host.removesuffix(".")
    if not host or len(host) > 253:
        raise UrlRefused("url: host name is empty or longer than 253 characters")
    try:
        socket.inet_aton(host)
    except OSError:
        pass
    else:
        # inet_aton accepts 2130706433, 0x7f.1, 0177.0.0.1, 127.1: resolvers do too.
        raise UrlRefused(
            f"url: numeric host {host!r} is not a plain dotted-quad address; write the "
            "address in full (a.b.c.d) or use a name"
        )
    if not all(_LABEL.match(label) for label in host.split(".")):
        raise UrlRefused(f"url: {host!r} is not a valid host name")
    if host in METADATA_NAMES:
        raise UrlRefused(f"url: {host} is a cloud metadata service")
    return host, None


@functools.lru_cache(maxsize=1024)
def check_url(url: str) -> Target:
    """The rules that need no name resolution; UrlRefused names the rule broken.

    Cached: every delivery checks its URL again, and the answer depends on the string alone
    (a refusal raises, so only accepted URLs are cached).
    """
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"url: at most {MAX_URL_LENGTH} characters")
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url):
        raise UrlRefused("url: must not contain spaces or control characters")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as error:
        raise UrlRefused(f"url: not a valid URL ({error})") from None
    scheme = parsed.scheme
    if scheme not in ("https", "http"):
        raise UrlRefused("url: the scheme must be https (http only for localhost)")
    if not parsed.raw_host:
        raise UrlRefused("url: a host is required")
    if parsed.userinfo:
        raise UrlRefused("url: must not carry credentials (user:password@)")
    if parsed.fragment:
        raise UrlRefused("url: must not have a #fragment (it is never sent)")
    host, literal = _host_of(parsed)
    port = parsed.port or (443 if scheme == "https" else 80)
    if literal is not None:
        reason = forbidden_reason(literal)
        if reason is not None:
            raise UrlRefused(f"url: {literal} is {reason}")
    shown_host = f"[{host}]" if isinstance(literal, ipaddress.IPv6Address) else host
    default_port = parsed.port is None or parsed.port == (443 if scheme == "https" else 80)
    target = Target(
        scheme=scheme, host=host, port=port, literal=literal,
        path=parsed.raw_path.decode("ascii") or "/",
        authority=shown_host if default_port else f"{shown_host}:{port}", url=parsed,
    )
    if scheme == "http" and not target.is_localhost:
        raise UrlRefused("url: plain http is allowed only for localhost; use https")
    return target


def vet_addresses(host: str, addresses: list[IPAddress]) -> list[IPAddress]:
    """Refuse the whole answer if any address is forbidden (a mixed answer is an attack)."""
    if not addresses:
        raise UrlRefused(f"{host} resolves to no address")
    for address in addresses:
        reason = forbidden_reason(address)
        if reason is not None:
            raise UrlRefused(f"{host} resolves to {address}, {reason}")
        if host == "localhost" and not address.is_loopback:
            raise UrlRefused(f"localhost resolves to {address}, which is not a loopback address")
    return addresses


class HostsFile:
    """Static name → address mappings in /etc/hosts format, consulted before DNS.

    Set by outbox.hosts_file; re-read whenever the file changes, so an operator (or a test)
    can pin or move a name without a restart.
    """

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int] | None = None
        self._names: dict[str, list[IPAddress]] = {}

    def lookup(self, host: str) -> list[IPAddress] | None:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._names = None, {}
            return None
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp != self._stamp:
            self._names = self._parse(self.path.read_text(encoding="utf-8"))
            self._stamp = stamp
        return self._names.get(host)

    @staticmethod
    def _parse(text: str) -> dict[str, list[IPAddress]]:
        names: dict[str, list[IPAddress]] = {}
        for line in text.splitlines():
            fields = line.split("#", 1)[0].split()
            if len(fields) < 2:
                continue
            try:
                address = ipaddress.ip_address(fields[0])
            except ValueError:
                continue
            for name in fields[1:]:
                names.setdefault(name.lower().removesuffix("."), []).append(address)
        return names


class ResolveError(Exception):
    """The name did not resolve (a delivery failure to retry, not a rule broken)."""


class Resolver:
    """Name → addresses: IP literals as they are, then the hosts file, then the system."""

    def __init__(self, hosts_file: str = "") -> None:
        self.hosts = HostsFile(hosts_file) if hosts_file else None

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        name = host.lower().removesuffix(".")
        try:
            return [ipaddress.ip_address(name)]
        except ValueError:
            pass
        if self.hosts is not None:
            pinned = self.hosts.lookup(name)
            if pinned:
                return list(pinned)
        try:
            infos = await trio.socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except socket.gaierror as error:
            raise ResolveError(f"cannot resolve {name}: {error.strerror}") from None
        found: list[IPAddress] = []
        for _family, _type, _proto, _canon, sockaddr in infos:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
            if address not in found:
                found.append(address)
        return found

    async def vetted(self, host: str, port: int) -> list[IPAddress]:
        """The addresses of `host` if every one of them is allowed; UrlRefused otherwise."""
        return vet_addresses(host.lower().removesuffix("."), await self.resolve(host, port))
