"""The engine's decision once a ping check's probe ended (docs/api-ipam.md, "Ping check").

Beside ``engine`` and not compiled with it: only a subnet with the ping check on comes here,
once per probe. Silent (or unchecked: counted), the address held for the client is offered;
answered, it is held like a declined address — a ``declined`` lease under no client's key
(``PING_CONFLICT_KEY``), for ``dhcp.decline_probation_seconds``, with its history row and
``lease.declined`` event — and, once that is committed, the client gets another pick
(``engine.finish``).
"""

from __future__ import annotations

from ipamd.dhcp import pingcheck
from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.engine import Decision, _allowed, _claim, _discover, _free, _offer
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.pingcheck import PING_CONFLICT_KEY
from ipamd.dhcp.plan import Subnet


def after_probe(tx: Exchange, env: Env, probe: pingcheck.Probe, result: int) -> Decision:
    """Decide again for the client whose address ``probe`` asked about (the pinger told the
    gate how it ended)."""
    subnet = tx.subnet
    assert subnet is not None
    ip = probe.ip
    if result == pingcheck.ANSWERED:
        return _conflict(tx, env, subnet, ip)
    hold = env.cache.holds.client(subnet.id, tx.client_key)
    if (hold is not None and hold.ip == ip and _allowed(tx, subnet, ip)
            and _free(env, tx, subnet, ip)):
        return _offer(tx, env, ip)
    return _discover(tx, env)  # the hold lapsed or went meanwhile: a pick as new


def _conflict(tx: Exchange, env: Env, subnet: Subnet, ip: int) -> Decision:
    env.counters.ping_conflicts[str(subnet.id)] += 1
    hold = env.cache.holds.client(subnet.id, tx.client_key)
    if hold is not None and hold.ip == ip:
        env.cache.holds.drop(subnet.id, tx.client_key)
    if env.cache.at(subnet.id, ip) is not None or ip in env.pending_in(subnet.id):
        return _discover(tx, env)  # a lease holds it already: nothing to hold
    return _claim(env, tx, Op(OpKind.INSERT, subnet.id, ip, PING_CONFLICT_KEY,
                              env.config.decline_probation_seconds,
                              giaddr=tx.msg.giaddr or None, state="declined"))
