"""Each HTTP/1.1 response leaves in one write (api/one_write.py): head and body together,
whatever the status, on a keep-alive connection; the responses themselves are unchanged.

The writes are counted where hypercorn hands bytes to the socket (TCPServer.protocol_send,
wrapped to record and then do its real work); the client is a plain socket."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypercorn.events import RawData
from hypercorn.trio.tcp_server import TCPServer

from ipamd import runtime


async def _read_response(stream: trio.SocketStream, buffer: bytearray) -> tuple[bytes, bytes]:
    """One response (Content-Length framed) from the stream: (head, body)."""
    with trio.fail_after(10):
        while b"\r\n\r\n" not in buffer:
            buffer += await stream.receive_some(65536)
        head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            rest += await stream.receive_some(65536)
        del buffer[: len(head) + 4 + length]
        return head, rest[:length]


async def test_head_and_body_leave_in_one_write(
    appliance: runtime.Running, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[bytes] = []
    real_send = TCPServer.protocol_send

    async def recording_send(self: TCPServer, event: Any) -> None:
        if isinstance(event, RawData) and event.data:
            writes.append(event.data)
        await real_send(self, event)

    monkeypatch.setattr(TCPServer, "protocol_send", recording_send)
    host, port = appliance.url("http").removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    auth = f"Authorization: Bearer {tokens['viewer']}\r\n"
    requests = [
        ("GET /api/v1/prefixes?limit=5", auth, 200, b'"items"'),
        ("GET /api/v1/no-such-thing", auth, 404, b'"not_found"'),
        ("GET /api/v1/prefixes", "", 401, b'"unauthorized"'),
        ("GET /api/v1/whoami", auth, 200, b'"viewer"'),
    ]
    buffer = bytearray()
    async with stream:
        for line, header, status, marker in requests:
            writes.clear()
            await stream.send_all(f"{line} HTTP/1.1\r\nHost: t\r\n{header}\r\n".encode())
            head, body = await _read_response(stream, buffer)
            assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
            assert marker in body
            assert writes == [head + b"\r\n\r\n" + body], f"{line}: {len(writes)} writes"
