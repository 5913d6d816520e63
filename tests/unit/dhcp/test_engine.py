"""The decision per message (RFC 2131 §4.3) and what happens after the commit."""

from __future__ import annotations

import time
import uuid
from typing import Any

from ipamd.dhcp import options as o
from ipamd.dhcp.codec import parse
from ipamd.dhcp.engine import MAX_ATTEMPTS, DhcpReply, decide, finish
from ipamd.dhcp.leasecache import Lease
from ipamd.dhcp.leasestore import Op, OpKind
from tests.unit.dhcp.envs import RELAY, SERVER, SUBNET, make_env, make_plan, pool_row, tx_for
from tests.unit.dhcp.packets import ip, relay_info, request

MAC = bytes.fromhex("001a2b3c4d5e")
KEY = b"\x01" + MAC


def _lease(address: str, state: str = "active", key: bytes = KEY, ttl: float = 3000) -> Lease:
    return Lease(uuid.uuid4(), SUBNET, ip(address), state, key, time.time() + ttl)


def _commit_ok(op: Op, event: str | None = None, lease_id: uuid.UUID | None = None,
               ttl: float = 30) -> None:
    """What leasestore.commit does for an op the database accepted."""
    op.ok = True
    op.lease_id = lease_id or op.lease_id or uuid.uuid4()
    op.expires = time.time() + ttl
    op.event = event


def _reply(outcome: Any) -> Any:
    assert isinstance(outcome, DhcpReply), outcome
    return parse(outcome.data)


# ---------------------------------------------------------------------- Discover


def _hold(env: Any, address: str, key: bytes = KEY, ttl: float = 30) -> None:
    env.cache.holds.hold(SUBNET, ip(address), key, time.time() + ttl)


def test_discover_offers_from_memory_and_holds_the_address_for_this_client() -> None:
    env = make_env()
    before = time.time()
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert offer.message_type == o.OFFER and offer.yiaddr == ip("10.77.1.100")
    held = env.cache.holds.client(SUBNET, KEY)
    assert held is not None and held.ip == ip("10.77.1.100")
    assert before + env.config.offer_hold_seconds <= held.expires <= time.time() + 30
    assert not env.pending_in(SUBNET) and len(env.cache) == 0  # nothing to write
    other = _reply(decide(tx_for(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY)), env))
    assert other.yiaddr == ip("10.77.1.101")  # the held address is nobody else's
    assert env.cache.counts()["offered"] == 2


def test_discover_from_client_with_active_lease_is_answered_without_a_write() -> None:
    env = make_env()
    env.cache.put(_lease("10.77.1.105"))
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert offer.message_type == o.OFFER and offer.yiaddr == ip("10.77.1.105")
    assert env.cache.holds.client(SUBNET, KEY) is None


def test_discover_retransmit_offers_the_held_address_and_extends_the_hold() -> None:
    env = make_env()
    _hold(env, "10.77.1.105", ttl=5)
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert offer.yiaddr == ip("10.77.1.105")
    held = env.cache.holds.client(SUBNET, KEY)
    assert held is not None and held.expires > time.time() + 25


def test_a_lapsed_hold_frees_the_address_in_memory() -> None:
    env = make_env(make_plan(pools=[pool_row("10.77.1.100", "10.77.1.100")]))
    _hold(env, "10.77.1.100", key=b"first")
    assert decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env) == "no_address"
    _hold(env, "10.77.1.100", key=b"first", ttl=-1)  # as if its time had run out
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert offer.yiaddr == ip("10.77.1.100")  # the full pool was scanned again
    assert env.cache.holds.client(SUBNET, b"first") is None
    assert env.cache.counts()["offered"] == 1


def test_discover_honours_a_free_requested_address() -> None:
    env = make_env()
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY,
                                         requested="10.77.1.107")), env))
    assert offer.yiaddr == ip("10.77.1.107")
    env.cache.put(_lease("10.77.1.108", key=b"someone"))
    offer = _reply(decide(tx_for(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY,
                                         requested="10.77.1.108")), env))
    assert offer.yiaddr != ip("10.77.1.108")
    offer = _reply(decide(tx_for(request(o.DISCOVER, b"\x03" * 6, giaddr=RELAY,
                                         requested="10.77.1.107")), env))
    assert offer.yiaddr != ip("10.77.1.107")  # held for the first client
    offer = _reply(decide(tx_for(request(o.DISCOVER, b"\x04" * 6, giaddr=RELAY,
                                         requested="10.77.9.9")), env))
    assert offer.yiaddr != ip("10.77.9.9")


