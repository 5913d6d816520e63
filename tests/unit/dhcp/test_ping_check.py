"""The ping check in the engine (docs/api-ipam.md, "Ping check"): which Offers wait for a
probe, what a silent or an answered probe leads to, and the gate's bookkeeping."""

from __future__ import annotations

import time
import uuid
from typing import Any

from ipamd.dhcp import options as o
from ipamd.dhcp import pingcheck
from ipamd.dhcp.codec import parse
from ipamd.dhcp.context import Env
from ipamd.dhcp.engine import DhcpReply, decide, finish
from ipamd.dhcp.leasecache import Lease
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.pingcheck import PING_CONFLICT_KEY, PingGate, Probe
from ipamd.dhcp.probed import after_probe
from tests.unit.dhcp.envs import RELAY, SERVER, SUBNET, make_env, make_plan, subnet_row, tx_for
from tests.unit.dhcp.packets import ip, request

MAC = bytes.fromhex("001a2b3c4d5e")
KEY = b"\x01" + MAC
OTHER = bytes.fromhex("001a2b3c4d5f")
FIRST, SECOND = ip("10.77.1.100"), ip("10.77.1.101")


def _env(ping_check: bool = True, reservations: tuple[dict[str, Any], ...] = (),
         **gate: Any) -> Env:
    row = subnet_row()
    row.update(ping_check=ping_check, ping_timeout_ms=300)
    env = make_env(make_plan([row], reservations=reservations))
    env.ping = PingGate(gate.get("recheck", 3600), gate.get("max_outstanding", 64))
    return env


def _discover(env: Env, mac: bytes = MAC) -> tuple[Any, Any]:
    tx = tx_for(request(o.DISCOVER, mac, giaddr=RELAY))
    return tx, decide(tx, env)


def _offered(outcome: Any) -> int:
    assert isinstance(outcome, DhcpReply), outcome
    msg = parse(outcome.data)
    assert msg.message_type == o.OFFER
    return msg.yiaddr


def test_a_fresh_address_is_probed_from_our_address_and_held_meanwhile() -> None:
    env = _env()
    _tx, probe = _discover(env)
    assert isinstance(probe, Probe)
    assert (probe.ip, probe.subnet_id, probe.timeout) == (FIRST, SUBNET, 0.3)
    assert probe.source == ip(SERVER)  # the address the relay sent to
    hold = env.cache.holds.client(SUBNET, KEY)
    assert hold is not None and hold.ip == FIRST
    # Another client meanwhile: a different address (probed too), never the held one.
    _other, second = _discover(env, OTHER)
    assert isinstance(second, Probe) and second.ip == SECOND


def test_a_retransmitted_discover_waits_for_the_same_probe() -> None:
    env = _env()
    _discover(env)
    for _ in range(3):
        _tx, again = _discover(env)
        assert again == "ping_pending"
    assert env.ping is not None and env.ping.pending == {(SUBNET, FIRST)}


def test_silent_the_held_address_is_offered_and_not_probed_again_soon() -> None:
    env = _env()
    tx, probe = _discover(env)
    assert env.ping is not None
    env.ping.end(SUBNET, probe.ip, pingcheck.SILENT, time.time())  # what the pinger does
    assert _offered(after_probe(tx, env, probe, pingcheck.SILENT)) == FIRST
    _tx, again = _discover(env)  # the client's next Discover: offered at once
    assert _offered(again) == FIRST


def test_unchecked_is_offered_but_not_remembered_as_silent() -> None:
    env = _env()
    tx, probe = _discover(env)
    assert env.ping is not None
    env.ping.end(SUBNET, probe.ip, pingcheck.UNCHECKED, time.time())
    assert _offered(after_probe(tx, env, probe, pingcheck.UNCHECKED)) == FIRST
    assert (SUBNET, FIRST) not in env.ping.cleared


def _commit(op: Op) -> None:
    op.ok, op.lease_id, op.expires, op.event = True, uuid.uuid4(), time.time() + 86400, "declined"


def test_answered_the_address_is_held_as_a_conflict_and_another_offered() -> None:
    env = _env()
    tx, probe = _discover(env)
    assert env.ping is not None
    env.ping.end(SUBNET, probe.ip, pingcheck.ANSWERED, time.time())
    op = after_probe(tx, env, probe, pingcheck.ANSWERED)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT and op.state == "declined"
    assert (op.ip, op.client_key, op.mac, op.hostname) == (FIRST, PING_CONFLICT_KEY, None, None)
    assert op.seconds == env.config.decline_probation_seconds
    assert op.giaddr == ip(RELAY)
    assert env.cache.holds.client(SUBNET, KEY) is None  # the client's hold went
    assert FIRST in env.pending_in(SUBNET)  # claimed until committed
    assert env.counters.ping_conflicts[str(SUBNET)] == 1
    _commit(op)
    nxt = finish(tx, env)  # committed: the client gets another pick, probed in turn
    assert isinstance(nxt, Probe) and nxt.ip == SECOND
    held = env.cache.at(SUBNET, FIRST)
    assert held is not None and held.state == "declined" and held.client_key == PING_CONFLICT_KEY
    assert env.cache.client(SUBNET, KEY) is None  # no client's lease
    assert env.counters.leases["declined"] == 1  # counted like a decline


