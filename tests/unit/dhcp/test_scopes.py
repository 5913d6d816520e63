"""Option scopes (docs/api-ipam.md, "Option scopes"): reservation > class > subnet for every
code, the lowest class priority first; the new class match kinds (arch, circuit/remote id)."""

from __future__ import annotations

import uuid
from typing import Any

from ipamd.dhcp import options as o
from ipamd.dhcp.classify import classify
from ipamd.dhcp.codec import parse
from ipamd.dhcp.context import Env
from ipamd.dhcp.engine import decide
from ipamd.dhcp.message import DhcpMessage
from ipamd.dhcp.plan import build
from ipamd.dhcp.scopes import lay, layers_for
from tests.unit.dhcp.envs import RELAY, SUBNET, make_env, subnet_row, tx_for
from tests.unit.dhcp.packets import ip, relay_info, request

MAC = bytes.fromhex("001a2b3c4d5e")
RESERVED_MAC = bytes.fromhex("001a2b3c4d99")
ARCH_BIOS, ARCH_UEFI = b"\x00\x00", b"\x00\x07"
RESERVATION = uuid.UUID("0192f000-0000-7000-8000-0000000000aa")


def _class(name: str, match: str, value: str, *, priority: int = 100,
           boot_file: str | None = None, next_server: str | None = None) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "name": name, "match": match, "value": value,
            "priority": priority, "next_server": next_server, "boot_file": boot_file}


def _dns(*addresses: str) -> dict[str, Any]:
    return {"code": 6, "payload": {"addresses": list(addresses)}, "vendor_class": None}


def _plan_env(classes: list[dict[str, Any]], class_options: list[dict[str, Any]],
              reservation_options: tuple[dict[str, Any], ...] = (),
              **subnet: Any) -> tuple[Env, uuid.UUID]:
    """An env whose plan is built from the rows the loader reads, options of every scope."""
    reserved = RESERVATION
    rows = {
        "subnets": [subnet_row(**subnet)], "excludes": [], "assignments": [],
        "pools": [{"id": uuid.uuid4(), "subnet_id": SUBNET, "start_ip": ip("10.77.1.100"),
                   "end_ip": ip("10.77.1.109"), "class_id": None}],
        "reservations": [{"id": reserved, "subnet_id": SUBNET, "ip": ip("10.77.1.50"),
                          "mac": RESERVED_MAC.hex(":"), "duid": None, "client_id": None,
                          "hostname": None, "next_server": None, "boot_file": "own.pxe"}],
        "options": [{"subnet_id": SUBNET, "vendor_class": None, "code": 6,
                     "payload": {"addresses": ["10.77.0.53"]}},
                    {"subnet_id": SUBNET, "vendor_class": None, "code": 15,
                     "payload": {"value": "subnet.example"}}],
        "classes": classes, "class_options": class_options,
        "reservation_options": list(reservation_options),
        "trusted_relays": [RELAY], "version": 1,
    }
    return make_env(build(rows)), reserved


def _offer(env: Env, mac: bytes = MAC, extra: dict[int, bytes] | None = None) -> DhcpMessage:
    tx = tx_for(request(o.DISCOVER, mac, giaddr=RELAY, extra=extra))
    decision = decide(tx, env)
    assert not isinstance(decision, str | None), decision
    return parse(decision.data)  # type: ignore[union-attr]  # an Offer is a DhcpReply


def test_class_boot_file_by_architecture() -> None:
    bios = _class("bios", "arch", "0", boot_file="pxelinux.0")
    uefi = _class("uefi", "arch", "7", boot_file="grubx64.efi", next_server="10.77.0.69")
    env, _ = _plan_env([bios, uefi], [], boot_file="subnet.pxe")
    assert _offer(env, extra={o.CLIENT_ARCH: ARCH_BIOS}).file.rstrip(b"\0") == b"pxelinux.0"
    uefi_offer = _offer(env, extra={o.CLIENT_ARCH: ARCH_UEFI})
    assert uefi_offer.file.rstrip(b"\0") == b"grubx64.efi"
    assert uefi_offer.siaddr == ip("10.77.0.69")
    # No option 93: the subnet's own boot file.
    assert _offer(env).file.rstrip(b"\0") == b"subnet.pxe"


