"""The HTTP/1.1 codec: request encoding and strict response framing."""

import pytest
import trio

from ipamd.outbox import h1


def test_request_is_one_block_with_host_and_length():
    data = h1.encode_request("/hook?a=1", "hook.test:8443", [("X-A", "1")], b"{}")
    assert data == (b"POST /hook?a=1 HTTP/1.1\r\nHost: hook.test:8443\r\nContent-Length: 2\r\n"
                    b"X-A: 1\r\n\r\n{}")


@pytest.mark.parametrize(
    ("target", "headers"),
    [("/a b", []), ("/a\r\nX: y", []), ("nohost", []), ("/", [("Bad Name", "v")]),
     ("/", [("X", "a\r\nInjected: 1")]), ("/", [("X", "nul\x00")])],
)
def test_request_injection_is_refused(target, headers):
    with pytest.raises(h1.ProtocolError):
        h1.encode_request(target, "h", headers, b"")


class Chunks(trio.abc.ReceiveStream):
    """Hands out the given chunks one read at a time, then end of stream."""

    def __init__(self, chunks):
        self.chunks = list(chunks)

    async def receive_some(self, max_bytes=None):
        await trio.lowlevel.checkpoint()
        return self.chunks.pop(0) if self.chunks else b""

    async def aclose(self):
        pass


async def _read(chunks, cap=1000):
    return await h1.read_response(Chunks(chunks), cap)


async def test_content_length_split_across_reads():
    r = await _read([b"HTTP/1.1 200 OK\r\nContent-", b"Length: 5\r\nX-Y:  z \r\n\r\nhel", b"lo"])
    assert (r.status, r.reason, r.body, r.headers["x-y"]) == (200, "OK", b"hello", "z")
    assert r.reusable and not r.truncated


async def test_chunked_with_extensions_and_trailers():
    r = await _read([b"HTTP/1.1 201 \r\nTransfer-Encoding: chunked\r\n\r\n",
                     b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n"])
    assert r.status == 201 and r.reason == "" and r.body == b"abcde" and r.reusable


async def test_interim_responses_are_skipped():
    r = await _read([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"])
    assert r.status == 204 and r.body == b"" and r.reusable


async def test_close_delimited_body_and_connection_close():
    r = await _read([b"HTTP/1.1 500 Oops\r\n\r\nbroken", b" badly"])
    assert r.body == b"broken badly" and not r.reusable
    r = await _read([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"])
    assert not r.reusable
    r = await _read([b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"])
    assert not r.reusable


async def test_body_beyond_the_cap_is_not_read():
    r = await _read([b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100], cap=10)
    assert r.body == b"x" * 10 and r.truncated and not r.reusable
    r = await _read([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + b"y" * 32
                     + b"\r\n0\r\n\r\n"], cap=5)
    assert r.body == b"yyyyy" and r.truncated and not r.reusable


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        ([b"SMTP ready\r\n\r\n"], "not an HTTP/1.x status line"),
        ([b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n"], "malformed header line"),
        ([b"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n"], "malformed header line"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx"],
         "conflicting Content-Length"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"], "bad Content-Length"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"], "unsupported Transfer"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], "bad chunk size"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"], "closed in the middle"),
        ([b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000], "longer than"),
    ],
)
async def test_malformed_responses(chunks, message):
    with pytest.raises(h1.ProtocolError, match=message):
        await _read(chunks)


async def test_nothing_at_all_is_connection_ended():
    with pytest.raises(h1.ConnectionEnded):
        await _read([])


async def test_reason_phrase_is_cleaned():
    r = await _read([b"HTTP/1.1 500 bad\x00\x07 news\r\nContent-Length: 0\r\n\r\n"])
    assert r.reason == "bad news"
