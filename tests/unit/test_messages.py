"""The messages between a node's processes (ipamd/messages.py): every record goes through
its line and back unchanged; a line that is not JSON, has an unknown tag or wrong fields is
refused as a BadMessage; an Inbox dispatches by type, and logs and counts what it cannot
take without raising. Last, the pipes' line reader (child/pipes.py) on a real stream."""

from __future__ import annotations

import logging
import uuid

import pytest
import trio
import trio.testing

from ipamd import messages
from ipamd.child.pipes import Outbox, read_lines
from ipamd.messages import (
    Answer,
    BadMessage,
    Busy,
    Call,
    Configure,
    DhcpCounters,
    DhcpFigures,
    DhcpForget,
    DhcpReloadPlan,
    EndedLease,
    HistogramData,
    Inbox,
    LatencyData,
    Message,
    Push,
    RateLimit,
    RenderMetrics,
    Report,
)

LATENCY = LatencyData(key=("GET", "/api/v1/prefixes", "2xx"), counts=[1, 0, 2], total=0.5,
                      count=3)
TO_CHILD: list[Message] = [
    Configure(config='{"api": {"workers": 2}}'),
    Busy(busy=True),
    Busy(busy=False),
    Push(started_at=1765000000.25),
    Push(started_at=1.0, dhcp=DhcpFigures(
        addresses=[("127.0.0.1", 6767)], saturated_seconds=0.5, receiving_seconds=0.0,
        counters={"received": {"discover": 4}, "drops": {}})),
    Answer(id=7, result=None),
    Answer(id=8, result=1.5),
    Answer(id=9, result={"received": {"discover": 4}}),
    Answer(id=10, error="ValueError: no"),
]
TO_PARENT: list[Message] = [
    Report(pid=1234),
    Report(pid=1234, outbox={"delivered": 3}, outbox_latency={
        "dns": HistogramData(counts=[0, 1], total=0.1, count=1)}),
    Report(pid=1234, api_latency=[LATENCY]),
    Call(id=1, request=RateLimit(client="10.77.0.9", limit=100)),
    Call(id=2, request=DhcpForget(ended=[
        EndedLease(lease_id=uuid.uuid4(), subnet_id=uuid.uuid4(), event="released"),
        EndedLease(lease_id=uuid.uuid4(), subnet_id=uuid.uuid4())])),
    Call(id=3, request=DhcpReloadPlan()),
    Call(id=4, request=DhcpCounters()),
    Call(id=5, request=RenderMetrics(api_latency=[LATENCY])),
]


@pytest.mark.parametrize("message", TO_CHILD, ids=lambda m: m.tag)
def test_a_message_to_a_child_round_trips(message: Message) -> None:
    line = messages.encode(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert messages.decode_to_child(line) == message


@pytest.mark.parametrize("message", TO_PARENT, ids=lambda m: m.tag)
def test_a_message_to_the_parent_round_trips(message: Message) -> None:
    assert messages.decode_to_parent(messages.encode(message)) == message


@pytest.mark.parametrize(("line", "reason"), [
    (b"busy", "malformed"),  # the old bare lines are no message
    (b'{"tag": "busy", "busy": tru', "malformed"),
    (b"[1, 2]", "malformed"),
    (b"", "malformed"),
    (b'{"tag": "reboot"}', "unknown tag"),
    (b'{"busy": true}', "no tag"),
    (b'{"tag": "busy", "busy": "maybe"}', "invalid"),
    (b'{"tag": "busy", "busy": true, "why": "storm"}', "invalid"),
    (b'{"tag": "answer"}', "invalid"),
])
def test_a_line_that_is_no_message_is_refused(line: bytes, reason: str) -> None:
    with pytest.raises(BadMessage) as refused:
        messages.decode_to_child(line)
    assert refused.value.reason == reason


def test_each_side_refuses_the_other_sides_messages() -> None:
    with pytest.raises(BadMessage, match="unknown tag"):
        messages.decode_to_parent(messages.encode(Busy(busy=True)))
    with pytest.raises(BadMessage, match="unknown tag"):
        messages.decode_to_child(messages.encode(Report(pid=1)))
    with pytest.raises(BadMessage, match="request"):
        messages.decode_to_parent(b'{"tag": "call", "id": 1, "request": {"tag": "shutdown"}}')


def test_the_inbox_dispatches_by_type_and_counts_what_it_cannot_take(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ipamd.messages")
    told: list[bool] = []
    inbox = Inbox("parent", messages.decode_to_child).on(Busy, lambda m: told.append(m.busy))
    inbox.take(messages.encode(Busy(busy=True)))
    inbox.take(b"idle")  # malformed: logged and counted, not raised
    inbox.take(messages.encode(Push(started_at=1.0)))  # a message no handler here takes
    inbox.take(b'{"tag": "busy", "busy": 3}')
    inbox.take(messages.encode(Busy(busy=False)))
    assert told == [True, False]
    assert (inbox.taken, inbox.refused) == (2, 3)
    # logged at the 1st and 2nd refusal, not the 3rd: a broken peer cannot flood the log
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert "no message (malformed" in warnings[0] and "Push message" in warnings[1]


async def test_lines_are_read_across_chunks_and_an_overlong_one_is_dropped() -> None:
    send, receive = trio.testing.memory_stream_pair()
    out = Outbox(send)
    told: list[bool] = []
    inbox = Inbox("parent", messages.decode_to_child).on(Busy, lambda m: told.append(m.busy))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_lines, receive, inbox, 200)
        await out.send(Busy(busy=True), Busy(busy=False))
        line = messages.encode(Busy(busy=True))
        await send.send_all(line[:5])  # a line split across two writes
        await send.send_all(line[5:])
        await send.send_all(b"x" * 500)  # longer than the limit, never ended
        await send.send_all(b"\n" + messages.encode(Busy(busy=False)))
        await out.aclose()  # the end of the pipe ends the reader
    assert told == [True, False, True, False]
    # the overlong part, then its tail (the rest of that line) — both refused
    assert inbox.refused == 2
