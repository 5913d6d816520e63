"""A role of the appliance run in a child process of the runtime's nursery.

Why a process: work that may be heavy and is never urgent (today the DNS updates of a lease
storm) must not take the CPU from the DHCP server and the API. In a child at a lower CPU
priority (nice) the kernel gives the DHCP process the cores first, and the child everything
they leave; the child's work catches up once a storm is over. Nothing is lost meanwhile:
the child's work waits as rows in Postgres.

The parent side (``keep_running``) is a service of the runtime: it starts
``python -m ipamd child ROLE``, hands it the configuration on its stdin (never on the command
line or in the environment: it may hold a DSN password), keeps that pipe open, and reads
the child's reports (its counters, a JSON line every few seconds) from its stdout. The child
stops when the pipe closes, so it never outlives its parent, even one killed with SIGKILL.
An unexpected exit is an exception here: the runtime's supervise restarts it with backoff.

While it runs, the parent tells the child on the same pipe whether the appliance is busy
with something more urgent (``busy``/``idle`` lines: the DHCP server at its ceiling), and
the child holds its work back meanwhile (outbox/gate.py).

A role that needs what only the parent has (the API workers: the node's rate limits, its
DHCP server, its metrics) asks it on the same pipes: a ``{"call", "id", "args"}`` line on
stdout, answered by a ``{"answer": id, "result"|"error"}`` line on stdin; the parent may also
push a ``{"push": value}`` line (its DHCP counters) every PUSH_SECONDS.

The child side (``read_config``, ``lower_priority``, ``follow_parent``, ``ParentLink``,
``Reporter``) is used by ``runtime.run_child``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from ipamd.config import Config
from ipamd.state import AppState

log = logging.getLogger("ipamd.child")

REPORT_SECONDS = 5.0
PUSH_SECONDS = 1.0
STOP_GRACE_SECONDS = 5.0
BUSY_SAMPLE_SECONDS = 0.02  # a storm must hold the child back within its first moments
_REPORT_MAX_BYTES = 1 << 20  # a report line longer than this is a broken child


class ChildExited(Exception):
    """The child process ended while the appliance runs (supervise restarts it)."""


class ParentRefused(Exception):
    """The parent answered a child's call with an error (or is gone)."""


# The parent's side of a child's calls: (the child's name, call, args) → a JSON-able result.
Calls = Callable[[str, str, Any], Awaitable[Any]]


def child_argv(role: str, args: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "ipamd", "child", role, *args]


def _json_line(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), default=str).encode() + b"\n"


