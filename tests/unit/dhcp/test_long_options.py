"""Options over 255 octets in replies (RFC 3396): split into instances, spread over the
options field, then file and sname (option overload, RFC 2132 §9.3), within the size the
client allows (option 57, else 576); left out when they cannot fit (docs/api-ipam.md,
"Long options")."""

from __future__ import annotations

from typing import Any

import pytest

from ipamd.core import option_shapes
from ipamd.dhcp import options as o
from ipamd.dhcp.codec import parse
from ipamd.dhcp.engine import DhcpReply, decide
from ipamd.dhcp.packing import FILE_END, FILE_OFF, HEADER_SIZE, SNAME_END, SNAME_OFF
from tests.unit.dhcp.envs import RELAY, make_env, make_plan, tx_for
from tests.unit.dhcp.packets import relay_info, request

# What ISC dhclient asks for with `also request domain-search`.
PRL = bytes([1, 28, 2, 3, 15, 6, 119, 12, 44, 47, 26, 121, 42, 51, 54, 58, 59])
CIRCUIT = b"ipt7e31b4lb"  # dhcrelay -a: its LAN interface's name


def _names(octets: int) -> list[str]:
    """Domain names whose RFC 1035 encoding is ``octets`` long (18 a name, one shorter)."""
    count, rest = divmod(octets, 18)
    names = [f"s{i:03d}.example.com" for i in range(count)]
    if rest:
        assert rest >= 3, rest
        names.append("a" * (rest - 2))
    return names


def _reply(value_octets: int, size: int | None = None, **stored: Any) -> tuple[bytes, bytes]:
    """A Discover's Offer from a subnet with a 119 of ``value_octets``: (wire, 119 value)."""
    payload = option_shapes.normalise(119, {"domains": _names(value_octets)})
    value = option_shapes.wire(119, payload)
    assert len(value) == value_octets
    env = make_env(make_plan(options=[{"code": 119, "payload": payload}], **stored))
    extra = {o.PRL: PRL, o.RELAY_AGENT: relay_info(CIRCUIT), o.HOSTNAME: b"asking"}
    if size is not None:
        extra[o.MAX_SIZE] = size.to_bytes(2, "big")
    outcome = decide(tx_for(request(o.DISCOVER, b"\x02\x11\x22\x33\x44\x55", giaddr=RELAY,
                                    extra=extra)), env)
    assert isinstance(outcome, DhcpReply), outcome
    return outcome.data, value


def _instances(area: bytes) -> list[tuple[int, int]]:
    """(code, length) of each option instance in one region, up to its end option."""
    found, pos = [], 0
    while pos < len(area) and area[pos] != 255:
        if area[pos] == 0:
            pos += 1
            continue
        found.append((area[pos], area[pos + 1]))
        pos += 2 + area[pos + 1]
    return found


def _regions(data: bytes) -> dict[str, list[tuple[int, int]]]:
    return {"options": _instances(data[HEADER_SIZE:]),
            "file": _instances(data[FILE_OFF:FILE_END]),
            "sname": _instances(data[SNAME_OFF:SNAME_END])}


def test_a_400_octet_value_fits_a_576_octet_reply_over_options_file_and_sname() -> None:
    data, value = _reply(400)
    assert len(data) <= 576 - 28  # no option 57: the minimum every client accepts
    got = parse(data)
    assert got.options[119] == value  # concatenated back: options, file, sname (RFC 3396)
    for code in (o.MESSAGE_TYPE, o.SERVER_ID, o.LEASE_TIME, o.SUBNET_MASK, o.ROUTER):
        assert code in got.options
    regions = _regions(data)
    parts = [n for area in regions.values() for code, n in area if code == 119]
    assert sum(parts) == 400 and len(parts) >= 2 and max(parts) <= 255
    assert any(code == 119 for code, _ in regions["file"])  # overloaded (option 52)
    assert got.options[o.OVERLOAD][0] & 1


@pytest.mark.parametrize("octets", [256, 600, option_shapes.MAX_VALUE])
def test_the_largest_value_reaches_a_client_announcing_1500_octets(octets: int) -> None:
    data, value = _reply(octets, size=1500)
    assert len(data) <= 1500 - 28
    assert parse(data).options[119] == value
    parts = [n for code, n in _regions(data)["options"] if code == 119]
    assert sum(parts) == octets and max(parts) <= 255


def test_a_value_a_576_octet_reply_cannot_carry_is_left_out_and_the_rest_kept() -> None:
    data, _ = _reply(option_shapes.MAX_VALUE)
    got = parse(data)
    assert len(data) <= 576 - 28 and 119 not in got.options
    assert got.options[o.LEASE_TIME] and got.options[o.SUBNET_MASK] and got.options[o.ROUTER]
    assert got.options[o.MESSAGE_TYPE] == bytes((o.OFFER,))


def test_a_short_value_is_never_split() -> None:
    data, value = _reply(198)
    assert [n for code, n in _regions(data)["options"] if code == 119] == [198]
    assert parse(data).options[119] == value
