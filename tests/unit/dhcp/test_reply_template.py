"""Replies built from a subnet's encoded options (reply._from_template) are byte for byte
what the general path builds, whatever the client sends and the subnet holds."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ipamd.dhcp import options as o
from ipamd.dhcp import reply
from ipamd.dhcp.codec import DhcpMessage
from ipamd.dhcp.context import Env, Exchange
from ipamd.dhcp.subnet_select import select_subnet
from tests.unit.dhcp.envs import RELAY, make_env, make_plan, subnet_row, tx_for
from tests.unit.dhcp.packets import ip, relay_info, request

MAC = bytes.fromhex("001a2b3c4d5e")
YIADDR = ip("10.77.1.100")


def _general(tx: Exchange, env: Env, mtype: int, yiaddr: int) -> bytes:
    """build's general path: the message assembled, then encoded (no template)."""
    msg = tx.msg
    sid = tx.sid_override or env.server_id or tx.local_ip
    built = DhcpMessage.reply_to(msg, mtype, yiaddr=yiaddr, server_id=sid or None)
    assert tx.subnet is not None
    reply._subnet_part(built, tx.subnet, msg.options.get(o.PRL, b""),
                       msg.options.get(o.VENDOR_CLASS), mtype == o.ACK and tx.mtype == o.INFORM)
    return built.to_bytes()


SUBNETS: dict[str, dict[str, Any]] = {
    "plain": {},
    "pxe by address": {"next_server": "10.77.0.9", "boot_file": "pxelinux.0"},
    "pxe by name": {"next_server": "tftp.example", "boot_file": "b" * 140},
    "long next server name": {"next_server": "t" * 70},
}
OPTIONS: dict[str, list[dict[str, Any]]] = {
    "few": [{"code": 6, "payload": {"addresses": ["10.77.0.53"]}},
            {"code": 15, "payload": {"value": "corp.example"}}],
    "vendor": [{"code": 43, "payload": {"hex": "0104c0a80001"}, "vendor_class": "PXEClient"}],
    "a value over 255 bytes": [{"code": 6, "payload": {"addresses": [
        f"10.77.0.{n}" for n in range(1, 70)]}}],
    "enough to overflow 576": [{"code": 15, "payload": {"value": "d" * 250}},
                               {"code": 17, "payload": {"value": "r" * 250}}],
}
CLIENTS: dict[str, dict[int, bytes]] = {
    "nothing": {},
    "prl": {o.PRL: bytes((1, 3, 6, 15, 51, 66, 67))},
    "client id": {o.CLIENT_ID: b"\x01" + MAC},
    "client id in its prl": {o.CLIENT_ID: b"\x01" + MAC, o.PRL: bytes((61, 1, 3, 6))},
    "relay agent info": {o.RELAY_AGENT: relay_info(circuit=b"port-7", remote=b"sw-1")},
    "both, vendor class": {o.CLIENT_ID: b"\x01" + MAC, o.VENDOR_CLASS: b"PXEClient:Arch",
                           o.RELAY_AGENT: relay_info(circuit=b"c" * 120, remote=b"r" * 120)},
    "max size 1500": {o.MAX_SIZE: (1500).to_bytes(2, "big"), o.CLIENT_ID: b"\x01" + MAC},
}


@pytest.mark.parametrize(("subnet", "options", "client"),
                         list(itertools.product(SUBNETS, OPTIONS, CLIENTS)))
def test_template_replies_are_what_the_general_path_builds(
    subnet: str, options: str, client: str
) -> None:
    env = make_env(make_plan([subnet_row(**SUBNETS[subnet])], options=OPTIONS[options]))
    for mtype, asked, ciaddr in ((o.OFFER, o.DISCOVER, 0), (o.ACK, o.REQUEST, 0),
                                 (o.ACK, o.REQUEST, "10.77.1.100"), (o.ACK, o.INFORM, "10.77.1.7")):
        msg = request(asked, MAC, giaddr=RELAY, ciaddr=ciaddr, flags=0x8000,
                      extra=CLIENTS[client])
        tx = tx_for(msg)
        assert select_subnet(tx, env) is None
        for _ in range(2):  # the template made, then the template used
            assert reply.build(tx, env, mtype, YIADDR) == _general(tx, env, mtype, YIADDR)


def test_an_ordinary_reply_comes_from_the_template() -> None:
    env = make_env(make_plan([subnet_row()], options=OPTIONS["few"]))
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY,
                        extra={o.CLIENT_ID: b"\x01" + MAC, o.RELAY_AGENT: relay_info(b"p1")}))
    assert select_subnet(tx, env) is None
    assert tx.subnet is not None and not tx.subnet.wire_memo
    first = reply.build(tx, env, o.OFFER, YIADDR)
    assert [t for t in tx.subnet.wire_memo.values() if t is not None]  # made and kept
    other = tx_for(request(o.DISCOVER, bytes.fromhex("001a2b3c4d5f"), giaddr=RELAY,
                           extra={o.CLIENT_ID: b"\x01\x00\x1a\x2b\x3c\x4d\x5f"}))
    assert select_subnet(other, env) is None
    second = reply.build(other, env, o.OFFER, YIADDR + 1)
    assert second != first and second == _general(other, env, o.OFFER, YIADDR + 1)


def test_what_a_template_cannot_hold_takes_the_general_path() -> None:
    # A reserved host name and an option 81 answer are the client's own.
    env = make_env(make_plan([subnet_row()], reservations=[
        {"mac": "00:1a:2b:3c:4d:5e", "ip": "10.77.1.50", "hostname": "printer"}]))
    fqdn = bytes((0x01, 0, 0)) + b"\x07printer\x07example\x00"
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.FQDN: fqdn}))
    assert select_subnet(tx, env) is None
    from ipamd.dhcp.engine import decide

    decide(tx, env)
    wire = reply.build(tx, env, o.OFFER, ip("10.77.1.50"))
    assert tx.subnet is not None and not tx.subnet.wire_memo
    from ipamd.dhcp.codec import parse

    sent = parse(wire).options
    assert sent[o.HOSTNAME] == b"printer" and o.FQDN in sent
