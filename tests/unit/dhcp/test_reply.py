"""Stage 6 (options) and stage 7 (where to send), on built and parsed replies."""

from __future__ import annotations

import uuid

import pytest

from ipamd.dhcp import options as o
from ipamd.dhcp import plan, reply
from ipamd.dhcp.codec import parse
from ipamd.dhcp.destination import BROADCAST, destination
from ipamd.dhcp.engine import decide
from ipamd.dhcp.reply import build
from ipamd.dhcp.subnet_select import select_subnet
from tests.unit.dhcp.envs import RELAY, make_env, make_plan, subnet_row, tx_for
from tests.unit.dhcp.packets import ip, request

MAC = bytes.fromhex("001a2b3c4d5e")


def _offer(env, msg):  # type: ignore[no-untyped-def]
    tx = tx_for(msg)
    assert select_subnet(tx, env) is None
    return parse(build(tx, env, o.OFFER, ip("10.77.1.100")))


def _env(**subnet):  # type: ignore[no-untyped-def]
    options = subnet.pop("options", [])
    return make_env(make_plan([subnet_row(**subnet)], options=options))


def test_subnet_fields_become_options() -> None:
    env = _env(lease_time=7200, ntp=["10.77.0.123"],
               options=[{"code": 6, "payload": {"addresses": ["10.77.0.53", "10.77.0.54"]}},
                        {"code": 15, "payload": {"value": "corp.example"}}])
    offer = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY))
    opts = offer.options
    assert opts[o.SUBNET_MASK] == bytes((255, 255, 255, 0))
    assert opts[o.ROUTER] == ip("10.77.1.1").to_bytes(4, "big")
    assert opts[o.DNS] == ip("10.77.0.53").to_bytes(4, "big") + ip("10.77.0.54").to_bytes(4, "big")
    assert opts[o.DOMAIN_NAME] == b"corp.example"
    assert opts[o.NTP] == ip("10.77.0.123").to_bytes(4, "big")
    assert int.from_bytes(opts[o.LEASE_TIME], "big") == 7200
    assert int.from_bytes(opts[o.RENEWAL], "big") == 3600
    assert int.from_bytes(opts[o.REBINDING], "big") == 6300
    assert opts[o.SERVER_ID] == ip("10.77.0.254").to_bytes(4, "big")
    assert offer.yiaddr == ip("10.77.1.100") and offer.giaddr == ip(RELAY)


def test_a_stored_option_42_beats_the_ntp_field() -> None:
    env = _env(ntp=["10.77.0.123"],
               options=[{"code": 42, "payload": {"addresses": ["10.77.0.9"]}}])
    offer = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY))
    assert offer.options[o.NTP] == ip("10.77.0.9").to_bytes(4, "big")


def test_parameter_request_list_is_honoured() -> None:
    env = _env(ntp=["10.77.0.123"],
               options=[{"code": 6, "payload": {"addresses": ["10.77.0.53"]}},
                        {"code": 15, "payload": {"value": "corp.example"}}])
    offer = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY,
                                extra={o.PRL: bytes((15, 6))}))
    assert o.DNS in offer.options and o.DOMAIN_NAME in offer.options
    assert o.NTP not in offer.options  # not asked for
    assert o.SUBNET_MASK in offer.options and o.ROUTER in offer.options  # always
    assert o.LEASE_TIME in offer.options
    raw = build_raw(env, request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.PRL: bytes((15, 6))}))
    # 53, 54, then the client's order (RFC 2132 §9.8).
    codes = _codes(raw)
    assert codes[:2] == [o.MESSAGE_TYPE, o.SERVER_ID]
    assert codes.index(o.DOMAIN_NAME) < codes.index(o.DNS)


def build_raw(env, msg):  # type: ignore[no-untyped-def]
    tx = tx_for(msg)
    select_subnet(tx, env)
    return build(tx, env, o.OFFER, ip("10.77.1.100"))


def _codes(raw: bytes) -> list[int]:
    out, pos = [], 240
    while pos < len(raw) and raw[pos] != 255:
        if raw[pos] == 0:
            pos += 1
            continue
        out.append(raw[pos])
        pos += 2 + raw[pos + 1]
    return out


def test_relay_agent_information_is_echoed() -> None:
    env = _env()
    info = bytes((1, 3)) + b"abc" + bytes((2, 2)) + b"xy"
    offer = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.RELAY_AGENT: info}))
    assert offer.options[o.RELAY_AGENT] == info
    assert _codes(build_raw(env, request(o.DISCOVER, MAC, giaddr=RELAY,
                                         extra={o.RELAY_AGENT: info})))[-1] == o.RELAY_AGENT


