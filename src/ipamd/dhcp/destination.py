"""Stage 7, where to send the reply (RFC 2131 §4.1).

Relayed: to the relay, giaddr, on the server port (dhcp.reply_port). Otherwise to
ciaddr when the client has an address, else broadcast on the client port (NAKs, and
clients without an address: without raw sockets a server cannot unicast to an
address the client does not have yet, so it broadcasts whatever the flag says).
"""

from __future__ import annotations

from ipamd.dhcp.codec import DhcpMessage
from ipamd.dhcp.options import NAK

BROADCAST = 0xFFFFFFFF


def destination(request: DhcpMessage, reply_type: int, reply_port: int,
                client_port: int) -> tuple[int, int]:
    """(address, port) to send the reply to."""
    if request.giaddr:
        return request.giaddr, reply_port
    if request.ciaddr and reply_type != NAK:
        return request.ciaddr, client_port
    return BROADCAST, client_port
