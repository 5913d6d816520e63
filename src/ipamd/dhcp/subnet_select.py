"""Stage 2, select the subnet: which L3 network is the client on?

Relayed (giaddr set; the relay is already trusted by the accept stage): the link
selection sub-option of option 82 (RFC 3527), else option 118 (RFC 3011), else
giaddr. Not relayed: ciaddr for a client that has an address (renew, release,
inform), else the served interface the packet came in on. Also records the relay
agent's circuit and remote ids on the transaction.
"""

from __future__ import annotations

from ipamd.dhcp.context import Env, Tx
from ipamd.dhcp.options import RELAY_AGENT, SUBNET_SELECTION, MalformedPacket
from ipamd.dhcp.relay_agent import parse_relay_agent_info


def select_subnet(tx: Tx, env: Env) -> str | None:
    msg = tx.msg
    if msg.giaddr:
        link = 0
        raw = msg.options.get(RELAY_AGENT)
        if raw is not None:
            try:
                info = parse_relay_agent_info(raw)
            except MalformedPacket as error:
                return error.reason
            tx.circuit_id = info.circuit_id
            tx.remote_id = info.remote_id
            link = info.link_selection or 0
        if not link:
            raw = msg.options.get(SUBNET_SELECTION)
            if raw is not None:
                if len(raw) != 4:
                    return "bad_option_length"
                link = int.from_bytes(raw, "big")
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
