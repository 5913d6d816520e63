"""The messages between a node's processes: the runtime (parent) and its children (the API
workers, the DNS delivery child). docs/DEVELOPING.md, "The process model", shows who sends
what and how to add a message.

Each message is a typed record with one tag field, sent as one JSON line on a pipe
(parent → child on the child's stdin, child → parent on its stdout). ``encode`` writes a
line; ``decode_to_child`` / ``decode_to_parent`` read one, and refuse (``BadMessage``) a
line that is not JSON, has an unknown tag or fields of the wrong shape. ``Inbox`` is one
side's registry of handlers: the one place a decoded message is dispatched, by its type.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

log = logging.getLogger("ipamd.messages")


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HistogramData(Message):
    """A latency histogram as another process holds it (core.histogram.Histogram)."""

    counts: list[int]
    total: float
    count: int


class LatencyData(HistogramData):
    """One API latency series: (method, route template, status class) and its histogram."""

    key: tuple[str, str, str]


class DhcpFigures(Message):
    """The main process's DHCP server as an API worker sees it (api/workers.MainDhcp)."""

    addresses: list[tuple[str, int]]
    saturated_seconds: float
    receiving_seconds: float
    counters: dict[str, JsonValue]


# ------------------------------------------------------------------ parent → child


class Configure(Message):
    """The child's configuration: the first line, never on the command line or in the
    environment (it may hold a DSN password)."""

    tag: Literal["configure"] = "configure"
    config: str  # as Config.model_dump_json writes it; the child's Config validates it


class Busy(Message):
    """Whether the appliance is busy with something more urgent (the DHCP server at its
    ceiling): the DNS delivery child holds its work back meanwhile (outbox/gate.py)."""

    tag: Literal["busy"] = "busy"
    busy: bool


class Push(Message):
    """What every API worker is sent at its start and each second (api/workers.push)."""

    tag: Literal["push"] = "push"
    started_at: float
    dhcp: DhcpFigures | None = None


class Answer(Message):
    """The parent's answer to a child's ``Call`` of the same ``id``: a result or an error."""

    tag: Literal["answer"] = "answer"
    id: int
    result: JsonValue = None
    error: str | None = None


ToChild = Annotated[Configure | Busy | Push | Answer, Field(discriminator="tag")]


# ------------------------------------------------------------------ child → parent


class Report(Message):
    """A child's counters, for the node's /metrics: an API worker's request latency, the DNS
    delivery child's outbox outcomes and latency by kind. An API worker's first report
    tells the parent it serves."""

    tag: Literal["report"] = "report"
    pid: int
    outbox: dict[str, int] = {}
    outbox_latency: dict[str, HistogramData] = {}
    api_latency: list[LatencyData] = []


# What an API worker may ask the main process (a Call's request); api/workers.answer
# registers one handler for each.


class RateLimit(Message):
    """Record one request of ``client`` in the node's window; the answer: None when
    allowed, else the seconds until one is."""

    tag: Literal["rate_limit"] = "rate_limit"
    client: str
    limit: int


class EndedLease(Message):
    lease_id: uuid.UUID
    subnet_id: uuid.UUID
    event: str | None = None


class DhcpForget(Message):
    """Leases the worker ended outside the DHCP path (a force-release)."""

    tag: Literal["dhcp_forget"] = "dhcp_forget"
    ended: list[EndedLease]


class DhcpReloadPlan(Message):
    tag: Literal["dhcp_reload_plan"] = "dhcp_reload_plan"


class DhcpCounters(Message):
    """The DHCP server's counters as they are now (the dashboard)."""

    tag: Literal["dhcp_counters"] = "dhcp_counters"


class RenderMetrics(Message):
    """The node's /metrics text, with the caller's request latency as it is now."""

    tag: Literal["metrics"] = "metrics"
    api_latency: list[LatencyData] = []


Request = Annotated[RateLimit | DhcpForget | DhcpReloadPlan | DhcpCounters | RenderMetrics,
                    Field(discriminator="tag")]


class Call(Message):
    """A child's request of the parent, answered by an ``Answer`` of the same ``id``."""

    tag: Literal["call"] = "call"
    id: int
    request: Request


ToParent = Annotated[Report | Call, Field(discriminator="tag")]


# ------------------------------------------------------------------ the codec


class BadMessage(ValueError):
    """A line that is no message of this side: not JSON, an unknown tag, wrong fields."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


_TO_CHILD: TypeAdapter[Configure | Busy | Push | Answer] = TypeAdapter(ToChild)
_TO_PARENT: TypeAdapter[Report | Call] = TypeAdapter(ToParent)


def encode(message: Message) -> bytes:
    """One line: the record's JSON, its tag included."""
    return message.model_dump_json().encode() + b"\n"


def _decode(adapter: TypeAdapter[Any], line: bytes) -> Any:
    try:
        return adapter.validate_json(line)
    except ValidationError as error:
        first = error.errors()[0]
        reason = {"union_tag_invalid": "unknown tag", "union_tag_not_found": "no tag"}.get(
            first["type"], "invalid" if first["loc"] else "malformed")  # (not a JSON object)
        where = ".".join(str(part) for part in first["loc"]) or "line"
        raise BadMessage(reason, f"{where}: {first['msg']}") from None


def decode_to_child(line: bytes) -> Configure | Busy | Push | Answer:
    result: Configure | Busy | Push | Answer = _decode(_TO_CHILD, line)
    return result


def decode_to_parent(line: bytes) -> Report | Call:
    result: Report | Call = _decode(_TO_PARENT, line)
    return result


# ------------------------------------------------------------------ one side's handlers

M = TypeVar("M", bound=Message)


class Inbox:
    """One side's registry of handlers, by message type. A line that cannot be decoded, or
    whose type has no handler here, is logged and counted, never raised: a broken or newer
    peer does not bring this side down."""

    def __init__(self, peer: str, decode: Callable[[bytes], Message]) -> None:
        self.peer = peer
        self._decode = decode
        self._handlers: dict[type[Message], Callable[[Any], None]] = {}
        self.taken = 0
        self.refused = 0  # lines that were no message, or that no handler here takes

    def on(self, kind: type[M], handler: Callable[[M], None]) -> Inbox:
        self._handlers[kind] = handler
        return self

    def take(self, line: bytes) -> None:
        try:
            message = self._decode(line)
        except BadMessage as error:
            self._refuse(f"a line that is no message ({error}): {line[:200]!r}")
            return
        handler = self._handlers.get(type(message))
        if handler is None:
            self._refuse(f"a {type(message).__name__} message, which this side does not take")
            return
        self.taken += 1
        handler(message)

    def refuse_overlong(self, limit: int) -> None:
        self._refuse(f"a line longer than {limit} bytes")

    def _refuse(self, what: str) -> None:
        self.refused += 1
        # Logged at the 1st, 2nd, 4th, 8th... refusal: a broken peer cannot flood the log.
        if self.refused & (self.refused - 1) == 0:
            log.warning("the %s sent %s (%d refused so far)", self.peer, what, self.refused)
