"""Shared networks in the engine (docs/api-ipam.md, "Shared networks"): the relay's subnet
selects the group, addresses come from any member's pools (the relay's subnet first), and
every answer is the member's whose address it carries."""

from __future__ import annotations

import time
import uuid
from typing import Any

from ipamd.dhcp import options as o
from ipamd.dhcp.codec import parse
from ipamd.dhcp.engine import DhcpReply, decide, finish
from ipamd.dhcp.leasecache import Lease
from ipamd.dhcp.leasestore import Op, OpKind
from ipamd.dhcp.plan import Plan, build
from tests.unit.dhcp.envs import RELAY, SERVER, make_env, pool_row, subnet_row, tx_for
from tests.unit.dhcp.packets import ip, relay_info, request

A = uuid.UUID("0192f000-0000-7000-8000-00000000000a")
B = uuid.UUID("0192f000-0000-7000-8000-00000000000b")
C = uuid.UUID("0192f000-0000-7000-8000-00000000000c")
D = uuid.UUID("0192f000-0000-7000-8000-00000000000d")
GROUP = uuid.UUID("0192f000-0000-7000-8000-0000000000f1")
GOLD = uuid.UUID("0192f000-0000-7000-8000-0000000000aa")
MAC1, MAC2 = bytes.fromhex("021a2b3c4d01"), bytes.fromhex("021a2b3c4d02")
A_ONLY = "10.77.1.50"  # subnet A's one-address pool
B_MASK, B_ROUTER = bytes((255, 255, 252, 0)), ip("10.77.8.1").to_bytes(4, "big")


def _plan(*, b_class: uuid.UUID | None = None, reservations: tuple[dict[str, Any], ...] = (),
          classes: tuple[dict[str, Any], ...] = ()) -> Plan:
    """A (10.77.1.0/24, the relay's LAN) and B (10.77.8.0/22) share a link; C is alone;
    D (disabled) is in the group too."""
    rows = [subnet_row("10.77.1.0/24", id=A, lease_time=600),
            subnet_row("10.77.8.0/22", id=B, gateway="10.77.8.1", lease_time=7200),
            subnet_row("10.77.20.0/24", id=C, gateway="10.77.20.1"),
            subnet_row("10.77.30.0/24", id=D, gateway="10.77.30.1", dhcp_enabled=False)]
    for row in (rows[0], rows[1], rows[3]):
        row["shared_network_id"] = GROUP
    return build({
        "subnets": rows,
        "pools": [pool_row(A_ONLY, A_ONLY, subnet=A),
                  pool_row("10.77.8.10", "10.77.8.19", subnet=B, class_id=b_class),
                  pool_row("10.77.20.10", "10.77.20.19", subnet=C)],
        "excludes": [], "assignments": [], "options": [], "classes": list(classes),
        "reservations": [{"id": uuid.uuid4(), "mac": None, "duid": None, "client_id": None,
                          "hostname": None, **r, "ip": ip(r["ip"])} for r in reservations],
        "version": 1,
    })


def _reply(outcome: Any) -> Any:
    assert isinstance(outcome, DhcpReply), outcome
    return parse(outcome.data)


def _discover(env: Any, mac: bytes, **fields: Any) -> Any:
    return decide(tx_for(request(o.DISCOVER, mac, giaddr=RELAY, **fields)), env)


def _lease(subnet: uuid.UUID, address: str, mac: bytes) -> Lease:
    return Lease(uuid.uuid4(), subnet, ip(address), "active", b"\x01" + mac, time.time() + 600)


def _commit(op: Op) -> None:
    op.ok, op.lease_id, op.expires, op.event = True, uuid.uuid4(), time.time() + 600, "granted"


def test_the_plan_gives_each_member_its_group_itself_first_by_address() -> None:
    plan = _plan()
    assert plan.subnets[A].shared == (A, B)
    assert plan.subnets[B].shared == (B, A)
    assert plan.subnets[C].shared == ()  # alone on its link: nothing to look at per packet
    assert plan.subnets[D].shared == ()  # DHCP disabled: left out of the group
    lonely = build({"subnets": [{**subnet_row(id=A), "shared_network_id": GROUP}],
                    "pools": [], "excludes": [], "reservations": [], "assignments": [],
                    "options": [], "classes": []})
    assert lonely.subnets[A].shared == ()  # a group of one is a subnet alone


