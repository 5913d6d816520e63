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

The child side (``read_config``, ``lower_priority``, ``follow_parent``, ``Reporter``) is
used by ``runtime.run_child``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ipamd.config import Config
from ipamd.state import AppState

log = logging.getLogger("ipamd.child")

REPORT_SECONDS = 5.0
STOP_GRACE_SECONDS = 5.0
BUSY_SAMPLE_SECONDS = 0.02  # a storm must hold the child back within its first moments
_REPORT_MAX_BYTES = 1 << 20  # a report line longer than this is a broken child


class ChildExited(Exception):
    """The child process ended while the appliance runs (supervise restarts it)."""


def child_argv(role: str) -> list[str]:
    return [sys.executable, "-m", "ipamd", "child", role]


# ------------------------------------------------------------------ parent side


async def keep_running(
    state: AppState,
    role: str,
    *,
    task_status: trio.TaskStatus[None],
    start_when: Callable[[AppState], Awaitable[None]] | None = None,
    busy: Callable[[], bool] | None = None,
) -> None:
    """Run the child for ``role`` until cancelled; ``start_when`` (if given) returns once the
    child is needed, so an appliance that never has such work never has the process.
    ``busy`` (sampled every BUSY_SAMPLE_SECONDS) is told to the child as ``busy``/``idle``
    lines on its stdin whenever it changes."""
    task_status.started()
    if start_when is not None:
        await start_when(state)
    config_line = state.config.model_dump_json().encode() + b"\n"
    process = await trio.lowlevel.open_process(
        child_argv(role), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    log.info("started the %s process (pid %d)", role, process.pid)
    try:
        # The child starts held back (busy) until told otherwise.
        await process.stdin.send_all(config_line + (b"" if busy else b"idle\n"))
        async with trio.open_nursery() as nursery:
            if busy is not None:
                nursery.start_soon(_tell_busy, process.stdin, busy)
            await _read_reports(process.stdout, state, role)
            nursery.cancel_scope.cancel()
        code = await process.wait()
        raise ChildExited(f"the {role} process (pid {process.pid}) exited with {code}")
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process, role)


async def _tell_busy(stdin: trio.abc.SendStream, busy: Callable[[], bool]) -> None:
    busy()  # a first sample: the figures are per interval
    told: bool | None = None
    while True:
        await trio.sleep(BUSY_SAMPLE_SECONDS)
        now = busy()
        if now != told:
            await stdin.send_all(b"busy\n" if now else b"idle\n")
            told = now


async def _stop(process: trio.Process, role: str) -> None:
    # Closing its stdin asks the child to stop cleanly (hand back claims, close the pool).
    if process.stdin is not None:
        await process.stdin.aclose()
    if process.returncode is None:
        with trio.move_on_after(STOP_GRACE_SECONDS):
            await process.wait()
    if process.returncode is None:
        log.warning("the %s process (pid %d) did not stop within %gs: killed", role,
                    process.pid, STOP_GRACE_SECONDS)
        process.kill()
        await process.wait()
    if process.stdout is not None:
        await process.stdout.aclose()


async def _read_reports(stream: trio.abc.ReceiveStream, state: AppState, role: str) -> None:
    """Until the child closes its stdout: each line is a report, kept in state.children."""
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
            if isinstance(report, dict):
                state.children[role] = report


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
    stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    pending = b""
    try:
        while data := await stream.receive_some(4096):
            *lines, pending = (pending + data).split(b"\n")
            pending = pending[-64:]  # no line of the parent's is longer
            for line in lines:
                if line in (b"busy", b"idle"):
                    on_busy(line == b"busy")
    finally:
        await stream.aclose()


class Reporter:
    """Writes the child's counters to stdout as one JSON line every REPORT_SECONDS (and once
    more when it stops), for the parent's metrics."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.snapshot = snapshot
        self.out = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))

    async def write(self) -> None:
        line = json.dumps(self.snapshot(), separators=(",", ":"), default=str) + "\n"
        await self.out.send_all(line.encode())

    async def run(self) -> None:
        try:
            while True:
                await self.write()
                await trio.sleep(REPORT_SECONDS)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                # (the parent may no longer read)
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError,
                                         OSError):
                    await self.write()
                await self.out.aclose()