def test_precedence_reservation_over_class_over_subnet() -> None:
    everyone = _class("everyone", "mac_prefix", "00:1a:2b")
    env, _ = _plan_env(
        [everyone],
        [{"class_id": everyone["id"], **_dns("10.77.0.60")},
         {"class_id": everyone["id"], "code": 42, "payload": {"addresses": ["10.77.0.61"]},
          "vendor_class": None}],
        ({"reservation_id": RESERVATION, "subnet_id": SUBNET, **_dns("10.77.0.70")},),
        ntp=["10.77.0.123"])
    dynamic = _offer(env).options
    assert dynamic[o.DNS] == ip("10.77.0.60").to_bytes(4, "big")  # class over subnet
    assert dynamic[o.NTP] == ip("10.77.0.61").to_bytes(4, "big")  # class 42 over the NTP field
    assert dynamic[o.DOMAIN_NAME] == b"subnet.example"  # only the subnet sets it
    own = _offer(env, RESERVED_MAC)
    assert own.yiaddr == ip("10.77.1.50")
    assert own.options[o.DNS] == ip("10.77.0.70").to_bytes(4, "big")  # reservation over class
    assert own.options[o.NTP] == ip("10.77.0.61").to_bytes(4, "big")
    assert own.file.rstrip(b"\0") == b"own.pxe"


def test_lowest_priority_number_wins_among_classes() -> None:
    low = _class("low", "mac_prefix", "00:1a", priority=10)
    high = _class("high", "mac_prefix", "00:1a:2b", priority=20)
    env, _ = _plan_env([high, low], [{"class_id": low["id"], **_dns("10.77.0.10")},
                                     {"class_id": high["id"], **_dns("10.77.0.20")}])
    assert _offer(env).options[o.DNS] == ip("10.77.0.10").to_bytes(4, "big")
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY))
    decide(tx, env)
    names = [layer.name for layer in layers_for(env.plan, tx.classes, None)]
    assert names == ["high", "low"]  # lowest precedence first


def test_a_scope_option_beats_a_lower_vendor_specific_one() -> None:
    pxe = _class("pxe", "vendor_class", "PXEClient")
    env, _ = _plan_env([pxe], [{"class_id": pxe["id"], "code": 43,
                                "payload": {"hex": "01:01:02"}, "vendor_class": None}])
    subnet = env.plan.subnets[SUBNET]
    subnet.vendor_options = ((b"PXEClient", {43: b"\x09\x09"}),)
    made, sources = lay(subnet, layers_for(env.plan, frozenset({pxe["id"]}), None))
    assert made.vendor_options == ()
    assert made.options[43] == b"\x01\x01\x02"
    assert sources[(43, None)] == ("class", pxe["id"], "pxe")
    assert sources[(6, None)] == ("subnet", SUBNET, "")


def test_a_client_with_neither_gets_the_subnet_itself() -> None:
    gate = _class("gate-only", "mac_prefix", "00:1a:2b")  # gates pools, carries nothing
    env, _ = _plan_env([gate], [])
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY))
    decide(tx, env)
    assert tx.classes == frozenset({gate["id"]})
    assert not layers_for(env.plan, tx.classes, tx.reservation)
    assert env.plan.scoped == {}


def test_relay_circuit_and_remote_id_match() -> None:
    circuit = _class("port-7", "circuit_id", "65:74:68:37")
    remote = _class("switch-a", "remote_id", "00:11:22")
    env, _ = _plan_env([circuit, remote], [])
    for info, wanted in ((relay_info(circuit=b"eth7"), {circuit["id"]}),
                         (relay_info(circuit=b"eth8", remote=b"\x00\x11\x22"), {remote["id"]}),
                         (relay_info(circuit=b"eth7", remote=b"\x00\x11\x22"),
                          {circuit["id"], remote["id"]})):
        tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.RELAY_AGENT: info}))
        decide(tx, env)
        assert tx.classes == frozenset(wanted)


def test_arch_list_matches_any_of_its_types() -> None:
    uefi = _class("uefi", "arch", "7")
    env, _ = _plan_env([uefi], [])
    tx = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY,
                        extra={o.CLIENT_ARCH: ARCH_BIOS + ARCH_UEFI}))
    tx.subnet = env.plan.subnets[SUBNET]
    classify(tx, env)
    assert tx.classes == frozenset({uefi["id"]})
    odd = tx_for(request(o.DISCOVER, MAC, giaddr=RELAY, extra={o.CLIENT_ARCH: b"\x00"}))
    classify(odd, env)
    assert odd.classes == frozenset()  # a truncated type matches nothing
