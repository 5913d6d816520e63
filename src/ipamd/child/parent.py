"""The parent's side: ``keep_running``, a service of the runtime that runs one child
process for a role (roles.py) until cancelled."""

from __future__ import annotations

import contextlib
import logging
import subprocess

import trio

from ipamd.child.pipes import Outbox, read_lines
from ipamd.child.roles import ChildRole
from ipamd.messages import Answer, Call, Configure, Inbox, Report, decode_to_parent
from ipamd.state import AppState

log = logging.getLogger("ipamd.child")

REPORT_MAX_BYTES = 1 << 20  # a line from a child longer than this is a broken child


class ChildExited(Exception):
    """The child process ended while the appliance runs (supervise restarts it)."""


async def keep_running(state: AppState, spec: ChildRole, *,
                       task_status: trio.TaskStatus[None]) -> None:
    """Run the child for ``spec`` until cancelled; an unexpected exit is ChildExited (the
    runtime's supervise restarts it with backoff). On cancel its stdin is closed, which
    asks it to stop; after ``spec.stop_grace`` it is killed."""
    if not spec.ready_on_report:
        task_status.started()
    await spec.wait_until_needed(state)
    process = await trio.lowlevel.open_process(
        spec.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=spec.pass_fds())
    assert process.stdin is not None and process.stdout is not None
    log.info("started the %s process (pid %d)", spec.name, process.pid)
    try:
        await _converse(state, spec, process, task_status)
        code = await process.wait()
        raise ChildExited(f"the {spec.name} process (pid {process.pid}) exited with {code}")
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process, spec.name, spec.stop_grace)


async def _converse(state: AppState, spec: ChildRole, process: trio.Process,
                    task_status: trio.TaskStatus[None]) -> None:
    """Until the child closes its stdout: the configuration, then what the role tells it;
    its reports kept in state.children, its calls answered."""
    assert process.stdin is not None and process.stdout is not None
    out = Outbox(process.stdin)
    await out.send(Configure(config=state.config.model_dump_json()))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(spec.converse, out)
        inbox = Inbox(f"{spec.name} process", decode_to_parent)
        inbox.on(Report, _Reports(state, spec, task_status).take)
        inbox.on(Call, _Answers(nursery, out, spec).start)
        await read_lines(process.stdout, inbox, REPORT_MAX_BYTES)
        nursery.cancel_scope.cancel()


class _Reports:
    """Keeps a child's latest report (for the node's metrics); the first may be its
    readiness (ChildRole.ready_on_report)."""

    def __init__(self, state: AppState, spec: ChildRole,
                 task_status: trio.TaskStatus[None]) -> None:
        self.state, self.name = state, spec.name
        self._ready = task_status.started if spec.ready_on_report else None

    def take(self, report: Report) -> None:
        self.state.children[self.name] = report
        if self._ready is not None:
            ready, self._ready = self._ready, None
            ready()


class _Answers:
    """Answers a child's calls, each in a task of its own (a slow one holds up no other)."""

    def __init__(self, nursery: trio.Nursery, out: Outbox, spec: ChildRole) -> None:
        self.nursery, self.out, self.spec = nursery, out, spec

    def start(self, call: Call) -> None:
        self.nursery.start_soon(self._answer, call)

    async def _answer(self, call: Call) -> None:
        try:
            reply = Answer(id=call.id, result=await self.spec.answer(call.request))
        except Exception as error:  # the child's caller gets the error; the parent goes on
            log.exception("call %s of the %s process failed", call.request.tag, self.spec.name)
            reply = Answer(id=call.id, error=f"{error.__class__.__name__}: {error}")
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.out.send(reply)


async def _stop(process: trio.Process, name: str, grace: float) -> None:
    # Closing its stdin asks the child to stop cleanly (hand back claims, close the pool).
    if process.stdin is not None:
        await process.stdin.aclose()
    if process.returncode is None:
        with trio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        log.warning("the %s process (pid %d) did not stop within %gs: killed", name,
                    process.pid, grace)
        process.kill()
        await process.wait()
    if process.stdout is not None:
        await process.stdout.aclose()
