"""The child's side: its configuration (``read_config``), its CPU priority, and
``ParentLink`` — messages to the parent on stdout (reports, calls), the parent's from stdin
(answers, and what the role takes: busy, pushes) — and ``Reporter``."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable

import trio
from pydantic import JsonValue

from ipamd.child.pipes import Outbox, read_lines
from ipamd.child.roles import ParentRefused
from ipamd.config import Config
from ipamd.messages import (
    Answer,
    BadMessage,
    Call,
    Configure,
    Inbox,
    Message,
    Report,
    Request,
    decode_to_child,
)

log = logging.getLogger("ipamd.child")

REPORT_SECONDS = 5.0
LINE_MAX_BYTES = 1 << 22  # a push or an answer (metrics text) is far smaller
TOLD_MAX = 10_000  # requests to the parent nobody waits for, queued at most


def read_config() -> Config:
    """The configuration the parent sent first on stdin (a ``Configure`` line)."""
    # Unbuffered, a byte at a time (a few kB, once): what follows the line is read later by
    # ParentLink.follow, and a buffered reader would swallow it.
    fd, line = sys.stdin.fileno(), bytearray()
    while not line.endswith(b"\n") and (byte := os.read(fd, 1)):
        line += byte
    if not line.strip():
        raise SystemExit("ipamd child: no configuration on stdin (it is started by ipamd run)")
    try:
        message = decode_to_child(bytes(line))
    except BadMessage as error:
        raise SystemExit(f"ipamd child: the first line on stdin is no message: {error}") from None
    if not isinstance(message, Configure):
        raise SystemExit(f"ipamd child: the first line on stdin is a {message.tag}, "
                         "not the configuration")
    return Config.model_validate_json(message.config)


def lower_priority(nice: int) -> None:
    """Leave the CPU to the parent's DHCP and API first (Linux: nice applies per process)."""
    try:
        os.nice(nice)
    except OSError as error:  # e.g. a seccomp profile refusing it: run at normal priority
        log.warning("could not lower this process's CPU priority: %s", error)


class ParentLink:
    """The child's end of the pipes (state.MainProcess for an API worker)."""

    def __init__(self) -> None:
        self._out = Outbox(trio.lowlevel.FdStream(os.dup(sys.stdout.fileno())))
        self._waiting: dict[int, trio.MemorySendChannel[Answer]] = {}
        self._next_id = 0
        self._gone = False
        self._told_send, self._told = trio.open_memory_channel[Request](TOLD_MAX)

    def inbox(self) -> Inbox:
        """This side's registry: answers to our calls are taken here; the role adds what
        else it takes (``Busy``, ``Push``) with ``on``."""
        return Inbox("parent", decode_to_child).on(Answer, self._answered)

    async def send(self, message: Message) -> None:
        await self._out.send(message)

    async def aclose(self) -> None:
        await self._out.aclose()

    async def call(self, request: Request) -> JsonValue:
        """Ask the parent; its result, or ParentRefused."""
        if self._gone:
            raise ParentRefused("the parent is gone")
        self._next_id += 1
        ident = self._next_id
        send, receive = trio.open_memory_channel[Answer](1)
        self._waiting[ident] = send
        try:
            await self.send(Call(id=ident, request=request))
            try:
                answer = await receive.receive()
            except trio.EndOfChannel:
                raise ParentRefused("the parent is gone") from None
        finally:
            self._waiting.pop(ident, None)
        if answer.error is not None:
            raise ParentRefused(answer.error)
        return answer.result

    def tell(self, request: Request) -> None:
        """A call whose answer nobody waits for (sent by ``follow``'s sender task)."""
        try:
            self._told_send.send_nowait(request)
        except trio.WouldBlock:
            log.warning("more than %d notes to the parent queued: a %s dropped", TOLD_MAX,
                        request.tag)

    async def _send_told(self) -> None:
        async for request in self._told:
            with contextlib.suppress(ParentRefused):
                await self.call(request)

    def _answered(self, answer: Answer) -> None:
        waiting = self._waiting.get(answer.id)
        if waiting is not None:
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                waiting.send_nowait(answer)

    async def follow(self, inbox: Inbox) -> None:
        """Hands the parent's lines to ``inbox`` until the end of stdin (the parent closed
        it, or died)."""
        stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._send_told)
                await read_lines(stream, inbox, LINE_MAX_BYTES)
                nursery.cancel_scope.cancel()
        finally:
            self._gone = True
            for waiting in list(self._waiting.values()):
                waiting.close()
            await stream.aclose()


class Reporter:
    """Sends the child's counters to the parent (a ``Report``) every ``every`` seconds, and
    once more when it stops, for the parent's metrics."""

    def __init__(self, snapshot: Callable[[], Report], link: ParentLink,
                 every: float = REPORT_SECONDS) -> None:
        self.snapshot, self.link, self.every = snapshot, link, every

    async def run(self) -> None:
        try:
            while True:
                await self.link.send(self.snapshot())
                await trio.sleep(self.every)
        finally:
            # (the parent may no longer read)
            gone = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)
            with trio.CancelScope(shield=True), trio.move_on_after(1), contextlib.suppress(*gone):
                await self.link.send(self.snapshot())