def test_once_the_relays_subnet_is_full_the_offer_is_the_next_members_with_its_mask() -> None:
    env = make_env(_plan())
    first = _reply(_discover(env, MAC1))
    assert first.yiaddr == ip(A_ONLY)  # the subnet the relay is in comes first
    assert first.options[o.SUBNET_MASK] == bytes((255, 255, 255, 0))
    second = _reply(_discover(env, MAC2))
    assert second.yiaddr == ip("10.77.8.10")
    assert second.options[o.SUBNET_MASK] == B_MASK and second.options[o.ROUTER] == B_ROUTER
    assert second.options[o.LEASE_TIME] == (7200).to_bytes(4, "big")  # B's lease time
    held = env.cache.holds.client(B, b"\x01" + MAC2)
    assert held is not None and held.ip == ip("10.77.8.10")
    # The retransmitted Discover finds its hold in B again; the Request is granted there.
    assert _reply(_discover(env, MAC2)).yiaddr == ip("10.77.8.10")
    tx = tx_for(request(o.REQUEST, MAC2, giaddr=RELAY, requested="10.77.8.10",
                        server_id=SERVER))
    op = decide(tx, env)
    assert isinstance(op, Op) and op.kind == OpKind.INSERT
    assert (op.subnet_id, op.ip, op.seconds) == (B, ip("10.77.8.10"), 7200)
    _commit(op)
    ack = _reply(finish(tx, env))
    assert ack.message_type == o.ACK and ack.options[o.ROUTER] == B_ROUTER
    assert env.cache.client(B, b"\x01" + MAC2) is not None


def test_renew_rebind_and_init_reboot_of_another_members_address_are_not_nakked() -> None:
    env = make_env(_plan())
    env.cache.put(_lease(B, "10.77.8.12", MAC1))
    rebind = decide(tx_for(request(o.REQUEST, MAC1, giaddr=RELAY, ciaddr="10.77.8.12")), env)
    assert isinstance(rebind, Op) and rebind.kind == OpKind.ACK and rebind.subnet_id == B
    reboot = decide(tx_for(request(o.REQUEST, MAC1, giaddr=RELAY, requested="10.77.8.12")),
                    env)
    assert isinstance(reboot, Op) and reboot.subnet_id == B
    # A Discover through the relay's subnet offers the client's lease in B back.
    assert _reply(_discover(env, MAC1)).yiaddr == ip("10.77.8.12")
    # An address in no member is another network.
    nak = _reply(decide(tx_for(request(o.REQUEST, MAC2, giaddr=RELAY,
                                       requested="10.77.20.11")), env))
    assert nak.message_type == o.NAK


def test_a_reservation_in_any_member_applies() -> None:
    env = make_env(_plan(reservations=({"subnet_id": B, "ip": "10.77.8.99",
                                        "mac": MAC2.hex(":")},)))
    offer = _reply(_discover(env, MAC2))
    assert offer.yiaddr == ip("10.77.8.99") and offer.options[o.SUBNET_MASK] == B_MASK
    assert _reply(_discover(env, MAC1)).yiaddr == ip(A_ONLY)  # others: A first, as ever


def test_classes_still_gate_the_other_members_pools() -> None:
    gold = {"id": GOLD, "name": "gold", "match": "mac_prefix", "value": "02:1a:2b:3c:4d:02"}
    env = make_env(_plan(b_class=GOLD, classes=(gold,)))
    assert _reply(_discover(env, MAC1)).yiaddr == ip(A_ONLY)
    assert _discover(env, bytes.fromhex("021a2b3c4d03")) == "no_address"  # not gold
    assert _reply(_discover(env, MAC2)).yiaddr == ip("10.77.8.10")  # gold


def test_link_selection_in_a_member_tries_that_member_first() -> None:
    env = make_env(_plan())
    info = {o.RELAY_AGENT: relay_info(circuit=b"port1", link="10.77.8.0")}
    offer = _reply(_discover(env, MAC1, extra=info))
    assert offer.yiaddr == ip("10.77.8.10")  # B named (RFC 3527): B's pool before A's
    assert offer.options[o.ROUTER] == B_ROUTER


def test_decline_and_release_of_another_members_address_go_to_that_member() -> None:
    env = make_env(_plan())
    decline = decide(tx_for(request(o.DECLINE, MAC1, giaddr=RELAY, requested="10.77.8.11",
                                    server_id=SERVER)), env)
    assert isinstance(decline, Op) and decline.subnet_id == B
    release = decide(tx_for(request(o.RELEASE, MAC1, giaddr=RELAY, ciaddr="10.77.8.11",
                                    server_id=SERVER)), env)
    assert isinstance(release, Op) and release.subnet_id == B


def test_a_subnet_alone_is_served_as_before() -> None:
    env = make_env(_plan())
    offer = _reply(decide(tx_for(request(o.DISCOVER, MAC1, giaddr="10.77.20.1")), env))
    assert offer.yiaddr == ip("10.77.20.10")
    nak = _reply(decide(tx_for(request(o.REQUEST, MAC1, giaddr="10.77.20.1",
                                       requested="10.77.8.11")), env))
    assert nak.message_type == o.NAK  # B's address is not C's network: no group there


def test_inform_from_another_members_address_gets_that_members_options() -> None:
    env = make_env(_plan())
    ack = _reply(decide(tx_for(request(o.INFORM, MAC1, giaddr=RELAY, ciaddr="10.77.8.40")),
                        env))
    assert ack.message_type == o.ACK
    assert ack.options[o.SUBNET_MASK] == B_MASK and ack.options[o.ROUTER] == B_ROUTER
