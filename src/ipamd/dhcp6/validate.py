"""Which client messages a server acts on (RFC 8415 §16): the first stage after parsing.

``validate(message, server_duid)`` returns a drop reason from :data:`DROP_REASONS`, or None
when the message may go on. It mirrors DHCPv4's stages (``dhcp.accept``): pure, no
sockets, a reason the server counts (``dhcp.counters``' style) instead of an exception.

The rules, per message type (§16.2-§16.12; "discard" in the RFC is a drop here):

=====================  ==============  =============================  ===========
message                Client Id       Server Id                      IA options
=====================  ==============  =============================  ===========
Solicit                required        must be absent
Request, Renew,        required        required, must be ours
Decline, Release
Confirm, Rebind        required        must be absent
Information-request    optional        if present, must be ours       none
=====================  ==============  =============================  ===========

More than one Client or Server Identifier makes a message ambiguous: dropped, as Kea does.
Messages only servers send (Advertise, Reply, Reconfigure) are ``not_client_message``;
§16.1 lets a server answer an invalid message with UnspecFail, but it need not, and an
answer to a message we cannot trust only helps whoever forged it.
"""

from __future__ import annotations

from ipamd.dhcp6 import protocol as p
from ipamd.dhcp6.codec import Message
from ipamd.dhcp6.duid import Duid
from ipamd.dhcp6.options import ClientId, ServerId

# Fixed set so the server can keep one drop counter per reason.
DROP_REASONS = frozenset(
    {
        "not_client_message",  # Advertise, Reply, Reconfigure (or a relay message) from a peer
        "no_client_id",  # a Client Identifier is required (§16.2-§16.9)
        "no_server_id",  # Request, Renew, Decline, Release name no server (§16.4, §16.6...)
        "server_id_present",  # Solicit, Confirm, Rebind must not name a server (§16.2, §16.5)
        "not_for_us",  # the Server Identifier is another server's DUID
        "multiple_client_id",  # more than one Client Identifier option
        "multiple_server_id",  # more than one Server Identifier option
        "ia_in_information_request",  # an IA in an Information-request (§16.12)
    }
)

_NEEDS_OUR_ID = frozenset({p.REQUEST, p.RENEW, p.DECLINE, p.RELEASE})
_NO_SERVER_ID = frozenset({p.SOLICIT, p.CONFIRM, p.REBIND})


def validate(message: Message, server_duid: Duid) -> str | None:
    """A drop reason for a client message this server must not act on, else None."""
    msg_type = message.msg_type
    if msg_type not in p.CLIENT_TYPES:
        return "not_client_message"
    clients: list[ClientId] = []
    servers: list[ServerId] = []
    for option in message.options:  # one pass (every message comes through here)
        if type(option) is ClientId:
            clients.append(option)
        elif type(option) is ServerId:
            servers.append(option)
    if len(clients) > 1:
        return "multiple_client_id"
    if len(servers) > 1:
        return "multiple_server_id"
    if msg_type == p.INFORMATION_REQUEST:
        return _information_request(message, servers, server_duid)
    if not clients:
        return "no_client_id"
    if msg_type in _NO_SERVER_ID:
        return "server_id_present" if servers else None
    if msg_type in _NEEDS_OUR_ID:
        if not servers:
            return "no_server_id"
        return None if servers[0].duid == server_duid else "not_for_us"
    return None


def _information_request(message: Message, servers: list[ServerId],
                         server_duid: Duid) -> str | None:
    # §16.12: the Client Identifier is optional; a Server Identifier, if any, must be ours.
    if servers and servers[0].duid != server_duid:
        return "not_for_us"
    has_ia = any(o.code in (p.OPTION_IA_NA, p.OPTION_IA_TA, p.OPTION_IA_PD)
                 for o in message.options)
    return "ia_in_information_request" if has_ia else None

