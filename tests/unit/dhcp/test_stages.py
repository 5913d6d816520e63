"""Pipeline stages with crafted packets: accept, select subnet, identify, classify."""

from __future__ import annotations

import uuid

import pytest

from ipamd.dhcp import options as o
from ipamd.dhcp.accept import accept
from ipamd.dhcp.classify import classify
from ipamd.dhcp.context import Endpoint
from ipamd.dhcp.identity import identify
from ipamd.dhcp.subnet_select import select_subnet
from tests.unit.dhcp.envs import (
    RELAY,
    SERVER,
    SUBNET,
    make_env,
    make_plan,
    pool_row,
    subnet_row,
    tx_for,
)
from tests.unit.dhcp.packets import ip, relay_info, request

MAC = bytes.fromhex("001a2b3c4d5e")
OTHER = uuid.UUID("0192f000-0000-7000-8000-000000000002")


# ---------------------------------------------------------------------- accept


def test_accept_relayed_discover_from_trusted_relay() -> None:
    assert accept(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), make_env()) is None


def test_accept_drops_untrusted_relay() -> None:
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY), src="10.99.0.1")
    assert accept(tx, make_env()) == "untrusted_relay"


def test_accept_trusts_by_network() -> None:
    env = make_env(trusted_relays=["10.99.0.0/16"])
    tx = tx_for(request(o.DISCOVER, MAC, giaddr="10.99.3.1"), src="10.99.3.1")
    assert accept(tx, env) is None


def test_accept_direct_packet_needs_no_trust() -> None:
    tx = tx_for(request(o.REQUEST, MAC, ciaddr="10.77.1.100"), src="10.77.1.100")
    assert accept(tx, make_env(trusted_relays=[])) is None


def test_accept_drops_replies_and_server_messages() -> None:
    reply = request(o.DISCOVER, MAC, giaddr=RELAY)
    reply.op = o.BOOTREPLY
    assert accept(tx_for(reply), make_env()) == "not_request"
    assert accept(tx_for(request(o.OFFER, MAC, giaddr=RELAY)), make_env()) == "unhandled_type"
    assert accept(tx_for(request(o.LEASEQUERY, MAC, giaddr=RELAY)), make_env()) == \
        "unhandled_type"


@pytest.mark.parametrize("mtype", [o.REQUEST, o.DECLINE, o.RELEASE])
def test_accept_drops_messages_for_another_server(mtype: int) -> None:
    tx = tx_for(request(mtype, MAC, giaddr=RELAY, requested="10.77.1.100",
                        server_id="10.77.0.9"))
    assert accept(tx, make_env()) == "not_for_us"


def test_accept_our_server_id_and_the_arrival_address() -> None:
    env = make_env()
    ours = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, requested="10.77.1.100",
                          server_id=SERVER))
    assert accept(ours, env) is None
    # Without a configured server id, the address the packet reached is ours.
    env = make_env(server_id="")
    wildcard = Endpoint(sock=None, local_ip=0, port=67)
    msg = request(o.REQUEST, MAC, giaddr=RELAY, requested="10.77.1.100", server_id="10.77.0.7")
    tx = tx_for(msg, endpoint=wildcard)
    tx.local_ip = ip("10.77.0.7")
    assert accept(tx, env) is None


def test_accept_discover_naming_another_server_is_fine() -> None:
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, server_id="10.77.0.9"))
    assert accept(tx, make_env()) is None


def test_accept_bad_server_id_length() -> None:
    tx = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, extra={o.SERVER_ID: b"\x0a\x4d"}))
    assert accept(tx, make_env()) == "bad_option_length"


# ---------------------------------------------------------------------- select subnet


def _two_subnets_env():  # type: ignore[no-untyped-def]
    plan = make_plan(
        [subnet_row("10.77.1.0/24"), subnet_row("10.77.2.0/24", id=OTHER, gateway="10.77.2.1")],
        [pool_row("10.77.1.100", "10.77.1.109"), pool_row("10.77.2.100", "10.77.2.109",
                                                           subnet=OTHER)],
    )
    return make_env(plan)


def test_select_by_giaddr() -> None:
    env = _two_subnets_env()
    tx = tx_for(request(o.DISCOVER, MAC, giaddr="10.77.2.1"))
    assert select_subnet(tx, env) is None and tx.subnet.id == OTHER  # type: ignore[union-attr]


def test_select_link_selection_suboption_beats_giaddr_and_records_82() -> None:
    env = _two_subnets_env()
    info = relay_info(circuit=b"eth0/1", remote=b"sw9", link="10.77.2.0")
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.RELAY_AGENT: info}))
    assert select_subnet(tx, env) is None
    assert tx.subnet.id == OTHER  # type: ignore[union-attr]
    assert (tx.circuit_id, tx.remote_id) == (b"eth0/1", b"sw9")


def test_select_option_118_from_relayed_packet() -> None:
    env = _two_subnets_env()
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY,
                        extra={o.SUBNET_SELECTION: ip("10.77.2.5").to_bytes(4, "big")}))
    assert select_subnet(tx, env) is None and tx.subnet.id == OTHER  # type: ignore[union-attr]


def test_select_ignores_118_on_direct_packets() -> None:
    env = _two_subnets_env()
    tx = tx_for(request(o.REQUEST, MAC, ciaddr="10.77.1.100",
                        extra={o.SUBNET_SELECTION: ip("10.77.2.5").to_bytes(4, "big")}))
    assert select_subnet(tx, env) is None and tx.subnet.id == SUBNET  # type: ignore[union-attr]


def test_select_by_ciaddr_for_unicast_renewal() -> None:
    env = _two_subnets_env()
    tx = tx_for(request(o.REQUEST, MAC, ciaddr="10.77.2.100"), src="10.77.2.100")
    assert select_subnet(tx, env) is None and tx.subnet.id == OTHER  # type: ignore[union-attr]