def test_discover_reservation_first_and_the_ack_supersedes_a_dynamic_lease() -> None:
    env = make_env(make_plan(reservations=[{"ip": "10.77.1.50", "mac": "00:1a:2b:3c:4d:5e"}]))
    env.cache.put(_lease("10.77.1.103"))
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert offer.yiaddr == ip("10.77.1.50")
    op = decide(tx_for(_selecting("10.77.1.50")), env)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT
    assert op.ip == ip("10.77.1.50") and op.supersede


def test_discover_no_address_when_pools_are_full() -> None:
    env = make_env(make_plan(pools=[pool_row("10.77.1.100", "10.77.1.100")]))
    env.cache.put(_lease("10.77.1.100", key=b"someone"))
    assert decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env) == "no_address"


# ---------------------------------------------------------------------- Request


def _selecting(address: str, mac: bytes = MAC) -> Any:
    return request(o.REQUEST, mac, giaddr=RELAY, requested=address, server_id=SERVER)


def _offered(env: Any) -> int:
    """Discover: the address offered (and held) for MAC."""
    return _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env)).yiaddr


def test_request_selecting_grants_the_held_address_after_commit() -> None:
    env = make_env()
    address = _offered(env)
    tx = tx_for(_selecting(o.ip_to_str(address)))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT and op.state == "active"
    assert op.seconds == 3600 and op.ip == address
    assert address in env.pending_in(SUBNET)
    _commit_ok(op, "granted", ttl=3600)
    ack = _reply(finish(tx, env))
    assert ack.message_type == o.ACK and ack.yiaddr == address
    assert env.cache.client(SUBNET, KEY).state == "active"  # type: ignore[union-attr]
    assert env.cache.holds.client(SUBNET, KEY) is None and not env.pending_in(SUBNET)
    assert env.counters.leases["granted"] == 1


def test_grant_refused_because_another_node_took_the_address_is_nakked() -> None:
    env = make_env()
    address = _offered(env)
    tx = tx_for(_selecting(o.ip_to_str(address)))
    op = decide(tx, env)
    assert isinstance(op, Op)
    # Another node granted that address meanwhile: the commit reports it, the cache learns it.
    op.refreshed = [(uuid.uuid4(), SUBNET, address, "active", b"other-node", time.time() + 60)]
    nak = _reply(finish(tx, env))
    assert nak.message_type == o.NAK
    assert env.cache.at(SUBNET, address).client_key == b"other-node"  # type: ignore[union-attr]
    assert env.cache.holds.client(SUBNET, KEY) is None and not env.pending_in(SUBNET)
    assert env.counters.conflicts == 1
    again = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert again.yiaddr not in (0, address)  # the client starts over, with another address


def test_grant_refused_because_another_node_granted_this_client_there_renews_it() -> None:
    env = make_env()
    address = _offered(env)
    tx = tx_for(_selecting(o.ip_to_str(address)))
    op = decide(tx, env)
    assert isinstance(op, Op)
    op.refreshed = [(uuid.uuid4(), SUBNET, address, "active", KEY, time.time() + 60)]
    renew = finish(tx, env)
    assert isinstance(renew, Op) and renew.kind == OpKind.ACK and renew.ip == address


def test_grant_refused_because_the_client_has_a_lease_elsewhere_is_nakked() -> None:
    env = make_env()
    address = _offered(env)
    tx = tx_for(_selecting(o.ip_to_str(address)))
    op = decide(tx, env)
    assert isinstance(op, Op)
    op.refreshed = [(uuid.uuid4(), SUBNET, ip("10.77.1.106"), "active", KEY, time.time() + 60)]
    assert _reply(finish(tx, env)).message_type == o.NAK
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert offer.yiaddr == ip("10.77.1.106")  # the lease the database knows


def test_grant_refused_with_nothing_to_show_tries_again_then_gives_up() -> None:
    env = make_env()
    address = _offered(env)
    tx = tx_for(_selecting(o.ip_to_str(address)))
    assert isinstance(decide(tx, env), Op)
    for _ in range(MAX_ATTEMPTS - 1):
        retry = finish(tx, env)  # refused, and the blocker gone by the time it was looked up
        assert isinstance(retry, Op) and retry.kind == OpKind.INSERT
    assert finish(tx, env) == "conflict_retries"
    assert not env.pending_in(SUBNET)


