"""The HTTP/1.x connection's state machines (api/http1.py) and a response's framing
(api/http1_write.py), without sockets: each table is whole, a move it does not list is
refused, and each framing decision shows in the bytes written."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import pytest

from ipamd.api import http1, http1_write
from ipamd.api.http1 import BodyState, Peer, Phase
from ipamd.api.http1_write import Framing, HeadFields, Response, ResponseState

TABLES: list[tuple[type[enum.Enum], Mapping[enum.Enum, frozenset[enum.Enum]]]] = [
    (Phase, http1._PHASE_MOVES),
    (Peer, http1._PEER_MOVES),
    (BodyState, http1._BODY_MOVES),
    (ResponseState, http1_write._RESPONSE_MOVES),
]
FIELDS = HeadFields(dated=False, extra=(b"server: test",))


@pytest.mark.parametrize(("machine", "moves"), TABLES)
def test_each_table_names_every_state_and_moves_only_within_it(
    machine: type[enum.Enum], moves: Mapping[enum.Enum, frozenset[enum.Enum]],
) -> None:
    assert set(moves) == set(machine)
    for targets in moves.values():
        assert targets <= set(machine)


@pytest.mark.parametrize(("machine", "moves"), TABLES)
def test_a_move_the_table_does_not_list_is_refused(
    machine: type[enum.Enum], moves: Mapping[enum.Enum, frozenset[enum.Enum]],
) -> None:
    refused = [(a, b) for a in machine for b in machine if b not in moves[a]]
    assert refused  # every machine has an end it does not leave
    for current, new in refused:
        with pytest.raises(RuntimeError, match=f"no move from {current.name} to {new.name}"):
            current.to(new)  # type: ignore[attr-defined]
    for current in machine:
        for new in moves[current]:
            assert current.to(new) is new  # type: ignore[attr-defined]


def test_the_last_request_and_the_closed_connection_never_take_another() -> None:
    assert Phase.IDLE not in http1._PHASE_MOVES[Phase.LAST]
    assert http1._PHASE_MOVES[Phase.CLOSED] == frozenset()
    assert Peer.OPEN not in http1._PEER_MOVES[Peer.SENT_ALL]  # a client only ever loses


def _response(method: str = "GET", version: str = "1.1") -> Response:
    return Response(method, version, FIELDS)


def _whole(response: Response, body: bytes, **kwargs: bool) -> bytes:
    return response.frame(body, False, request_complete=kwargs.get("complete", True),
                          last=kwargs.get("last", False))


def test_a_whole_body_gets_its_content_length_in_one_write() -> None:
    response = _response()
    response.start(200, [(b"content-type", b"text/plain")])
    assert response.state is ResponseState.HEAD
    out = _whole(response, b"hello")
    assert out == (b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n"
                   b"server: test\r\n\r\nhello")
    assert response.state is ResponseState.DONE and not response.closes


def test_a_streamed_body_is_chunked_on_1_1_and_ends_the_connection_on_1_0() -> None:
    response = _response()
    response.start(200, [])
    first = response.frame(b"one", True, request_complete=True, last=False)
    assert b"transfer-encoding: chunked" in first and first.endswith(b"3\r\none\r\n")
    assert response.state is ResponseState.BODY
    assert _whole(response, b"") == b"0\r\n\r\n"
    old = _response(version="1.0")
    old.start(200, [])
    out = old.frame(b"one", True, request_complete=True, last=False)
    assert old.framing is Framing.CLOSE and old.closes
    assert b"connection: close" in out and out.endswith(b"\r\n\r\none")


def test_a_wrong_content_length_closes_the_connection_and_is_never_exceeded() -> None:
    short = _response()
    short.start(200, [(b"content-length", b"10")])
    assert _whole(short, b"short").endswith(b"\r\n\r\nshort") and short.closes
    long = _response()
    long.start(200, [(b"content-length", b"2")])
    assert _whole(long, b"toolong").endswith(b"\r\n\r\nto") and long.closes


def test_no_body_for_head_204_and_304() -> None:
    for method, status in (("HEAD", 200), ("GET", 204), ("GET", 304)):
        response = _response(method)
        response.start(status, [])
        out = _whole(response, b"ignored")
        assert out.endswith(b"\r\n\r\n") and b"ignored" not in out


def test_connection_close_from_the_app_an_unread_body_or_the_last_request() -> None:
    asked = _response()
    asked.start(200, [(b"Connection", b"close")])
    out = _whole(asked, b"")
    assert asked.closes and out.count(b"connection: close") == 1  # the app's is not echoed
    unread = _response()
    unread.start(200, [])
    assert b"connection: close" in _whole(unread, b"", complete=False) and unread.closes
    last = _response()
    last.start(200, [])
    assert b"connection: close" in _whole(last, b"", last=True) and not last.closes


@pytest.mark.parametrize(("status", "headers"), [
    (199, []), (1000, []),
    (200, [(b"x-bad", b"a\r\nb")]), (200, [(b"bad:name", b"v")]), (200, [(b"", b"v")]),
])
def test_what_the_app_cannot_send_is_refused(status: int,
                                             headers: list[tuple[bytes, bytes]]) -> None:
    with pytest.raises(ValueError):
        _response().start(status, headers)


def test_a_response_takes_no_body_after_its_end() -> None:
    response = _response()
    response.start(200, [])
    _whole(response, b"done")
    with pytest.raises(RuntimeError, match="no move from DONE to DONE"):
        _whole(response, b"more")