def test_pxe_fields_and_vendor_option_43() -> None:
    pxe = bytes.fromhex("0601080a04000050584500")
    env = _env(next_server="10.77.0.69", boot_file="pxelinux.0",
               options=[{"code": 43, "payload": {"hex": pxe.hex(":")},
                         "vendor_class": "PXEClient"}])
    offer = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY,
                                extra={o.VENDOR_CLASS: b"PXEClient:Arch:00000:UNDI:002001"}))
    assert offer.siaddr == ip("10.77.0.69") and offer.file == b"pxelinux.0"
    assert offer.options[o.VENDOR_SPECIFIC] == pxe
    plain = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.VENDOR_CLASS: b"MSFT 5.0"}))
    assert o.VENDOR_SPECIFIC not in plain.options
    named = _env(next_server="tftp.example", boot_file="x" * 140)
    offer = _offer(named, request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.PRL: bytes((66, 67))}))
    assert offer.sname == b"tftp.example" and offer.options[o.TFTP_SERVER] == b"tftp.example"
    assert offer.file == b"" and offer.options[o.BOOTFILE] == b"x" * 140


def test_maximum_message_size_bounds_the_reply() -> None:
    many = [{"code": code, "payload": {"value": "v" * 200}} for code in (14, 17, 18, 40, 47)]
    env = _env(options=many)
    big = build_raw(env, request(o.DISCOVER, MAC, giaddr=RELAY,
                                 extra={o.MAX_SIZE: (1500).to_bytes(2, "big")}))
    assert len(big) + 28 > 576 and all(c in parse(big).options for c in (14, 17, 18, 40, 47))
    small = build_raw(env, request(o.DISCOVER, MAC, giaddr=RELAY))  # no 57: 576 (RFC 2131)
    assert len(small) + 28 <= 576
    kept = parse(small).options
    assert o.SUBNET_MASK in kept and o.LEASE_TIME in kept and o.SERVER_ID in kept


FQDN_ASKED_S = bytes((o.FQDN_S | o.FQDN_E, 0, 0)) + b"\x06laptop\x07example\x03com\x00"


@pytest.mark.parametrize(("adapter", "zone"), [
    ("none", None), ("embedded", None), ("ad_gsstsig", None),
    ("bind_tsig", None), ("powerdns_http", None)])
def test_client_fqdn_says_no_update_when_nothing_registers(adapter: str, zone: str | None) -> None:
    # Adapters not built yet, or no zone and server: the reply must not promise an update.
    offer = _offer(_env(ddns_adapter=adapter, ddns_zone=zone),
                   request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.FQDN: FQDN_ASKED_S}))
    raw = offer.options[o.FQDN]
    flags = raw[0]
    assert flags & o.FQDN_N and not flags & o.FQDN_S  # no update at all, so S must be 0
    assert flags & o.FQDN_O  # the client asked S=1: overridden
    assert flags & o.FQDN_E  # the client's encoding kept
    assert raw[1:3] == b"\xff\xff"  # RCODE1/2 = 255 from a server (RFC 4702 §2.2)
    assert raw[3:] == FQDN_ASKED_S[3:]


def test_client_fqdn_without_s_is_not_overridden() -> None:
    asked = bytes((o.FQDN_E, 0, 0)) + b"\x06laptop\x00"
    offer = _offer(_env(ddns_adapter="embedded"),
                   request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.FQDN: asked}))
    flags = offer.options[o.FQDN][0]
    assert flags & o.FQDN_N and not flags & (o.FQDN_S | o.FQDN_O)


@pytest.mark.parametrize(
    ("client", "updates", "expected"),
    [
        (0, False, o.FQDN_N),
        (o.FQDN_S, False, o.FQDN_N | o.FQDN_O),
        (o.FQDN_N, False, o.FQDN_N),
        (o.FQDN_S | o.FQDN_E, False, o.FQDN_N | o.FQDN_O | o.FQDN_E),
        (0, True, o.FQDN_S | o.FQDN_O),
        (o.FQDN_S, True, o.FQDN_S),
        (o.FQDN_E, True, o.FQDN_S | o.FQDN_O | o.FQDN_E),
    ],
)
def test_fqdn_flags_truth_table(client: int, updates: bool, expected: int) -> None:
    flags = reply.fqdn_flags(client, updates)
    assert flags == expected
    assert not (flags & o.FQDN_N and flags & o.FQDN_S)  # RFC 4702 §2.1: N=1 forces S=0


