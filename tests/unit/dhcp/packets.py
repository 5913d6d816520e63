"""Crafted DHCPv4 requests for the stage, engine and UDP tests."""

from __future__ import annotations

import itertools

from ipamd.dhcp import options as o
from ipamd.dhcp.codec import DhcpMessage, parse
from ipamd.dhcp.options import ip_from_str

_xids = itertools.count(0x1000)


def ip(text: str) -> int:
    return ip_from_str(text)


def mac_bytes(n: int) -> bytes:
    """A locally administered MAC numbered n."""
    return bytes((0x02, 0x00)) + n.to_bytes(4, "big")


def request(
    mtype: int,
    mac: bytes = b"\x02\x00\x00\x00\x00\x01",
    *,
    xid: int | None = None,
    giaddr: str | int = 0,
    ciaddr: str | int = 0,
    flags: int = 0,
    requested: str | None = None,
    server_id: str | None = None,
    extra: dict[int, bytes] | None = None,
    htype: int = 1,
) -> DhcpMessage:
    opts: dict[int, bytes] = {o.MESSAGE_TYPE: bytes((mtype,))}
    if requested is not None:
        opts[o.REQUESTED_IP] = ip(requested).to_bytes(4, "big")
    if server_id is not None:
        opts[o.SERVER_ID] = ip(server_id).to_bytes(4, "big")
    opts.update(extra or {})
    return DhcpMessage(
        op=o.BOOTREQUEST, htype=htype, hlen=len(mac), xid=next(_xids) if xid is None else xid,
        flags=flags, giaddr=ip(giaddr) if isinstance(giaddr, str) else giaddr,
        ciaddr=ip(ciaddr) if isinstance(ciaddr, str) else ciaddr,
        chaddr=mac.ljust(16, b"\0"), options=opts,
    )


def wire(msg: DhcpMessage) -> bytes:
    return msg.to_bytes()


def roundtrip(msg: DhcpMessage) -> DhcpMessage:
    """What the server sees: the bytes parsed back."""
    return parse(msg.to_bytes())


def relay_info(circuit: bytes | None = None, remote: bytes | None = None,
               link: str | None = None, sid_override: str | None = None) -> bytes:
    out = b""
    if circuit is not None:
        out += bytes((1, len(circuit))) + circuit
    if remote is not None:
        out += bytes((2, len(remote))) + remote
    if link is not None:
        out += bytes((5, 4)) + ip(link).to_bytes(4, "big")
    if sid_override is not None:
        out += bytes((11, 4)) + ip(sid_override).to_bytes(4, "big")
    return out