class _Pipe:
    """One writer at a time on a pipe several tasks write lines to."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream
        self._lock = trio.Lock()

    async def send(self, data: bytes) -> None:
        async with self._lock:
            await self.stream.send_all(data)


# ------------------------------------------------------------------ parent side


async def keep_running(
    state: AppState,
    role: str,
    *,
    task_status: trio.TaskStatus[None],
    start_when: Callable[[AppState], Awaitable[None]] | None = None,
    busy: Callable[[], bool] | None = None,
    name: str | None = None,
    args: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
    calls: Calls | None = None,
    pushes: Callable[[], Any] | None = None,
    ready_on_report: bool = False,
    stop_grace: float = STOP_GRACE_SECONDS,
) -> None:
    """Run the child for ``role`` until cancelled; ``start_when`` (if given) returns once the
    child is needed, so an appliance that never has such work never has the process.
    ``busy`` (sampled every BUSY_SAMPLE_SECONDS) is told to the child as ``busy``/``idle``
    lines on its stdin whenever it changes.

    ``name`` (default: the role) tells several children of one role apart (reports, logs);
    ``args`` and ``pass_fds`` go to the child's command line and file descriptors (an API
    worker's listening sockets). ``calls`` answers the child's calls, ``pushes()`` is sent
    to it at once and every PUSH_SECONDS. With ``ready_on_report`` the service is started
    only at the child's first report (it serves by then); ``stop_grace`` is how long a
    stopping child may take (an API worker drains its requests) before it is killed."""
    name = name or role
    if not ready_on_report:
        task_status.started()
    if start_when is not None:
        await start_when(state)
    config_line = state.config.model_dump_json().encode() + b"\n"
    process = await trio.lowlevel.open_process(
        child_argv(role, args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        pass_fds=tuple(pass_fds))
    assert process.stdin is not None and process.stdout is not None
    log.info("started the %s process (pid %d)", name, process.pid)
    stdin = _Pipe(process.stdin)
    try:
        first = config_line + (_json_line({"push": pushes()}) if pushes else b"")
        # The child starts held back (busy) until told otherwise.
        await stdin.send(first + (b"" if busy else b"idle\n"))
        async with trio.open_nursery() as nursery:
            if busy is not None:
                nursery.start_soon(_tell_busy, stdin, busy)
            if pushes is not None:
                nursery.start_soon(_push, stdin, pushes)
            ready = task_status.started if ready_on_report else None
            await _read_reports(process.stdout, state, name, _Answers(nursery, stdin, name, calls),
                                ready)
            nursery.cancel_scope.cancel()
        code = await process.wait()
        raise ChildExited(f"the {name} process (pid {process.pid}) exited with {code}")
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process, name, stop_grace)


async def _tell_busy(stdin: _Pipe, busy: Callable[[], bool]) -> None:
    busy()  # a first sample: the figures are per interval
    told: bool | None = None
    while True:
        await trio.sleep(BUSY_SAMPLE_SECONDS)
        now = busy()
        if now != told:
            await stdin.send(b"busy\n" if now else b"idle\n")
            told = now


async def _push(stdin: _Pipe, pushes: Callable[[], Any]) -> None:
    while True:
        await trio.sleep(PUSH_SECONDS)
        await stdin.send(_json_line({"push": pushes()}))


class _Answers:
    """Answers a child's calls, each in a task of its own (a slow one holds up no other)."""

    def __init__(self, nursery: trio.Nursery, stdin: _Pipe, name: str,
                 calls: Calls | None) -> None:
        self.nursery, self.stdin, self.name, self.calls = nursery, stdin, name, calls

    def start(self, message: dict[str, Any]) -> None:
        self.nursery.start_soon(self._answer, message)

    async def _answer(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"answer": message.get("id")}
        try:
            if self.calls is None:
                raise ParentRefused(f"the {self.name} process may not call")
            reply["result"] = await self.calls(self.name, str(message["call"]),
                                               message.get("args"))
        except Exception as error:  # the child's caller gets the error; the parent goes on
            log.exception("call %r of the %s process failed", message.get("call"), self.name)
            reply["error"] = f"{error.__class__.__name__}: {error}"
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.stdin.send(_json_line(reply))


async def _stop(process: trio.Process, role: str, grace: float = STOP_GRACE_SECONDS) -> None:
    # Closing its stdin asks the child to stop cleanly (hand back claims, close the pool).
    if process.stdin is not None:
        await process.stdin.aclose()
    if process.returncode is None:
        with trio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        log.warning("the %s process (pid %d) did not stop within %gs: killed", role,
                    process.pid, grace)
        process.kill()
        await process.wait()
    if process.stdout is not None:
        await process.stdout.aclose()


async def _read_reports(stream: trio.abc.ReceiveStream, state: AppState, role: str,
                        answers: _Answers, ready: Callable[[], None] | None) -> None:
    """Until the child closes its stdout: each line is a report, kept in state.children
    (the first calls ``ready``), or a call, answered."""
    pending = b""
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        pending += data
        *lines, pending = pending.split(b"\n")
        if len(pending) > _REPORT_MAX_BYTES:
            log.warning("the %s process wrote an over-long line; ignored", role)
            pending = b""
        for line in lines:
            try:
                report = json.loads(line)
            except ValueError:
                log.debug("the %s process wrote a line that is no report: %r", role, line[:200])
                continue
            if isinstance(report, dict) and "call" in report:
                answers.start(report)
            elif isinstance(report, dict):
                state.children[role] = report
                if ready is not None:
                    ready, first = None, ready
                    first()


# ------------------------------------------------------------------ child side


def read_config() -> Config:
    """The configuration the parent wrote on stdin (one JSON line)."""
    # Unbuffered, a byte at a time (a few kB, once): what follows the line (busy/idle) is
    # read later by follow_parent, and a buffered reader would swallow it.
    fd, line = sys.stdin.fileno(), bytearray()
    while not line.endswith(b"\n") and (byte := os.read(fd, 1)):
        line += byte
    if not line.strip():
        raise SystemExit("ipamd child: no configuration on stdin (it is started by ipamd run)")
    return Config.model_validate_json(bytes(line))


