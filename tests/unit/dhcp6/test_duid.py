"""dhcp6.duid: DUIDs read (RFC 8415 §11, RFC 6355), rendered, and made for the server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import pytest

from ipamd.core import identifiers
from ipamd.dhcp6.duid import DUID_EPOCH, Duid, duid_time, server_en, server_llt
from ipamd.dhcp6.protocol import Malformed
from tests.unit.dhcp6.wire import DUID_EN, DUID_LL, DUID_LLT, DUID_UUID, MAC


def test_the_four_types_have_their_fields():
    llt = Duid.parse(DUID_LLT)
    assert (llt.kind_name, llt.hw_type, llt.time, llt.mac) == (
        "DUID-LLT", 1, 0x2E5B1C00, "02:00:5e:10:00:01")
    en = Duid.parse(DUID_EN)
    assert (en.kind_name, en.enterprise, en.identifier, en.hw_type, en.mac) == (
        "DUID-EN", 2495, bytes(range(1, 9)), None, None)
    ll = Duid.parse(DUID_LL)
    assert (ll.kind_name, ll.link_layer, ll.time) == ("DUID-LL", MAC, None)
    uid = Duid.parse(DUID_UUID)
    assert uid.uuid == UUID("9f0bd52f-8e0c-4a0f-b5a7-c7d53c3e2a11") and uid.enterprise is None


def test_an_unknown_type_is_opaque():
    # RFC 8415 §11: DUIDs are opaque; a type we do not know is still an identity.
    duid = Duid.parse(b"\x00\x63\x01\x02\x03")
    assert (duid.kind, duid.kind_name, duid.identifier) == (99, "DUID type 99", b"\x01\x02\x03")
    assert duid.uuid is None and duid.link_layer is None and duid.mac is None
    assert duid.describe() == "DUID type 99 01:02:03"


def test_a_mac_only_for_ethernet_addresses():
    assert Duid.ll(b"\x01\x02\x03\x04\x05\x06\x07\x08", hw_type=27).mac is None  # EUI-64
    assert Duid.ll(MAC, hw_type=6).mac is None  # IEEE 802 network, not Ethernet


def test_text_matches_what_the_api_stores():
    duid = Duid.parse(DUID_LL)
    assert duid.text == identifiers.duid(DUID_LL.hex()) == "00:03:00:01:02:00:5e:10:00:01"
    assert duid.hex == identifiers.bare_hex(duid.text) == DUID_LL.hex()
    assert str(duid) == duid.text
    assert Duid.from_text("00-03-00-01-02-00-5e-10-00-01") == duid
    assert Duid.from_text(duid.hex) == duid


@pytest.mark.parametrize("text", ["zz", "00:01", "00:04:01:02"])
def test_from_text_says_what_is_wrong(text: str):
    with pytest.raises(ValueError, match="is not a DUID"):
        Duid.from_text(text)


@pytest.mark.parametrize("raw", [
    b"", b"\x00\x01", b"\x00\x01" + bytes(6), b"\x00\x02" + bytes(4), b"\x00\x03\x00\x01",
    b"\x00\x04" + bytes(15), b"\x00\x04" + bytes(17), b"\x00\x05" + bytes(129),
])
def test_parse_refuses_what_rfc_8415_refuses(raw: bytes):
    with pytest.raises(Malformed) as caught:
        Duid.parse(raw)
    assert caught.value.reason == "bad_duid"


def test_describe_reads_a_duid_for_an_operator():
    assert Duid.parse(DUID_LLT).describe() == (
        "DUID-LLT hw 1 time 777722880 (2024-08-23T10:08:00Z) 02:00:5e:10:00:01")
    assert Duid.parse(DUID_EN).describe() == "DUID-EN enterprise 2495 01:02:03:04:05:06:07:08"
    assert Duid.parse(DUID_LL).describe() == "DUID-LL hw 1 02:00:5e:10:00:01"
    assert Duid.parse(DUID_UUID).describe() == "DUID-UUID 9f0bd52f-8e0c-4a0f-b5a7-c7d53c3e2a11"


def test_duid_time_counts_from_2000_modulo_2_32():
    assert duid_time(DUID_EPOCH) == 0
    assert duid_time(datetime(2000, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))) == 0
    assert duid_time(DUID_EPOCH + timedelta(seconds=2**32 + 5)) == 5
    with pytest.raises(ValueError, match="aware"):
        duid_time(datetime(2026, 1, 1))  # a naive time: refused


def test_a_server_duid_llt_from_a_mac_and_the_moment():
    made = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)
    duid = server_llt(MAC, made)
    assert duid == Duid.llt(MAC, duid_time(made))
    assert (duid.kind, duid.hw_type, duid.mac) == (1, 1, MAC.hex(":"))
    assert duid.raw == b"\x00\x01\x00\x01" + duid_time(made).to_bytes(4, "big") + MAC
    for bad in (bytes(6), b"\x01\x00\x5e\x00\x00\x01", MAC[:5]):  # zero, multicast, short
        with pytest.raises(ValueError, match="unicast Ethernet"):
            server_llt(bad, made)


def test_a_server_duid_en_from_an_enterprise_number_and_random_octets():
    one, two = server_en(2495), server_en(2495)
    assert one.enterprise == two.enterprise == 2495 and one != two
    assert len(one.identifier) == 16
    assert server_en(32473, b"\x01\x02").raw == b"\x00\x02\x00\x00\x7e\xd9\x01\x02"
    with pytest.raises(ValueError, match="enterprise number"):
        server_en(2**32)
    with pytest.raises(ValueError, match="1 to 124"):
        server_en(1, b"")
