"""A client's requested lease time (option 51) within the subnet's bounds; T1/T2 follow it
(RFC 2131 §4.3.1 and §4.4.5; docs/api-ipam.md, "Lease time")."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from ipamd.dhcp import options as o
from ipamd.dhcp.codec import parse
from ipamd.dhcp.engine import DhcpReply, clamp_lease_time, decide, finish
from ipamd.dhcp.leasecache import Lease
from ipamd.dhcp.leasestore import Op
from ipamd.dhcp.plan import lease_options
from tests.unit.dhcp.envs import RELAY, SERVER, SUBNET, make_env, make_plan, subnet_row, tx_for
from tests.unit.dhcp.packets import ip, request

MAC = bytes.fromhex("001a2b3c4d5e")
KEY = b"\x01" + MAC
LEASE = 3600  # subnet_row's lease time


def _env(low: int | None, high: int | None) -> Any:
    row = {**subnet_row(lease_time=LEASE), "min_lease_time_seconds": low,
           "max_lease_time_seconds": high}
    return make_env(make_plan([row]))


def _asking(seconds: int | None, mtype: int = o.DISCOVER, **kw: Any) -> Any:
    extra = {} if seconds is None else {o.LEASE_TIME: seconds.to_bytes(4, "big")}
    return tx_for(request(mtype, MAC, giaddr=RELAY, extra=extra, **kw))


def _times(outcome: Any) -> tuple[int, int, int]:
    """Options 51, 58 and 59 of a reply."""
    assert isinstance(outcome, DhcpReply), outcome
    opts = parse(outcome.data).options
    return tuple(int.from_bytes(opts[c], "big")  # type: ignore[return-value]
                 for c in (o.LEASE_TIME, o.RENEWAL, o.REBINDING))


@pytest.mark.parametrize(("asked", "granted"), [
    (1, 600), (599, 600), (600, 600), (1800, 1800), (7200, 7200), (7201, 7200),
    (0xFFFFFFFF, 7200),  # "infinity" (RFC 2131 §3.3) is a request like any other
])
def test_clamp_keeps_a_request_inside_the_bounds(asked: int, granted: int) -> None:
    assert clamp_lease_time(asked, (600, 7200)) == granted


def test_plan_reads_the_bounds_and_fills_an_unset_side_with_the_lease_time() -> None:
    assert _env(None, None).plan.subnets[SUBNET].lease_bounds is None
    assert _env(600, None).plan.subnets[SUBNET].lease_bounds == (600, LEASE)
    assert _env(None, 7200).plan.subnets[SUBNET].lease_bounds == (LEASE, 7200)
    assert _env(600, 7200).plan.subnets[SUBNET].lease_bounds == (600, 7200)


def test_without_bounds_a_request_gets_the_subnets_time() -> None:
    tx = _asking(60)
    assert _times(decide(tx, _env(None, None))) == (LEASE, LEASE // 2, LEASE * 7 // 8)
    assert tx.lease_time == 0


@pytest.mark.parametrize(("asked", "granted"), [
    (60, 600), (1200, 1200), (86_400, 7200), (None, LEASE),
])
def test_the_offer_carries_the_granted_time_and_t1_t2_follow(
    asked: int | None, granted: int
) -> None:
    # T1 = 0.5 and T2 = 0.875 of the lease (RFC 2131 §4.4.5).
    assert _times(decide(_asking(asked), _env(600, 7200))) == (
        granted, granted // 2, granted * 7 // 8)


def test_only_a_maximum_means_no_request_gets_less_than_the_lease_time() -> None:
    env = _env(None, 7200)
    assert _times(decide(_asking(60), env))[0] == LEASE
    assert _times(decide(tx_for(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY, extra={
        o.LEASE_TIME: (5000).to_bytes(4, "big")})), env))[0] == 5000


def test_a_malformed_option_51_is_as_if_not_asked() -> None:
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.LEASE_TIME: b"\x00\x10\x00"}))
    assert _times(decide(tx, _env(600, 7200)))[0] == LEASE


def test_the_granted_time_is_the_leases_and_the_acks() -> None:
    env = _env(600, 7200)
    address = parse(decide(_asking(60), env).data).yiaddr  # type: ignore[union-attr]
    tx = _asking(100_000, o.REQUEST, requested=o.ip_to_str(address), server_id=SERVER)
    op = decide(tx, env)
    assert isinstance(op, Op) and op.seconds == 7200  # the lease row's expiry follows it
    op.ok, op.lease_id, op.expires, op.event = True, uuid.uuid4(), time.time() + 7200, "granted"
    assert _times(finish(tx, env)) == (7200, 3600, 6300)


def test_a_renewal_asking_for_a_time_gets_it_within_the_bounds() -> None:
    env = _env(600, 7200)
    env.cache.put(Lease(uuid.uuid4(), SUBNET, ip("10.77.1.100"), "active", KEY,
                        time.time() + 3000))
    op = decide(_asking(900, o.REQUEST, ciaddr="10.77.1.100"), env)
    assert isinstance(op, Op) and op.seconds == 900
    op = decide(_asking(None, o.REQUEST, ciaddr="10.77.1.100"), env)
    assert isinstance(op, Op) and op.seconds == LEASE


def test_an_inform_gets_no_lease_time_even_when_asking() -> None:
    reply = decide(_asking(1200, o.INFORM, ciaddr="10.77.1.100"), _env(600, 7200))
    assert isinstance(reply, DhcpReply)
    assert o.LEASE_TIME not in parse(reply.data).options


def test_lease_options_encode_t1_and_t2_as_fractions_of_the_lease() -> None:
    assert lease_options(1000) == {
        o.LEASE_TIME: (1000).to_bytes(4, "big"), o.RENEWAL: (500).to_bytes(4, "big"),
        o.REBINDING: (875).to_bytes(4, "big")}
