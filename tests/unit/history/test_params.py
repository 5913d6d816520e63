"""GET /history query parsing and rendering: identities, times, zones, CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipamd.api.routes import history as routes
from ipamd.core.errors import BadRequest

PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def query(**values: str) -> routes.HistoryQuery:
    return routes.HistoryQuery.model_validate(values)


@pytest.mark.parametrize("text", [
    "AA:bb:cc:dd:ee:0f", "aa-bb-cc-dd-ee-0f", "aabb.ccdd.ee0f", "AABBCCDDEE0F", " aabbccddee0f ",
])
def test_mac_notations(text):
    assert routes.parse_mac(text) == "aa:bb:cc:dd:ee:0f"


@pytest.mark.parametrize("text", ["aa:bb:cc:dd:ee", "aa:bb-cc:dd:ee:ff", "zz:bb:cc:dd:ee:ff",
                                  "aabbccddeeff00", ""])
def test_bad_macs_name_the_parameter(text):
    with pytest.raises(BadRequest) as caught:
        routes.parse_mac(text)
    assert caught.value.message.startswith("mac:")


@pytest.mark.parametrize("text", ["01:AA:bb", "01-aa-bb", "01aabb", "0x01aabb"])
def test_hex_notations(text):
    assert routes.parse_hex("client_id", text) == b"\x01\xaa\xbb"


@pytest.mark.parametrize("text", ["1aabb", "01:aa-bb", "01:aa:", "hello", "", "01 aa"])
def test_bad_hex(text):
    with pytest.raises(BadRequest) as caught:
        routes.parse_hex("circuit", text)
    assert caught.value.message.startswith("circuit:")


def test_hex_longer_than_an_option_is_refused():
    with pytest.raises(BadRequest, match="255"):
        routes.parse_hex("remote", "00" * 256)


def test_identity_values_are_normalised():
    assert routes.identity_value("duid", "00:01:AB:cd") == "0001abcd"
    assert routes.identity_value("hostname", " Printer-3.Example.COM. ") == "printer-3.example.com"
    assert routes.identity_value("ip", "10.77.0.5") == "10.77.0.5"
    with pytest.raises(BadRequest, match=re.escape("ip: '10.77.0.256'")):
        routes.identity_value("ip", "10.77.0.256")


def test_times_with_offset_and_naive_times_in_the_zone():
    utc = dt.datetime(2025, 1, 7, 13, 0, tzinfo=dt.UTC)
    assert routes.parse_time("at", "2025-01-07T13:00:00Z", PARIS) == utc
    assert routes.parse_time("at", "2025-01-07T14:00:00+01:00", None) == utc
    # Without an offset the time is read in tz (Paris is UTC+1 in January) ...
    assert routes.parse_time("at", "2025-01-07T14:00", PARIS) == utc
    # ... and in UTC when no tz is given.
    assert routes.parse_time("at", "2025-01-07T13:00", None) == utc
    # A date alone is midnight there; summer time shifts the offset.
    assert routes.parse_time("from", "2025-07-01", PARIS) == dt.datetime(
        2025, 6, 30, 22, 0, tzinfo=dt.UTC)
    # An unencoded '+' arrives as a space.
    assert routes.parse_time("at", "2025-01-07T14:00:00 01:00", None) == utc


@pytest.mark.parametrize("text", ["yesterday", "2025-13-01", "2025-01-07T25:00", ""])
def test_bad_times_name_the_parameter(text):
    with pytest.raises(BadRequest) as caught:
        routes.parse_time("to", text, None)
    assert caught.value.message.startswith("to:")


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "../../etc/passwd", "", "/etc/localtime"])
def test_unknown_zone_is_named(name):
    with pytest.raises(BadRequest) as caught:
        routes.parse_zone(name)
    assert repr(name) in caught.value.message


def test_stamps_render_in_the_zone():
    moment = dt.datetime(2025, 1, 7, 13, 0, 0, 250000, tzinfo=dt.UTC)
    assert routes.stamp(moment, None) == "2025-01-07T13:00:00.250000Z"
    assert routes.stamp(moment, zoneinfo.ZoneInfo("UTC")) == "2025-01-07T13:00:00.250000Z"
    assert routes.stamp(moment, PARIS) == "2025-01-07T14:00:00.250000+01:00"
    assert routes.stamp(moment, zoneinfo.ZoneInfo("Asia/Kolkata")).endswith("18:30:00.250000+05:30")
    assert routes.stamp(None, PARIS) is None


@pytest.mark.parametrize("values, message", [
    ({}, "exactly one identity parameter is required"),
    ({"ip": "10.77.0.1", "mac": "02:00:00:00:00:01"}, "got ip and mac"),
    ({"ip": "10.77.0.1", "giaddr": "10.77.0.254"}, "giaddr is only used together"),
    ({"ip": "10.77.0.1", "at": "2025-01-01T00:00Z", "to": "2025-01-02T00:00Z"}, "cannot be"),
    ({"ip": "10.77.0.1", "from": "2025-01-02T00:00Z", "to": "2025-01-01T00:00Z"},
     "from must not be after to"),
    ({"circuit": "01", "giaddr": "nope"}, "giaddr: 'nope'"),
])
def test_lookup_errors(values, message):
    with pytest.raises(BadRequest) as caught:
        routes.build_lookup(query(**values), None)
    assert message in caught.value.message


def test_lookup_of_a_moment_and_of_a_range():
    point = routes.build_lookup(query(mac="0200.0000.0001", at="2025-01-07T14:00"), PARIS)
    assert (point.kind, point.value) == ("mac", "02:00:00:00:00:01")
    assert point.start == point.end == dt.datetime(2025, 1, 7, 13, tzinfo=dt.UTC)
    ranged = routes.build_lookup(query(circuit="65:74:68", giaddr="10.77.0.1",
                                       **{"from": "2025-01-01T00:00Z"}), None)
    assert (ranged.value, ranged.giaddr, ranged.end) == (b"eth", "10.77.0.1", None)


def test_unknown_parameters_and_formats_are_refused():
    with pytest.raises(Exception, match="from_"):
        query(ip="10.77.0.1", from_="2025-01-01")
    with pytest.raises(Exception, match="format"):
        query(ip="10.77.0.1", format="xml")


def test_csv_has_a_header_and_neutralises_formulas():
    item = dict.fromkeys(routes.CSV_COLUMNS)
    item.update(ip="10.77.0.5", hostname="=HYPERLINK(\"http://x\")", state="active")
    text = routes.csv_rows([item], header=True)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == list(routes.CSV_COLUMNS)
    assert rows[1][0] == "10.77.0.5"
    assert rows[1][routes.CSV_COLUMNS.index("hostname")] == "'=HYPERLINK(\"http://x\")"
    assert text.endswith("\r\n")
    assert routes.csv_rows([item], header=False).count("\r\n") == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_a_value_or_a_400(text):
    # Whatever a query string carries, parsing answers with a value or a 400, never a crash
    # (a 500) or a value the database would refuse.
    for parse in (
        lambda: routes.parse_time("at", text, PARIS),
        lambda: routes.parse_zone(text),
        lambda: routes.parse_mac(text),
        lambda: routes.parse_hex("remote", text),
        lambda: routes.parse_ipv4("giaddr", text),
        lambda: routes.parse_hostname(text),
    ):
        try:
            value = parse()
        except BadRequest:
            continue
        if isinstance(value, dt.datetime):
            assert value.utcoffset() == dt.timedelta(0)
        if isinstance(value, str):
            assert "\x00" not in value


def test_times_at_the_edge_of_the_calendar():
    with pytest.raises(BadRequest, match="out of range"):
        routes.parse_time("at", "0001-01-01T00:00:00+01:00", None)
    assert routes.parse_time("at", "9999-12-31T23:00", None).year == 9999