def test_request_selecting_an_address_this_node_never_offered_may_take_it_if_free() -> None:
    env = make_env()
    op = decide(tx_for(_selecting("10.77.1.104")), env)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT and op.ip == ip("10.77.1.104")
    env.cache.put(_lease("10.77.1.105", key=b"someone"))
    nak = _reply(decide(tx_for(_selecting("10.77.1.105", b"\x02" * 6)), env))
    assert nak.message_type == o.NAK
    _hold(env, "10.77.1.107", key=b"someone-else")
    nak = _reply(decide(tx_for(_selecting("10.77.1.107", b"\x03" * 6)), env))
    assert nak.message_type == o.NAK  # held for the client this node offered it to


def test_request_for_another_address_than_the_held_one_is_not_granted_from_the_hold() -> None:
    env = make_env(make_plan(pools=[pool_row("10.77.1.100", "10.77.1.101")]))
    assert _offered(env) == ip("10.77.1.100")
    _hold(env, "10.77.1.101", key=b"someone-else")
    nak = _reply(decide(tx_for(_selecting("10.77.1.101")), env))
    assert nak.message_type == o.NAK


def test_request_for_another_address_than_the_clients_lease_is_nakked() -> None:
    env = make_env()
    env.cache.put(_lease("10.77.1.100"))
    nak = _reply(decide(tx_for(_selecting("10.77.1.101")), env))
    assert nak.message_type == o.NAK and nak.yiaddr == 0
    assert nak.broadcast  # relayed NAK: broadcast flag (RFC 2131 §4.3.2)


def test_request_wrong_network_is_nakked() -> None:
    env = make_env()
    init_reboot = request(o.REQUEST, MAC, giaddr=RELAY, requested="192.168.7.7")
    assert _reply(decide(tx_for(init_reboot), env)).message_type == o.NAK


def test_init_reboot_and_renew_unknown_here_ask_the_database() -> None:
    env = make_env()
    tx = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, requested="10.77.1.100"))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.ACK
    # Not found: never acknowledged to this client (the server is authoritative) -> NAK.
    assert _reply(finish(tx, env)).message_type == o.NAK
    renew = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, ciaddr="10.77.1.100"))
    op = decide(renew, env)
    assert isinstance(op, Op) and op.ip == ip("10.77.1.100")
    _commit_ok(op, "renewed", ttl=3600)  # another node had granted it
    ack = _reply(finish(renew, env))
    assert ack.message_type == o.ACK and ack.ciaddr == ip("10.77.1.100")


def test_renew_of_an_address_held_by_someone_else_is_nakked() -> None:
    env = make_env()
    env.cache.put(_lease("10.77.1.100", key=b"someone"))
    nak = _reply(decide(tx_for(request(o.REQUEST, MAC, giaddr=RELAY, ciaddr="10.77.1.100")),
                        env))
    assert nak.message_type == o.NAK


def test_ack_not_found_forgets_the_stale_cache_entry() -> None:
    env = make_env()
    stale = _lease("10.77.1.100")
    env.cache.put(stale)
    tx = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, ciaddr="10.77.1.100"))
    op = decide(tx, env)
    assert isinstance(op, Op)
    assert _reply(finish(tx, env)).message_type == o.NAK
    assert env.cache.client(SUBNET, KEY) is None


def test_request_without_address_is_dropped() -> None:
    env = make_env()
    bare = request(o.REQUEST, MAC, giaddr=RELAY, server_id=SERVER)
    assert decide(tx_for(bare), env) == "bad_request"
    assert decide(tx_for(request(o.REQUEST, MAC, giaddr=RELAY)), env) == "bad_request"


# ---------------------------------------------------------------------- Decline, Release, Inform


def test_decline_quarantines_the_address() -> None:
    env = make_env(decline_probation_seconds=600)
    env.cache.put(_lease("10.77.1.100"))
    tx = tx_for(request(o.DECLINE, MAC, giaddr=RELAY, requested="10.77.1.100",
                        server_id=SERVER))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.DECLINE and op.seconds == 600
    _commit_ok(op, "declined", ttl=600)
    assert finish(tx, env) is None  # no answer to a Decline
    held = env.cache.at(SUBNET, ip("10.77.1.100"))
    assert held is not None and held.state == "declined"
    assert env.cache.client(SUBNET, KEY) is None  # the client may get another address
    nxt = _reply(decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), env))
    assert nxt.yiaddr != ip("10.77.1.100")


