"""Stage 2, select the subnet: which L3 network is the client on?

Relayed (giaddr set; the relay is already trusted by the accept stage): the link
selection sub-option of option 82 (RFC 3527), else option 118 (RFC 3011), else
giaddr. Not relayed: ciaddr for a client that has an address (renew, release,
inform), else the served interface the packet came in on. Also records the relay
agent's circuit and remote ids, and its server identifier override (RFC 5107), on the
exchange.
"""

from __future__ import annotations

from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.options import MalformedPacket


def select_subnet(tx: Exchange, env: Env) -> str | None:
    msg = tx.msg
    if msg.giaddr:
        link = 0
        try:
            info = msg.relay_agent_info
        except MalformedPacket as error:
            return error.reason
        if info is not None:
            tx.circuit_id = info.circuit_id
            tx.remote_id = info.remote_id
            tx.sid_override = info.server_id_override or 0
            link = info.link_selection or 0
        if not link:
            try:
                link = msg.subnet_selection or 0
            except MalformedPacket as error:
                return error.reason
        where = link or msg.giaddr
    elif msg.ciaddr:
        where = msg.ciaddr
    elif tx.endpoint.interface_ip:
        where = tx.endpoint.interface_ip
    else:
        return "no_link"
    subnet = env.plan.subnet_for(where)
    if subnet is None:
        return "no_subnet"
    if not subnet.dhcp_enabled:
        return "dhcp_disabled"
    tx.subnet = subnet
    return None