@pytest.mark.parametrize("adapter", ["bind_tsig", "powerdns_http", "ad_gsstsig", "embedded"])
def test_client_fqdn_says_the_server_updates(adapter: str) -> None:
    offer = _offer(_env(ddns_adapter=adapter, ddns_zone="example.com"),
                   request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.FQDN: FQDN_ASKED_S}))
    flags = offer.options[o.FQDN][0]
    assert flags & o.FQDN_S and not flags & (o.FQDN_N | o.FQDN_O)


def test_the_predicate_drives_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    # When an adapter performs updates, the same code answers S=1, N=0.
    monkeypatch.setattr(plan, "DNS_UPDATE_ADAPTERS", frozenset({"bind_tsig"}))
    offer = _offer(_env(ddns_adapter="bind_tsig", ddns_zone="example.com"),
                   request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.FQDN: FQDN_ASKED_S}))
    flags = offer.options[o.FQDN][0]
    assert flags & o.FQDN_S and not flags & (o.FQDN_N | o.FQDN_O)


def test_reservation_hostname_is_sent_when_asked() -> None:
    env = make_env(make_plan(reservations=[{"ip": "10.77.1.50", "mac": "00:1a:2b:3c:4d:5e",
                                            "hostname": "printer-3"}]))
    outcome = decide(tx_for(request(o.DISCOVER, MAC, giaddr=RELAY,
                                    extra={o.PRL: bytes((1, 12))})), env)
    assert parse(outcome.data).yiaddr == ip("10.77.1.50")  # type: ignore[union-attr]
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.PRL: bytes((1, 12))}))
    select_subnet(tx, env)
    from ipamd.dhcp.identity import identify

    identify(tx, env)
    offer = parse(build(tx, env, o.OFFER, ip("10.77.1.50")))
    assert offer.options[o.HOSTNAME] == b"printer-3"


def test_nak_carries_only_type_server_id_and_message() -> None:
    env = _env()
    tx = tx_for(request(o.REQUEST, MAC, giaddr=RELAY, requested="10.77.9.9",
                        extra={o.CLIENT_ID: b"\x01abc"}))
    nak = parse(build(tx, env, o.NAK, message="nope"))
    assert set(nak.options) == {o.MESSAGE_TYPE, o.SERVER_ID, o.MESSAGE, o.CLIENT_ID}
    assert nak.yiaddr == 0 and nak.broadcast


def test_options_memo_is_per_subnet_object() -> None:
    env = _env(options=[{"code": 6, "payload": {"addresses": ["10.77.0.53"]}}])
    _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY))
    subnet = next(iter(env.plan.subnets.values()))
    assert subnet.reply_memo  # filled
    fresh = make_plan([subnet_row()],
                      options=[{"code": 6, "payload": {"addresses": ["10.77.0.99"]}}])
    env.plan = fresh
    offer = _offer(env, request(o.DISCOVER, MAC, giaddr=RELAY))
    assert offer.options[o.DNS] == ip("10.77.0.99").to_bytes(4, "big")


def test_destination_rules() -> None:
    relayed = request(o.DISCOVER, MAC, giaddr=RELAY)
    assert destination(relayed, o.OFFER, 67, 68) == (ip(RELAY), 67)
    assert destination(relayed, o.NAK, 6767, 68) == (ip(RELAY), 6767)
    renewing = request(o.REQUEST, MAC, ciaddr="10.77.1.100")
    assert destination(renewing, o.ACK, 67, 68) == (ip("10.77.1.100"), 68)
    assert destination(renewing, o.NAK, 67, 68) == (BROADCAST, 68)
    fresh = request(o.DISCOVER, MAC, flags=o.FLAG_BROADCAST)
    assert destination(fresh, o.OFFER, 67, 68) == (BROADCAST, 68)


def test_unknown_stored_payload_is_skipped_not_sent() -> None:
    plan = make_plan(options=[{"code": 6, "payload": {"nonsense": 1}},
                              {"code": 15, "payload": {"value": "ok.example"}}])
    subnet = plan.subnets[next(iter(plan.subnets))]
    assert o.DNS not in subnet.options and subnet.options[o.DOMAIN_NAME] == b"ok.example"
    assert uuid.UUID(str(subnet.id))
