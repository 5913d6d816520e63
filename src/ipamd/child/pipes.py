"""The two pipes between a parent and a child: messages out, one line each (one writer at a
time), and lines in, each handed to an ``Inbox`` (messages.py)."""

from __future__ import annotations

import trio

from ipamd.messages import Inbox, Message, encode


class Outbox:
    """Messages to the other side, one line each; one writer at a time on the pipe."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream
        self._lock = trio.Lock()

    async def send(self, *messages: Message) -> None:
        data = b"".join(encode(message) for message in messages)
        async with self._lock:
            await self.stream.send_all(data)

    async def aclose(self) -> None:
        await self.stream.aclose()


async def read_lines(stream: trio.abc.ReceiveStream, inbox: Inbox, limit: int) -> None:
    """Hand each line to ``inbox`` until the other side closes the pipe. A line longer than
    ``limit`` is dropped (the inbox counts it): a broken peer cannot fill our memory."""
    pending = b""
    while data := await stream.receive_some(65536):
        *lines, pending = (pending + data).split(b"\n")
        if len(pending) > limit:
            inbox.refuse_overlong(limit)
            pending = b""
        for line in lines:
            inbox.take(line)
