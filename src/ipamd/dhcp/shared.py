"""Shared networks in the allocate step: which member subnet serves this exchange.

The relay's giaddr (or link selection) named one member (subnet_select); a client of the
group may hold, or be given, an address of any member (docs/api-ipam.md, "Shared
networks"). The exchange then moves to that member — ``tx.subnet`` is the subnet the
address belongs to — so its reservation, lease time, DDNS name and the reply's mask,
router and options are that member's. Called only for a subnet whose ``shared`` is not
empty: a subnet on a link alone never comes here.
"""

from __future__ import annotations

from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.identity import identify, reservation_in
from ipamd.dhcp.options import MalformedPacket
from ipamd.dhcp.plan import Subnet


def _here(tx: Exchange) -> Subnet:
    subnet = tx.subnet
    assert subnet is not None  # subnet_select set it
    return subnet


def _members(env: Env, subnet: Subnet) -> list[Subnet]:
    """The group as ``subnet`` sees it: itself first, then the others in order."""
    found = env.plan.subnets
    return [found[ident] for ident in subnet.shared if ident in found]


def _move(tx: Exchange, env: Env, member: Subnet) -> Subnet:
    """Serve the exchange from ``member``: the stages that read the subnet run again."""
    tx.subnet = member
    tx.reservation = None
    tx.fqdn = None
    tx.lease_time = 0
    identify(tx, env)
    return member


def settle(tx: Exchange, env: Env) -> Subnet:
    """A Discover: the member where the client already has an address — its reservation
    (members in order), else its lease, else its Offer hold, else the member holding the
    address it asks for (option 50) — or the subnet the relay named."""
    here = _here(tx)
    if tx.reservation is not None:
        return here
    members = _members(env, here)
    for member in members[1:]:
        if reservation_in(member, tx.msg) is not None:
            return _move(tx, env, member)
    cache, key = env.cache, tx.client_key
    for member in members:
        if cache.client(member.id, key) is not None:
            return here if member is here else _move(tx, env, member)
    for member in members:
        if cache.holds.client(member.id, key) is not None:
            return here if member is here else _move(tx, env, member)
    try:
        wanted = tx.msg.requested_ip
    except MalformedPacket:  # as the engine reads it: as if no address was asked for
        wanted = None
    if wanted is not None and not here.contains(wanted):
        return move_to(tx, env, wanted)
    return here


def pick_beyond(tx: Exchange, env: Env) -> tuple[Subnet, int] | None:
    """The first free address of the other members' pools (the subnet in hand is full for
    this client), in the group's order; the exchange moves to that member."""
    here = _here(tx)
    cache, picker = env.cache, env.picker
    for member in _members(env, here)[1:]:
        ip = picker.pick(member, tx.classes, cache.ips(member.id), env.pending_in(member.id),
                         cache.holds.ips(member.id))
        if ip is not None:
            return _move(tx, env, member), ip
    return None


def move_to(tx: Exchange, env: Env, ip: int) -> Subnet:
    """The member ``ip`` belongs to (a Request, Decline or Release of an address of
    another member than the relay's is this group's, not a wrong network); the subnet in
    hand when no member holds it."""
    here = _here(tx)
    for member in _members(env, here)[1:]:
        if member.contains(ip):
            return _move(tx, env, member)
    return here
