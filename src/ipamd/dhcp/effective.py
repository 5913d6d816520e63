"""What a client would receive on a subnet, and from which scope (GET
/subnets/{id}/effective-options; docs/api-ipam.md, "Option scopes").

Answered by the server's own code, not a second implementation: the subnet's plan is
built as the server builds it (``plan_loader.load_subnet_rows`` + ``plan.build``), a
Discover with the client's fields goes through the identify and classify stages, and the
options are those ``reply.subnet_options`` gives the subnet ``scopes.lay`` makes.
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from ipamd.config import DhcpConfig
from ipamd.core.errors import invalid, not_found
from ipamd.dhcp.classify import classify
from ipamd.dhcp.context import Endpoint, Env, Exchange
from ipamd.dhcp.counters import DhcpCounters
from ipamd.dhcp.freepool import AddressPicker
from ipamd.dhcp.identity import identify
from ipamd.dhcp.leasecache import LeaseCache
from ipamd.dhcp.message import DhcpMessage
from ipamd.dhcp.options import (
    BOOTREQUEST,
    CLIENT_ARCH,
    CLIENT_ID,
    DISCOVER,
    HOSTNAME,
    HTYPE_ETHER,
    MESSAGE_TYPE,
    USER_CLASS,
    VENDOR_CLASS,
)
from ipamd.dhcp.plan import Plan, Subnet, build
from ipamd.dhcp.plan_loader import load_subnet_rows
from ipamd.dhcp.relays import TrustedRelays
from ipamd.dhcp.reply import subnet_options
from ipamd.dhcp.scopes import Source, lay, layers_for


@dataclass(frozen=True)
class Client:
    """The fields of a client's Discover that decide its options."""

    mac: bytes  # 6 octets
    client_id: bytes | None = None  # option 61
    vendor_class: str | None = None  # option 60
    user_class: str | None = None  # one option 77 instance
    arch: int | None = None  # option 93
    circuit_id: bytes | None = None  # a trusted relay's option 82 sub-option 1
    remote_id: bytes | None = None  # sub-option 2


def _discover(client: Client) -> DhcpMessage:
    options: dict[int, bytes] = {MESSAGE_TYPE: bytes((DISCOVER,))}
    if client.client_id:
        options[CLIENT_ID] = client.client_id
    if client.vendor_class:
        options[VENDOR_CLASS] = client.vendor_class.encode()
    if client.user_class:
        raw = client.user_class.encode()
        options[USER_CLASS] = bytes((len(raw),)) + raw  # RFC 3004: one instance
    if client.arch is not None:
        options[CLIENT_ARCH] = client.arch.to_bytes(2, "big")
    return DhcpMessage(op=BOOTREQUEST, htype=HTYPE_ETHER, hlen=6, xid=0, flags=0,
                       chaddr=client.mac.ljust(16, b"\0"), options=options)


def _env(plan: Plan) -> Env:
    """An environment for the stages that only read the plan (identify, classify)."""
    config = DhcpConfig(enabled=False)
    return Env(config=config, plan=plan, cache=LeaseCache(), picker=AddressPicker(),
               trusted=TrustedRelays(()), counters=DhcpCounters())


def _scope(source: Source) -> dict[str, Any]:
    kind, ident, name = source
    return {"scope": kind, "scope_id": ident, "scope_name": name or None}


def classified(plan: Plan, subnet: Subnet, client: Client) -> Exchange:
    """The Discover as the stages leave it: its reservation and classes."""
    msg = _discover(client)
    tx = Exchange(msg, DISCOVER, 0, 68, Endpoint(sock=None, local_ip=0, port=67))
    tx.subnet = subnet
    tx.circuit_id, tx.remote_id = client.circuit_id, client.remote_id
    env = _env(plan)
    identify(tx, env)
    classify(tx, env)
    return tx


def explain(plan: Plan, subnet: Subnet, client: Client) -> dict[str, Any]:
    """The options ``client`` gets on ``subnet`` (all of them: no parameter request list)
    and where each came from."""
    tx = classified(plan, subnet, client)
    made, sources = lay(subnet, layers_for(plan, tx.classes, tx.reservation))
    vendor = client.vendor_class.encode() if client.vendor_class else None
    prefix = next((p for p, _ in made.vendor_options if vendor and vendor.startswith(p)), None)
    options = []
    for code, value in sorted(subnet_options(made, b"", vendor).items()):
        source = sources.get((code, prefix)) or sources[(code, None)]
        options.append({"code": code, "hex": value.hex(":"), **_scope(source),
                        "vendor_class": prefix.decode() if (code, prefix) in sources
                        and prefix else None})
    res = tx.reservation
    if res is not None and res.hostname:  # the reply's option 12 (dhcp/reply.py)
        options.append({"code": HOSTNAME, "hex": res.hostname.encode().hex(":"),
                        **_scope(("reservation", res.id, str(ipaddress.IPv4Address(res.ip)))),
                        "vendor_class": None})
    fields = {name: ({"value": getattr(made, name), **_scope(sources[name])}
                     if getattr(made, name) else None) for name in ("next_server", "boot_file")}
    return {
        "subnet_id": subnet.id,
        "reservation": None if res is None else {
            "id": res.id, "ip": str(ipaddress.IPv4Address(res.ip))},
        # Highest precedence first: the order in which their options win.
        "classes": [{"id": c.id, "name": c.name, "priority": c.priority}
                    for c in plan.classes if c.id in tx.classes],
        "options": options,
        **fields,
    }


async def effective_options(conn: asyncpg.Connection, subnet_id: uuid.UUID,
                            client: Client) -> dict[str, Any]:
    """``explain`` for the subnet as the database holds it now; 404 / 422 (IPv6)."""
    family = await conn.fetchval("SELECT family(cidr) FROM subnets WHERE id = $1", subnet_id)
    if family is None:
        raise not_found("subnet", str(subnet_id))
    if family != 4:
        raise invalid("subnet_id", "effective options are the DHCPv4 server's; an IPv6 "
                      "subnet's options are its own (docs/dhcpv6.md)")
    plan = build(await load_subnet_rows(conn, subnet_id))
    return explain(plan, plan.subnets[subnet_id], client)