def test_decline_of_an_offer_not_yet_acked_quarantines_the_address() -> None:
    env = make_env(decline_probation_seconds=600)
    address = _offered(env)
    tx = tx_for(request(o.DECLINE, MAC, giaddr=RELAY, requested=o.ip_to_str(address),
                        server_id=SERVER))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT and op.state == "declined"
    assert op.seconds == 600 and env.cache.holds.client(SUBNET, KEY) is None
    _commit_ok(op, "declined", ttl=600)
    assert finish(tx, env) is None
    held = env.cache.at(SUBNET, address)
    assert held is not None and held.state == "declined" and not env.pending_in(SUBNET)


def test_release_frees_the_address() -> None:
    env = make_env()
    lease = _lease("10.77.1.100")
    env.cache.put(lease)
    tx = tx_for(request(o.RELEASE, MAC, giaddr=RELAY, ciaddr="10.77.1.100", server_id=SERVER))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.RELEASE
    _commit_ok(op, "released", lease.lease_id)
    assert finish(tx, env) is None
    assert env.cache.at(SUBNET, ip("10.77.1.100")) is None
    assert env.counters.leases["released"] == 1


def test_release_of_unknown_lease_is_counted() -> None:
    env = make_env()
    tx = tx_for(request(o.RELEASE, MAC, giaddr=RELAY, ciaddr="10.77.1.100"))
    assert isinstance(decide(tx, env), Op)
    assert finish(tx, env) == "unknown_lease"
    assert decide(tx_for(request(o.RELEASE, MAC, giaddr=RELAY)), env) == "bad_request"


def test_release_of_an_offer_gives_the_hold_back() -> None:
    env = make_env()
    address = _offered(env)
    tx = tx_for(request(o.RELEASE, MAC, giaddr=RELAY, ciaddr=o.ip_to_str(address)))
    assert isinstance(decide(tx, env), Op)  # any lease of it another node granted ends too
    assert env.cache.holds.client(SUBNET, KEY) is None


def test_inform_gets_options_without_a_lease() -> None:
    env = make_env()
    ack = _reply(decide(tx_for(request(o.INFORM, MAC, giaddr=RELAY, ciaddr="10.77.1.50")), env))
    assert ack.message_type == o.ACK and ack.yiaddr == 0 and ack.ciaddr == ip("10.77.1.50")
    assert o.LEASE_TIME not in ack.options and o.RENEWAL not in ack.options
    assert ack.options[o.SUBNET_MASK] == bytes((255, 255, 255, 0))


# ---------------------------------------------------------------------- RFC 5107


OVERRIDE = "10.77.1.1"  # the relay's own address on the client's link, as routers use it


def test_server_identifier_override_names_the_relay_address_in_every_reply() -> None:
    env = make_env()
    agent = {o.RELAY_AGENT: relay_info(circuit=b"eth0", sid_override=OVERRIDE)}
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra=agent))
    offer = _reply(decide(tx, env))
    assert offer.server_id == ip(OVERRIDE)
    assert offer.options[o.RELAY_AGENT] == agent[o.RELAY_AGENT]  # echoed as received


def test_request_naming_the_override_is_for_us_and_acked() -> None:
    env = make_env()
    _hold(env, "10.77.1.100")
    agent = {o.RELAY_AGENT: relay_info(sid_override=OVERRIDE)}
    tx = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, requested="10.77.1.100",
                        server_id=OVERRIDE, extra=agent))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT
    _commit_ok(op, "granted", ttl=3600)
    ack = _reply(finish(tx, env))
    assert ack.message_type == o.ACK and ack.server_id == ip(OVERRIDE)


def test_request_naming_another_server_without_override_is_not_for_us() -> None:
    env = make_env()
    _hold(env, "10.77.1.100")
    for extra in ({}, {o.RELAY_AGENT: relay_info(sid_override="10.77.1.9")}):
        tx = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, requested="10.77.1.100",
                            server_id=OVERRIDE, extra=extra))
        assert decide(tx, env) == "not_for_us"  # dropped: the client chose another server
