"""core.dnswire: uncompressed DNS wire-format names (RFC 1035 §3.1), as DHCP options hold them."""

from __future__ import annotations

import pytest

from ipamd.core import dnswire


def test_encode_and_decode_an_absolute_name():
    wire = b"\x04host\x07example\x03com\x00"
    assert dnswire.encode((b"host", b"example", b"com")) == wire
    assert dnswire.decode(wire) == ((b"host", b"example", b"com"), True, len(wire))
    assert dnswire.wire_length((b"host", b"example", b"com")) == len(wire)


def test_a_partial_name_has_no_root_label():
    # RFC 4704 §4.2: a client may send only its host label.
    assert dnswire.encode((b"host",), absolute=False) == b"\x04host"
    assert dnswire.decode(b"\x04host", partial=True) == ((b"host",), False, 5)
    with pytest.raises(ValueError, match="no root label"):
        dnswire.decode(b"\x04host")


def test_a_list_of_names_fills_its_data():
    data = b"\x07example\x03com\x00\x03lab\x00"
    assert dnswire.decode_list(data) == ((b"example", b"com"), (b"lab",))
    assert dnswire.decode_list(b"") == ()


@pytest.mark.parametrize(("data", "message"), [
    (b"\xc0\x0c", "compressed"),  # RFC 8415 §10: never compressed
    (b"\x40" + bytes(64) + b"\x00", "compressed or reserved"),
    (b"\x05abc", "past the end"),
    ((b"\x3f" + b"a" * 63) * 4 + b"\x00", "longer than 255"),
])
def test_what_is_not_a_name(data: bytes, message: str):
    with pytest.raises(ValueError, match=message):
        dnswire.decode(data)


def test_encode_refuses_what_the_wire_cannot_hold():
    with pytest.raises(ValueError, match="1 to 63"):
        dnswire.encode((b"",))
    with pytest.raises(ValueError, match="1 to 63"):
        dnswire.encode((b"a" * 64,))
    with pytest.raises(ValueError, match="at most 255"):
        dnswire.encode((b"a" * 63,) * 4)


def test_text_escapes_as_a_master_file_does():
    # RFC 1035 §5.1: \X for a special character, \DDD for an unprintable octet.
    assert dnswire.text((b"host", b"example", b"com")) == "host.example.com."
    assert dnswire.text((b"a.b", b"c\\d", b"\x00\xff ")) == "a\\.b.c\\\\d.\\000\\255\\032."
    assert dnswire.text((b"host",), absolute=False) == "host"
    assert dnswire.text(()) == "."


def test_labels_of_an_operators_name():
    assert dnswire.labels_of("example.com") == dnswire.labels_of("example.com.") == (
        b"example", b"com")
    assert dnswire.labels_of(".") == ()
    with pytest.raises(ValueError, match="empty label"):
        dnswire.labels_of("a..b")
    with pytest.raises(ValueError, match="xn--"):
        dnswire.labels_of("bücher.example")