def test_a_conflict_refused_by_the_database_is_another_pick_too() -> None:
    env = _env()
    tx, probe = _discover(env)
    op = after_probe(tx, env, probe, pingcheck.ANSWERED)
    assert isinstance(op, Op)
    # Another node granted the address meanwhile: the insert is refused with its row.
    op.refreshed = [(uuid.uuid4(), SUBNET, FIRST, "active", b"\x01other", time.time() + 60)]
    nxt = finish(tx, env)
    assert isinstance(nxt, Probe) and nxt.ip == SECOND


def test_a_decline_is_still_answered_with_nothing() -> None:
    env = _env()
    tx, probe = _discover(env)
    assert env.ping is not None
    env.ping.end(SUBNET, probe.ip, pingcheck.SILENT, time.time())
    after_probe(tx, env, probe, pingcheck.SILENT)
    decline = tx_for(request(o.DECLINE, MAC, giaddr=RELAY, requested="10.77.1.100"))
    op = decide(decline, env)
    assert isinstance(op, Op) and op.state == "declined"
    _commit(op)
    assert finish(decline, env) is None  # a client's Decline: no new pick


def test_never_probed_a_renewing_client_or_its_own_reservation() -> None:
    env = _env(reservations=({"ip": "10.77.1.50", "mac": MAC.hex(":")},))
    _tx, offer = _discover(env)
    assert _offered(offer) == ip("10.77.1.50")  # its reservation: offered at once
    env = _env()
    env.cache.put(Lease(uuid.uuid4(), SUBNET, SECOND, "active", KEY, time.time() + 600))
    _tx, offer = _discover(env)
    assert _offered(offer) == SECOND  # its lease
    assert env.ping is not None and not env.ping.pending


def test_a_subnet_without_the_check_offers_at_once() -> None:
    env = _env(ping_check=False)
    _tx, offer = _discover(env)
    assert _offered(offer) == FIRST
    assert env.ping is not None and not env.ping.pending and not env.ping.outcomes


def test_past_the_outstanding_bound_a_discover_is_dropped_unheld() -> None:
    env = _env(max_outstanding=1)
    _discover(env)
    _tx, busy = _discover(env, OTHER)
    assert busy == "ping_busy"
    assert env.cache.holds.client(SUBNET, b"\x01" + OTHER) is None


def test_without_a_socket_addresses_are_offered_unprobed_and_counted() -> None:
    env = _env()
    assert env.ping is not None
    env.ping.unavailable(time.time())
    _tx, offer = _discover(env)
    assert _offered(offer) == FIRST
    assert env.ping.outcomes["unavailable"] == 1


def test_the_gate_forgets_silent_addresses_after_the_recheck_interval() -> None:
    gate = PingGate(recheck_seconds=60, max_outstanding=4)
    gate.begin(SUBNET, FIRST)
    gate.end(SUBNET, FIRST, pingcheck.SILENT, 1000.0)
    assert gate.verdict(SUBNET, FIRST, 1059.0) == pingcheck.OFFER
    assert gate.verdict(SUBNET, FIRST, 1061.0) == pingcheck.PROBE
    assert not gate.cleared  # swept
    gate.seen(SUBNET, SECOND, 2000.0)  # released by its client
    assert gate.verdict(SUBNET, SECOND, 2001.0) == pingcheck.OFFER
    gate.end(SUBNET, SECOND, pingcheck.ANSWERED, 2002.0)  # in use after all: probe again
    assert gate.verdict(SUBNET, SECOND, 2003.0) == pingcheck.PROBE
    never = PingGate(recheck_seconds=0, max_outstanding=4)
    never.end(SUBNET, FIRST, pingcheck.SILENT, 1000.0)
    assert never.verdict(SUBNET, FIRST, 1000.5) == pingcheck.PROBE


def test_a_released_address_is_not_probed_within_the_recheck_interval() -> None:
    env = _env()
    _tx, probe = _discover(env)
    assert env.ping is not None
    env.ping.end(SUBNET, probe.ip, pingcheck.SILENT, time.time() - 7200)  # long ago
    release = tx_for(request(o.RELEASE, MAC, ciaddr="10.77.1.100", server_id=SERVER))
    env.cache.put(Lease(uuid.uuid4(), SUBNET, FIRST, "active", KEY, time.time() + 600))
    op = decide(release, env)
    assert isinstance(op, Op) and op.kind == OpKind.RELEASE
    op.ok, op.lease_id, op.event = True, env.cache.client(SUBNET, KEY).lease_id, "released"  # type: ignore[union-attr]
    assert finish(release, env) is None
    assert env.ping.verdict(SUBNET, FIRST, time.time()) == pingcheck.OFFER
