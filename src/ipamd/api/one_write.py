"""HTTP/1.1 responses in one write: the head goes out with the first piece of the body.

hypercorn writes a response's head as soon as the app starts the response, and the body in
a second write. Between the two its task yields, so on a busy API process the body waits
behind other requests' work while the client holds half a response; each write is also a
segment, a wake-up of the client and a syscall. With 8 keep-alive clients on two cores
that cost about a quarter of the requests per second (issue 17). hypercorn has no option
for it, so the API serves HTTP/1.1 through this subclass of its protocol, which holds the
head's bytes until the body's first bytes (or the end of an empty body) and writes them
together. Everything else, including how the head is made, is hypercorn's own code.
"""

from __future__ import annotations

from typing import Any

import hypercorn.protocol
from hypercorn.events import Event, RawData
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.events import Response
from hypercorn.protocol.h11 import H11Protocol


class OneWriteH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._write = self.send  # the connection's own send (its socket)
        self.send = self._send  # type: ignore[method-assign]
        self._holding = False  # while hypercorn encodes a final response's head
        self._head = b""  # the head's bytes, not yet written

    async def stream_send(self, event: StreamEvent) -> None:
        if isinstance(event, Response) and event.status_code >= 200:
            self._holding = True
            try:
                await super().stream_send(event)
            finally:
                self._holding = False
            return
        await super().stream_send(event)

    async def _send(self, event: Event) -> None:
        if isinstance(event, RawData):
            if self._holding:
                self._head += event.data
                return
            if self._head:
                event = RawData(data=self._head + event.data, address=event.address)
                self._head = b""
        elif self._head:  # the connection closes or goes idle: the head first
            head, self._head = self._head, b""
            await self._write(RawData(data=head))
        await self._write(event)


def install() -> None:
    """Serve HTTP/1.1 with OneWriteH11Protocol (hypercorn picks its protocol class by this
    module-level name for every new connection)."""
    hypercorn.protocol.H11Protocol = OneWriteH11Protocol  # type: ignore[misc]
