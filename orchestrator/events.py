"""Typed events: what agents do, as one discriminated union; and the records the
journal keeps of them.

The CLI renders events, `--json` prints them as JSON lines, and the session journals each
event's `record()`: most persistent events are their own record, a tool call's start and
result are journaled in a compact form that names the call by its ref, and the rest (like
streamed text) are only for people watching. Later subsystems (mailbox, tasks, todos) add
their own events and records to these unions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import Field, TypeAdapter

from orchestrator.assessment import Assessed, BlockedReported, Verified
from orchestrator.eventbase import EventBase
from orchestrator.mailbox import MessagePosted, MessagesDelivered
from orchestrator.manifest import SessionStatus
from orchestrator.messages import AssistantMessage, Message, ToolCall, ToolResult, ToolStatus, Usage
from orchestrator.tasks import TaskChanged, TaskCreated
from orchestrator.todos import TodosChanged

_Event = EventBase


class AgentStarted(_Event, frozen=True):
    """A new agent context: its role and the messages it starts from (system, goal)."""

    kind: Literal["agent_started"] = "agent_started"
    role: str
    messages: tuple[Message, ...]

    def journal_body(self) -> dict[str, Any]:
        # Messages of any role: their `role` tags must stay.
        return self.model_dump(mode="json", exclude={"kind", "agent"})


class MessageAdded(_Event, frozen=True):
    """A user or system message appended to an agent's context outside a model reply."""

    kind: Literal["message_added"] = "message_added"
    message: Message

    def journal_body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"kind", "agent"})


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
    """A call is about to run (or to be answered with an error, if it will not run).
    `ref` names it uniquely in the session (see context.py)."""

    persist: ClassVar[bool] = False
    kind: Literal["tool_call_started"] = "tool_call_started"
    ref: str
    call: ToolCall
    read_only: bool
    idempotent: bool

    def record(self) -> Record | None:
        # Only a side effect that must not be repeated needs its start on disk: every
        # other call is simply run again after a crash.
        return None if self.idempotent else EffectStarted(agent=self.agent, ref=self.ref)


class ToolCallFinished(_Event, frozen=True):
    persist: ClassVar[bool] = False
    kind: Literal["tool_call_finished"] = "tool_call_finished"
    ref: str
    result: ToolResult
    delivers: tuple[str, ...] = ()  # mailbox messages this result hands over (wait_tasks)

    def record(self) -> Record | None:
        return CallResult(
            agent=self.agent,
            ref=self.ref,
            status=self.result.status,
            content=self.result.content,
            delivers=self.delivers,
        )


class EffectStarted(_Event, frozen=True):
    """Record: the call `ref`, whose tool is not idempotent, started running."""

    kind: Literal["call_started"] = "call_started"
    ref: str


class CallResult(_Event, frozen=True):
    """Record: the result of the call `ref` (its id and tool name are in the reply)."""

    kind: Literal["call_result"] = "call_result"
    ref: str
    status: ToolStatus = "ok"
    content: str = ""
    # Mailbox messages whose delivery this result is (their text is in `content`).
    delivers: tuple[str, ...] = ()


class PermissionGranted(_Event, frozen=True):
    """Record: the person allowed `tool` (for the shell, commands matching `pattern`)
    for the rest of the session; a resume keeps it."""

    kind: Literal["permission_granted"] = "permission_granted"
    tool: str
    pattern: str = ""


class UsageUpdated(_Event, frozen=True):
    """Tokens of the last model call and the agent's running total."""

    persist: ClassVar[bool] = False
    kind: Literal["usage"] = "usage"
    usage: Usage
    total: Usage


TurnEndReason = Literal["completed", "yielded", "max_rounds", "cancelled", "failed"]
"""`completed`: the model answered without calling a tool; `yielded`: a tool ended the
turn (a subagent's `complete` or `ask_decision`, say); the rest say why it was cut."""


class TurnEnded(_Event, frozen=True):
    kind: Literal["turn_ended"] = "turn_ended"
    reason: TurnEndReason
    rounds: int
    detail: str = ""


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
    | PermissionGranted
    | UsageUpdated
    | TurnEnded
    | SessionStatusChanged
    | Notice
    | TaskCreated
    | TaskChanged
    | MessagePosted
    | MessagesDelivered
    | TodosChanged
    | Assessed
    | Verified
    | BlockedReported,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

Record = Annotated[
    AgentStarted
    | MessageAdded
    | TurnStarted
    | AssistantReplied
    | EffectStarted
    | CallResult
    | PermissionGranted
    | TurnEnded
    | SessionStatusChanged
    | TaskCreated
    | TaskChanged
    | MessagePosted
    | MessagesDelivered
    | TodosChanged
    | Assessed
    | Verified
    | BlockedReported,
    Field(discriminator="kind"),
]
"""What the journal holds: one record per line, validated straight from the line's bytes
(the frame's `seq`, `t`, `more` and `crc` are ignored)."""

RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)


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
