"""Typed events: what agents do, as one discriminated union.

The CLI renders them, `--json` prints them as JSON lines, and the session journal stores
the ones marked `persist` (the rest, like streamed text, are only for people watching).
Later subsystems (mailbox, tasks, todos) add their own events to this union.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal, Protocol

from pydantic import BaseModel, Field, TypeAdapter

from orchestrator.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage


class _Event(BaseModel, frozen=True):
    persist: ClassVar[bool] = True
    agent: str


class AgentStarted(_Event, frozen=True):
    """A new agent context: its role and the messages it starts from (system, goal)."""

    kind: Literal["agent_started"] = "agent_started"
    role: str
    messages: tuple[Message, ...]


class MessageAdded(_Event, frozen=True):
    """A user or system message appended to an agent's context outside a model reply."""

    kind: Literal["message_added"] = "message_added"
    message: Message


class TurnStarted(_Event, frozen=True):
    kind: Literal["turn_started"] = "turn_started"


class TextStreamed(_Event, frozen=True):
    """A piece of assistant text as it arrives (not journaled: the reply is)."""

    persist: ClassVar[bool] = False
    kind: Literal["text"] = "text"
    text: str


class AssistantReplied(_Event, frozen=True):
    kind: Literal["assistant_replied"] = "assistant_replied"
    message: AssistantMessage
    model: str = ""  # the model that replied, for usage and cost accounting


class ToolCallStarted(_Event, frozen=True):
    kind: Literal["tool_call_started"] = "tool_call_started"
    call: ToolCall
    read_only: bool
    idempotent: bool


class ToolCallFinished(_Event, frozen=True):
    kind: Literal["tool_call_finished"] = "tool_call_finished"
    result: ToolResult


class UsageUpdated(_Event, frozen=True):
    """Tokens of the last model call and the agent's running total."""

    persist: ClassVar[bool] = False
    kind: Literal["usage"] = "usage"
    usage: Usage
    total: Usage


TurnEndReason = Literal["completed", "max_rounds", "cancelled", "failed"]


class TurnEnded(_Event, frozen=True):
    kind: Literal["turn_ended"] = "turn_ended"
    reason: TurnEndReason
    rounds: int
    detail: str = ""


SessionStatus = Literal["running", "completed", "failed", "interrupted"]


class SessionStatusChanged(_Event, frozen=True):
    """The session as a whole started, finished, failed or was stopped by the user."""

    kind: Literal["session_status"] = "session_status"
    status: SessionStatus
    detail: str = ""


class Notice(_Event, frozen=True):
    """Something a person should know that did not stop the work (e.g. a cut torn tail)."""

    persist: ClassVar[bool] = False
    kind: Literal["notice"] = "notice"
    message: str


Event = Annotated[
    AgentStarted
    | MessageAdded
    | TurnStarted
    | TextStreamed
    | AssistantReplied
    | ToolCallStarted
    | ToolCallFinished
    | UsageUpdated
    | TurnEnded
    | SessionStatusChanged
    | Notice,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class EventSink(Protocol):
    """Where events go. `durable=True` asks the sink not to return before the event is
    on disk (the write-ahead rule for side-effecting tool calls)."""

    async def emit(self, event: Event, *, durable: bool = False) -> None: ...


class NullSink:
    async def emit(self, event: Event, *, durable: bool = False) -> None:
        return None


class ListSink:
    """Keeps every event; for tests and for building transcripts."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        self.events.append(event)


class FanOut:
    """Sends each event to several sinks in order (e.g. the journal, then the screen)."""

    def __init__(self, sinks: Sequence[EventSink]) -> None:
        self.sinks = tuple(sinks)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        for sink in self.sinks:
            await sink.emit(event, durable=durable)
