"""One configuration object per child role: what the parent needs to run it (its command,
when it is needed, what it is told, what it may ask)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

import trio
from pydantic import JsonValue

from ipamd.child.pipes import Outbox
from ipamd.messages import Busy, Push, Request
from ipamd.state import AppState

STOP_GRACE_SECONDS = 5.0
PUSH_SECONDS = 1.0
BUSY_SAMPLE_SECONDS = 0.02  # a storm must hold the child back within its first moments

DNS_DELIVERY = "dns-delivery"
API_WORKER = "api-worker"


class ParentRefused(Exception):
    """The parent answered a child's call with an error (or is gone)."""


def child_argv(role: str, args: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "ipamd", "child", role, *args]


@dataclass(frozen=True, kw_only=True)
class ChildRole:
    """A role run in a child process (``ipamd child ROLE``). The defaults: started at once,
    told nothing after its configuration, asks nothing, ready as soon as it is started."""

    role: ClassVar[str]
    # Ready only at the child's first report (it serves by then), not when started.
    ready_on_report: ClassVar[bool] = False
    name: str
    # How long a stopping child may take (an API worker drains its requests) before a kill.
    stop_grace: float = STOP_GRACE_SECONDS

    def command(self) -> list[str]:
        return child_argv(self.role)

    def pass_fds(self) -> tuple[int, ...]:
        return ()

    async def wait_until_needed(self, state: AppState) -> None:
        """Returns once the child is needed (an appliance without such work never has it)."""

    async def converse(self, out: Outbox) -> None:
        """What the parent tells the child while it runs (the first line already went)."""
        await trio.sleep_forever()

    async def answer(self, request: Request) -> JsonValue:
        raise ParentRefused(f"the {self.name} process may not call")


@dataclass(frozen=True, kw_only=True)
class DnsDeliveryRole(ChildRole):
    """DNS updates delivered at a lower CPU priority, held back while ``busy`` (the DHCP
    server at its ceiling); started at the first queued update (``start_when``)."""

    role: ClassVar[str] = DNS_DELIVERY
    name: str = DNS_DELIVERY
    busy: Callable[[], bool]
    start_when: Callable[[AppState], Awaitable[None]]

    async def wait_until_needed(self, state: AppState) -> None:
        await self.start_when(state)

    async def converse(self, out: Outbox) -> None:
        """``Busy`` whenever it changes (the child starts held back until the first)."""
        self.busy()  # a first sample: the figures are per interval
        told: bool | None = None
        while True:
            await trio.sleep(BUSY_SAMPLE_SECONDS)
            now = self.busy()
            if now != told:
                await out.send(Busy(busy=now))
                told = now


@dataclass(frozen=True, kw_only=True)
class ApiWorkerRole(ChildRole):
    """An API worker: it accepts from the listening sockets it inherits (``https_fds``,
    ``http_fds``), takes its share of the connections by ``share_fd``'s counts (slot
    ``slot``, api/balance.py), asks the main process what only it has (``calls``) and is
    sent ``pushes()`` at once and every PUSH_SECONDS."""

    role: ClassVar[str] = API_WORKER
    ready_on_report: ClassVar[bool] = True
    slot: int
    https_fds: tuple[int, ...]
    http_fds: tuple[int, ...]
    share_fd: int
    calls: Callable[[str, Request], Awaitable[JsonValue]]
    pushes: Callable[[], Push]

    def command(self) -> list[str]:
        return child_argv(self.role, (
            "--https-fds", ",".join(map(str, self.https_fds)),
            "--http-fds", ",".join(map(str, self.http_fds)),
            "--share-fd", str(self.share_fd), "--slot", str(self.slot)))

    def pass_fds(self) -> tuple[int, ...]:
        return (*self.https_fds, *self.http_fds, self.share_fd)

    async def converse(self, out: Outbox) -> None:
        while True:
            await out.send(self.pushes())
            await trio.sleep(PUSH_SECONDS)

    async def answer(self, request: Request) -> JsonValue:
        return await self.calls(self.name, request)
