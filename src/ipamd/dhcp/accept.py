"""Stage 1, accept: is this a request this server should look at at all?

Returns a drop reason, or None to go on.
"""

from __future__ import annotations

from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.options import (
    BOOTREQUEST,
    DECLINE,
    DISCOVER,
    INFORM,
    RELEASE,
    REQUEST,
    MalformedPacket,
)

HANDLED = frozenset({DISCOVER, REQUEST, DECLINE, RELEASE, INFORM})
# Messages a client addresses to one server by its identifier (RFC 2131 §4.3.2, 4.3.3, 4.3.4).
_ADDRESSED = frozenset({REQUEST, DECLINE, RELEASE})


def accept(tx: Exchange, env: Env) -> str | None:
    msg = tx.msg
    if msg.op != BOOTREQUEST:
        return "not_request"
    if tx.mtype not in HANDLED:
        return "unhandled_type"
    if msg.giaddr and tx.src_ip not in env.trusted:
        return "untrusted_relay"
    if tx.mtype in _ADDRESSED:
        try:
            sid = msg.server_id
        except MalformedPacket as error:
            return error.reason
        if (sid is not None and sid not in env.server_ids and sid != tx.local_ip
                and sid != env.server_id and not _overridden_to(tx, sid)):
            return "not_for_us"
    return None


def _overridden_to(tx: Exchange, sid: int) -> bool:
    """The (trusted) relay told the client our identifier is ``sid`` (RFC 5107): the rare
    path, so option 82 is parsed here only when the identifier is not one of ours."""
    if not tx.msg.giaddr:
        return False
    try:
        info = tx.msg.relay_agent_info
    except MalformedPacket:
        return False  # the subnet stage drops it with the reason
    return info is not None and info.server_id_override == sid