def test_select_by_interface_for_directly_attached_clients() -> None:
    env = _two_subnets_env()
    port = Endpoint(sock=None, local_ip=0, port=67, interface="veth1",
                    interface_ip=ip("10.77.2.254"))
    tx = tx_for(request(o.DISCOVER, MAC), src="0.0.0.0", endpoint=port)
    assert select_subnet(tx, env) is None and tx.subnet.id == OTHER  # type: ignore[union-attr]


def test_select_failures() -> None:
    env = _two_subnets_env()
    assert select_subnet(tx_for(request(o.DISCOVER, MAC), src="0.0.0.0"), env) == "no_link"
    assert select_subnet(tx_for(request(o.DISCOVER, MAC, giaddr="10.77.9.1")), env) == \
        "no_subnet"
    bad = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.RELAY_AGENT: b"\x01\x09ab"}))
    assert select_subnet(bad, env) == "bad_relay_agent"
    short = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.SUBNET_SELECTION: b"\x01"}))
    assert select_subnet(short, env) == "bad_option_length"
    off = make_env(make_plan([subnet_row(dhcp_enabled=False)]))
    assert select_subnet(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY)), off) == "dhcp_disabled"


def test_select_longest_prefix_wins() -> None:
    inner = uuid.UUID("0192f000-0000-7000-8000-000000000003")
    plan = make_plan([subnet_row("10.77.0.0/16", gateway=None),
                      subnet_row("10.77.1.0/24", id=inner)], [])
    env = make_env(plan)
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY))
    assert select_subnet(tx, env) is None and tx.subnet.id == inner  # type: ignore[union-attr]


# ---------------------------------------------------------------------- identify


def _selected(msg, env):  # type: ignore[no-untyped-def]
    tx = tx_for(msg)
    assert select_subnet(tx, env) is None
    identify(tx, env)
    return tx


def test_client_key_is_option_61_else_chaddr() -> None:
    env = make_env()
    plain = _selected(request(o.DISCOVER, MAC, giaddr=RELAY), env)
    assert plain.client_key == b"\x01" + MAC
    with_id = _selected(request(o.DISCOVER, MAC, giaddr=RELAY,
                                extra={o.CLIENT_ID: b"\x00host-7"}), env)
    assert with_id.client_key == b"\x00host-7"


def test_reservation_by_mac_client_id_and_duid() -> None:
    duid = bytes.fromhex("000300011a2b3c4d5e6f")
    plan = make_plan(reservations=[
        {"ip": "10.77.1.20", "mac": "00:1a:2b:3c:4d:5e"},
        {"ip": "10.77.1.21", "client_id": b"\x00host-7", "mac": "00:00:00:00:00:21"},
        {"ip": "10.77.1.22", "duid": duid.hex(":"), "mac": None},
    ])
    env = make_env(plan)
    by_mac = _selected(request(o.DISCOVER, MAC, giaddr=RELAY), env)
    assert by_mac.reservation is not None and by_mac.reservation.ip == ip("10.77.1.20")
    by_id = _selected(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY,
                              extra={o.CLIENT_ID: b"\x00host-7"}), env)
    assert by_id.reservation is not None and by_id.reservation.ip == ip("10.77.1.21")
    rfc4361 = b"\xff" + b"\x00\x00\x00\x01" + duid  # type 255, IAID, DUID
    by_duid = _selected(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY,
                                extra={o.CLIENT_ID: rfc4361}), env)
    assert by_duid.reservation is not None and by_duid.reservation.ip == ip("10.77.1.22")
    nobody = _selected(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY), env)
    assert nobody.reservation is None


def test_names_are_recorded_and_cleaned() -> None:
    env = make_env()
    fqdn = bytes((o.FQDN_S, 0, 0)) + b"laptop.example.com."
    tx = _selected(request(o.DISCOVER, MAC, giaddr=RELAY,
                           extra={o.HOSTNAME: b"lap\x00top\x00", o.FQDN: fqdn}), env)
    assert tx.hostname == "laptop"
    assert tx.fqdn == "laptop.example.com"
    bad = _selected(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.FQDN: b"\x04"}), env)
    assert bad.fqdn is None  # a malformed name is ignored, the client is still served


# ---------------------------------------------------------------------- classify


def _class(name: str, match: str, value: str) -> dict[str, object]:
    return {"id": uuid.uuid4(), "name": name, "match": match, "value": value}


def test_classify_vendor_user_and_mac_prefix() -> None:
    pxe = _class("pxe", "vendor_class", "PXEClient")
    phones = _class("phones", "user_class", "voip")
    oui = _class("acme", "mac_prefix", "00:1A:2B")
    half = _class("half-octet", "mac_prefix", "00-1a-2")
    env = make_env(make_plan(classes=[pxe, phones, oui, half]))

    def classes(msg):  # type: ignore[no-untyped-def]
        tx = _selected(msg, env)
        classify(tx, env)
        return tx.classes

    pxe_client = request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY,
                         extra={o.VENDOR_CLASS: b"PXEClient:Arch:00007:UNDI:003016"})
    assert classes(pxe_client) == {pxe["id"]}
    phone = request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY,
                    extra={o.USER_CLASS: bytes((4,)) + b"voip" + bytes((3,)) + b"lab"})
    assert classes(phone) == {phones["id"]}
    bare = request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY, extra={o.USER_CLASS: b"voip"})
    assert classes(bare) == {phones["id"]}  # a bare string is one instance
    assert classes(request(o.DISCOVER, MAC, giaddr=RELAY)) == {oui["id"], half["id"]}
    assert classes(request(o.DISCOVER, b"\x02" * 6, giaddr=RELAY)) == set()