def lower_priority(nice: int) -> None:
    """Leave the CPU to the parent's DHCP and API first (Linux: nice applies per process)."""
    try:
        os.nice(nice)
    except OSError as error:  # e.g. a seccomp profile refusing it: run at normal priority
        log.warning("could not lower this process's CPU priority: %s", error)


async def follow_parent(on_busy: Callable[[bool], None]) -> None:
    """Reads the parent's lines on stdin (``busy``/``idle``: on_busy(True/False)); returns at
    the end of stdin: the parent closed it, or died."""
    await ParentLink().follow(on_busy)


class ParentLink:
    """The child's end of the pipes: lines to the parent on stdout (reports, calls), the
    parent's lines from stdin (busy/idle, answers, pushes)."""

    _LINE_MAX = 1 << 22  # a push or an answer (metrics text) is far smaller

    def __init__(self) -> None:
        self._out = _Pipe(trio.lowlevel.FdStream(os.dup(sys.stdout.fileno())))
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._next_id = 0
        self._gone = False
        self._told_send, self._told = trio.open_memory_channel[tuple[str, Any]](10_000)

    async def send(self, value: object) -> None:
        await self._out.send(_json_line(value))

    async def aclose(self) -> None:
        await self._out.stream.aclose()

    async def call(self, name: str, args: Any = None) -> Any:
        """Ask the parent; its result, or ParentRefused."""
        if self._gone:
            raise ParentRefused("the parent is gone")
        self._next_id += 1
        ident = self._next_id
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[ident] = send
        try:
            await self.send({"call": name, "id": ident, "args": args})
            try:
                reply = await receive.receive()
            except trio.EndOfChannel:
                raise ParentRefused("the parent is gone") from None
        finally:
            self._waiting.pop(ident, None)
        if "error" in reply:
            raise ParentRefused(str(reply["error"]))
        return reply.get("result")

    def tell(self, name: str, args: Any = None) -> None:
        """A call whose answer nobody waits for (sent by ``follow``'s sender task)."""
        try:
            self._told_send.send_nowait((name, args))
        except trio.WouldBlock:
            log.warning("more than 10,000 notes to the parent queued: %s dropped", name)

    async def _send_told(self) -> None:
        async for name, args in self._told:
            with contextlib.suppress(ParentRefused):
                await self.call(name, args)

    async def follow(self, on_busy: Callable[[bool], None] | None = None,
                     on_push: Callable[[Any], None] | None = None) -> None:
        """Reads the parent's lines until the end of stdin (the parent closed it, or died)."""
        stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        pending = b""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._send_told)
                while data := await stream.receive_some(65536):
                    *lines, pending = (pending + data).split(b"\n")
                    if len(pending) > self._LINE_MAX:
                        pending = b""
                    for line in lines:
                        self._take(line, on_busy, on_push)
                nursery.cancel_scope.cancel()
        finally:
            self._gone = True
            for waiting in list(self._waiting.values()):
                waiting.close()
            await stream.aclose()

    def _take(self, line: bytes, on_busy: Callable[[bool], None] | None,
              on_push: Callable[[Any], None] | None) -> None:
        if line in (b"busy", b"idle"):
            if on_busy is not None:
                on_busy(line == b"busy")
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if "push" in message:
            if on_push is not None:
                on_push(message["push"])
        elif (waiting := self._waiting.get(message.get("answer"))) is not None:  # type: ignore[arg-type]
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                waiting.send_nowait(message)


class Reporter:
    """Writes the child's counters to stdout as one JSON line every ``every`` seconds (and
    once more when it stops), for the parent's metrics. With a ``link`` the lines share its
    stdout with the child's calls."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]], link: ParentLink | None = None,
                 every: float = REPORT_SECONDS) -> None:
        self.snapshot = snapshot
        self.every = every
        self.link = link
        self.out = (None if link is not None
                    else trio.lowlevel.FdStream(os.dup(sys.stdout.fileno())))

    async def write(self) -> None:
        if self.link is not None:
            await self.link.send(self.snapshot())
            return
        assert self.out is not None
        line = json.dumps(self.snapshot(), separators=(",", ":"), default=str) + "\n"
        await self.out.send_all(line.encode())

    async def run(self) -> None:
        try:
            while True:
                await self.write()
                await trio.sleep(self.every)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                # (the parent may no longer read)
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError,
                                         OSError):
                    await self.write()
                if self.out is not None:
                    await self.out.aclose()
